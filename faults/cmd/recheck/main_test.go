package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestRecheck_Completion: a kept run's interrupted, resumed and given up
// attempts of the nightly job are counted, and an occurrence left open
// long before the end is a violation of (7).
func TestRecheck_Completion(t *testing.T) {
	tests := []struct {
		name     string
		givenUp  bool
		want     int
		wantLine string
	}{
		{"given up after its last attempt", true, 0, "    given up                   1"},
		{"left open", false, 1, "(7) nightly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := keptRun(t, nil)
			h, err := history.Create(filepath.Join(dir, "r1.jsonl"), "r1")
			require.NoError(t, err)
			const s = int64(time.Second)
			e := func(kind history.Kind, at int64, fence uint64, attempt int) history.Event {
				return history.Event{Kind: kind, Mono: at, Wall: at, Job: "nightly", Occurrence: 10000, Fence: fence, Attempt: attempt}
			}
			acq := func(at int64, fence uint64, attempt int) history.Event {
				a := e(history.Acquire, at+1, fence, attempt)
				a.Sent, a.AcquiredAt, a.ExpiresAt = at, at/1e6, at/1e6+2000
				return a
			}
			rel := func(at int64, fence uint64, close string) history.Event {
				r := e(history.Release, at+1, fence, 0)
				r.Sent, r.SentWall, r.Close = at, at, close
				return r
			}
			// Ready just before the shutdown: (4) checks no occurrence.
			evs := []history.Event{
				{Kind: history.Ready, Mono: 59*s + s/2, Wall: 59*s + s/2},
				acq(10*s, 1, 1), e(history.RunStart, 10*s+2, 1, 1), e(history.Interrupted, 11*s, 1, 1),
				e(history.RunEnd, 11*s+1, 1, 0), rel(11*s+2, 1, history.CloseOpen),
				acq(12*s, 2, 2), e(history.RunStart, 12*s+2, 2, 2), e(history.RunEnd, 13*s, 2, 0),
			}
			evs[4].Err, evs[len(evs)-1].Err = "scheduler: shutting down", "boom"
			if tt.givenUp {
				evs = append(evs, rel(13*s+1, 2, history.CloseGivenUp), e(history.GivenUp, 13*s+3, 0, 2))
			} else {
				evs = append(evs, rel(13*s+1, 2, history.CloseOpen))
			}
			evs = append(evs, history.Event{Kind: history.Shutdown, Mono: 60 * s, Wall: 60 * s})
			for _, ev := range evs {
				require.NoError(t, h.Write(ev))
			}
			require.NoError(t, h.Close())
			var out bytes.Buffer
			n, err := recheck(dir, &out, true)
			require.NoError(t, err)
			assert.Equal(t, tt.want, n, out.String())
			assert.Contains(t, out.String(), "attempts interrupted         1")
			assert.Contains(t, out.String(), "attempts resumed             1")
			assert.Contains(t, out.String(), tt.wantLine)
		})
	}
}
