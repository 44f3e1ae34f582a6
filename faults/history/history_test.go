package history

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestWriter_Write_RoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r1.jsonl")
	w, err := Create(path, "r1")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, w.Write(Event{Kind: Acquire, Job: "j", Fence: uint64(i + 1)}))
		}()
	}
	wg.Wait()
	require.NoError(t, w.Close())
	require.Error(t, w.Write(Event{Kind: Boot}), "write after close")

	evs, err := ReadFile(path)
	require.NoError(t, err)
	require.Len(t, evs, 50)
	seen := map[uint64]bool{}
	for _, e := range evs {
		assert.Equal(t, "r1", e.Replica)
		assert.Equal(t, os.Getpid(), e.PID)
		assert.NotZero(t, e.Mono)
		assert.NotZero(t, e.Wall)
		seen[e.Fence] = true
	}
	assert.Len(t, seen, 50)
}

func TestReadFile_TornLastLine_Dropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"mono":1,"wall":1,"kind":"boot"}`+"\n"+`{"mono":2,"wa`), 0o644))
	evs, err := ReadFile(path)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, Boot, evs[0].Kind)
}

func TestReadFile_MalformedLine_Error(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("{oops}\n"+`{"mono":1,"kind":"boot"}`+"\n"), 0o644))
	_, err := ReadFile(path)
	require.ErrorContains(t, err, ":1:")
}

func TestReadDir_MergesByMono(t *testing.T) {
	dir := t.TempDir()
	for name, monos := range map[string][]int64{"a": {1, 4}, "b": {2, 3}} {
		w, err := Create(filepath.Join(dir, name+".jsonl"), name)
		require.NoError(t, err)
		for _, m := range monos {
			require.NoError(t, w.Write(Event{Mono: m, Kind: Boot}))
		}
		require.NoError(t, w.Close())
	}
	evs, err := ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, evs, 4)
	for i, e := range evs {
		assert.Equal(t, int64(i+1), e.Mono)
	}
	assert.Equal(t, []string{"a", "b", "b", "a"}, []string{evs[0].Replica, evs[1].Replica, evs[2].Replica, evs[3].Replica})
}

func TestMono_Increases(t *testing.T) {
	a := Mono()
	b := Mono()
	assert.LessOrEqual(t, a, b)
	assert.Positive(t, a)
}

func TestSaveWrites_LoadWrites_RoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), WritesFile)
	ws := []Write{
		{ID: 1, Replica: "r1", Job: "ticker", Occurrence: 1795350321000, Fence: 23, Lease: "…Zr906b"},
		{ID: 2, Replica: "r2", Job: "ticker", Occurrence: 1795350321500, Fence: 1<<63 - 1, Lease: "…DqTKG7"},
	}
	require.NoError(t, SaveWrites(path, ws))
	got, err := LoadWrites(path)
	require.NoError(t, err)
	assert.Equal(t, ws, got)

	require.NoError(t, SaveWrites(path, nil))
	got, err = LoadWrites(path)
	require.NoError(t, err)
	assert.Empty(t, got)

	evs, err := ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Empty(t, evs, "the writes file is not read as a history")
}

func TestLoadWrites_Malformed_ErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), WritesFile)
	require.NoError(t, os.WriteFile(path, []byte(`[{"id":"one"}]`), 0o644))
	_, err := LoadWrites(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
}

func TestWriter_Write_DataLostKeepsTheCopyBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "harness.jsonl")
	w, err := Create(path, "harness")
	require.NoError(t, err)
	in := Event{Kind: DataLost, Fault: FaultRedisRollback, CopyStart: 1795367197146056586, CopyEnd: 1795367197147410494}
	require.NoError(t, w.Write(in))
	require.NoError(t, w.Write(Event{Kind: DataLost, Fault: FaultRedisWipe}))
	require.NoError(t, w.Close())
	evs, err := ReadFile(path)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, in.CopyStart, evs[0].CopyStart)
	assert.Equal(t, in.CopyEnd, evs[0].CopyEnd)
	assert.Zero(t, evs[1].CopyStart, "a wipe has no copy")
	assert.NotZero(t, evs[1].Wall, "the instant the data was replaced")
}

func TestWriter_Write_CompletionFieldsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r1.jsonl")
	w, err := Create(path, "r1")
	require.NoError(t, err)
	in := []Event{
		{Kind: Acquire, Job: "nightly", Occurrence: 10000, Attempt: 2, Superseded: 0},
		{Kind: Acquire, Job: "nightly", Occurrence: 20000, Attempt: 1, Superseded: 10000},
		{Kind: AcquireError, Job: "nightly", Occurrence: 10000, Reason: AcquireGivenUp, First: true},
		{Kind: Release, Job: "nightly", Occurrence: 10000, Close: CloseOpen},
		{Kind: Interrupted, Job: "nightly", Occurrence: 10000, Attempt: 2, Cause: CauseShutdown},
		{Kind: GivenUp, Job: "nightly", Occurrence: 10000, Attempt: 3},
		{Kind: RunStart, Job: "ticker", Occurrence: 500},
	}
	for _, e := range in {
		require.NoError(t, w.Write(e))
	}
	require.NoError(t, w.Close())
	evs, err := ReadFile(path)
	require.NoError(t, err)
	require.Len(t, evs, len(in))
	for i, e := range evs {
		assert.Equal(t, in[i].Kind, e.Kind)
		assert.Equal(t, in[i].Attempt, e.Attempt, "event %d", i)
		assert.Equal(t, in[i].Superseded, e.Superseded, "event %d", i)
		assert.Equal(t, in[i].First, e.First, "event %d", i)
		assert.Equal(t, in[i].Close, e.Close, "event %d", i)
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, strings.Split(string(raw), "\n")[6], "attempt", "an unrecorded attempt is omitted")
}
