package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/faults/history"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// keptRun writes a harness history and writes.json holding ws to a new
// directory, as TestFaults keeps them.
func keptRun(t *testing.T, ws []history.Write) string {
	t.Helper()
	dir := t.TempDir()
	h, err := history.Create(filepath.Join(dir, "harness.jsonl"), "harness")
	require.NoError(t, err)
	require.NoError(t, h.Write(history.Event{Kind: history.HarnessStart, Seed: 1}))
	require.NoError(t, h.Write(history.Event{Kind: history.HarnessEnd}))
	require.NoError(t, h.Close())
	require.NoError(t, history.SaveWrites(filepath.Join(dir, history.WritesFile), ws))
	return dir
}

func TestRecheck_CleanRun_NoViolations(t *testing.T) {
	dir := keptRun(t, []history.Write{
		{ID: 1, Replica: "r1", Job: "ticker", Occurrence: 1000, Fence: 1, Lease: "…a"},
		{ID: 2, Replica: "r2", Job: "ticker", Occurrence: 1500, Fence: 2, Lease: "…b"},
	})
	var out bytes.Buffer
	n, err := recheck(dir, &out)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Contains(t, out.String(), "writes accepted              2")
	assert.Contains(t, out.String(), "violations                   0")
}

func TestRecheck_LowerTokenAfterHigher_Violation(t *testing.T) {
	dir := keptRun(t, []history.Write{
		{ID: 1, Replica: "r1", Job: "ticker", Occurrence: 1000, Fence: 5, Lease: "…a"},
		{ID: 2, Replica: "r2", Job: "ticker", Occurrence: 1500, Fence: 3, Lease: "…b"},
	})
	var out bytes.Buffer
	n, err := recheck(dir, &out)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Contains(t, out.String(), "(1)")
}

func TestRecheck_NoHistory_Error(t *testing.T) {
	_, err := recheck(t.TempDir(), new(bytes.Buffer))
	require.ErrorContains(t, err, "holds no history")
}

func TestRecheck_NoWritesFile_ErrorSaysWhy(t *testing.T) {
	dir := keptRun(t, nil)
	require.NoError(t, os.Remove(filepath.Join(dir, history.WritesFile)))
	_, err := recheck(dir, new(bytes.Buffer))
	require.ErrorContains(t, err, history.WritesFile)
}
