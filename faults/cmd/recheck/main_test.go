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

// TestRecheck_CountsViolations: the writes of a kept run are checked
// again; a lower token accepted after a higher one is violation (1).
func TestRecheck_CountsViolations(t *testing.T) {
	tests := []struct {
		name         string
		second       uint64 // the fence of the second accepted write; the first has 5
		want         int
		wantInReport string
	}{
		{"higher token after lower", 6, 0, "violations                   0"},
		{"lower token after higher", 3, 1, "(1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := keptRun(t, []history.Write{
				{ID: 1, Replica: "r1", Job: "ticker", Occurrence: 1000, Fence: 5, Lease: "…a"},
				{ID: 2, Replica: "r2", Job: "ticker", Occurrence: 1500, Fence: tt.second, Lease: "…b"},
			})
			var out bytes.Buffer
			n, err := recheck(dir, &out, false)
			require.NoError(t, err)
			assert.Equal(t, tt.want, n)
			assert.Contains(t, out.String(), "writes accepted              2")
			assert.Contains(t, out.String(), tt.wantInReport)
		})
	}
}

func TestRecheck_NoHistory_Error(t *testing.T) {
	_, err := recheck(t.TempDir(), new(bytes.Buffer), false)
	require.ErrorContains(t, err, "holds no history")
}

func TestRecheck_NoWritesFile_ErrorSaysWhy(t *testing.T) {
	dir := keptRun(t, nil)
	require.NoError(t, os.Remove(filepath.Join(dir, history.WritesFile)))
	_, err := recheck(dir, new(bytes.Buffer), false)
	require.ErrorContains(t, err, history.WritesFile)
}
