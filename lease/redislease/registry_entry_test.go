package redislease

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
)

// entryJSON is rec as encoding/json writes it.
func entryJSON(t testing.TB, rec replicaRecord) string {
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	return string(raw)
}

// someEntry is an entry of n jobs.
func someEntry(n int, offsetMs int64) replicaRecord {
	rec := replicaRecord{ID: "replica-7f3a", Version: "v0.9.0", StartedAt: 1764130000123, RefreshMs: 5000, OffsetMs: offsetMs}
	for i := range n {
		name := fmt.Sprintf("report-%04d", i)
		rec.Jobs = append(rec.Jobs, jobRecord{Name: name, Key: "cronguard:" + name, Schedule: "every 1m0s",
			Spec: "every:60000000000+0", Fingerprint: "q0Jx1cM2Zb3vU8aW"})
	}
	return rec
}

func TestDecodeEntry_TheWrittenFormTakesTheFastPath(t *testing.T) {
	for _, rec := range []replicaRecord{someEntry(3, 0), someEntry(3, -412), someEntry(0, 17), {ID: "r", Jobs: []jobRecord{}}} {
		raw := entryJSON(t, rec)
		got, jobs, ok := decodeEntryFast(raw)
		require.True(t, ok, "an entry as written: %s", raw)
		want, wantJobs, err := decodeEntryJSON(raw)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, len(wantJobs), len(jobs))
		if len(wantJobs) > 0 {
			assert.Equal(t, wantJobs, jobs)
		}
	}
}

func TestDecodeEntry_OtherFormsGoToEncodingJSON(t *testing.T) {
	written := entryJSON(t, someEntry(2, 5))
	for name, raw := range map[string]string{
		"an escaped name":           entryJSON(t, replicaRecord{ID: "r", Jobs: []jobRecord{{Name: "a&b <c>", Key: "k\"q"}}}),
		"whitespace":                "{\"id\": \"r\", \"version\": \"v\", \"startedAt\": 1, \"refreshMs\": 2, \"jobs\": null}",
		"another field order":       `{"version":"v","id":"r","startedAt":1,"refreshMs":2,"jobs":null}`,
		"a field it does not know":  written[:len(written)-1] + `,"zone":"eu"}`,
		"an older entry, no offset": `{"id":"r","version":"v","startedAt":1,"refreshMs":2,"jobs":[]}`,
		"a float":                   `{"id":"r","version":"v","startedAt":1.0,"refreshMs":2,"jobs":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, jobs, err := decodeEntry(raw)
			want, wantJobs, werr := decodeEntryJSON(raw)
			if werr != nil {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, wantJobs, jobs)
		})
	}
	_, _, err := decodeEntry(`{"id":"r","jobs":[{"name":}]}`)
	assert.Error(t, err, "text that is not JSON is refused")
}

// FuzzDecodeEntry holds decodeEntry to encoding/json on any text: the
// fast path, when it takes the text, decodes it as encoding/json does, and
// decodeEntry fails exactly when encoding/json does.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(entryJSON(f, someEntry(2, 0)))
	f.Add(entryJSON(f, someEntry(1, -3)))
	f.Add(entryJSON(f, replicaRecord{ID: "é\u2028", Jobs: []jobRecord{{Name: "<&>"}}}))
	f.Add(`{"id":"r","version":"v","startedAt":-0,"refreshMs":012,"jobs":null}`)
	f.Add(`{"id":"r","version":"v","startedAt":99999999999999999999,"refreshMs":2,"jobs":null}`)
	f.Add(`{"id":"r","version":"v","startedAt":1,"refreshMs":2,"jobs":null,"clockOffsetMs":0}`)
	f.Add("{\"id\":\"\xff\",\"version\":\"v\",\"startedAt\":1,\"refreshMs\":2,\"jobs\":null}")
	f.Fuzz(func(t *testing.T, raw string) {
		want, wantJobs, werr := decodeEntryJSON(raw)
		if rec, jobs, ok := decodeEntryFast(raw); ok {
			require.NoError(t, werr, "the fast path took text encoding/json refuses")
			require.Equal(t, want, rec)
			require.Equal(t, len(wantJobs), len(jobs))
			for i := range jobs {
				require.Equal(t, wantJobs[i], jobs[i])
			}
		}
		rec, jobs, err := decodeEntry(raw)
		if werr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, rec)
		require.Equal(t, len(wantJobs), len(jobs))
	})
}

// BenchmarkDecodeEntry compares the fast path with encoding/json on an
// entry of 1,000 jobs.
func BenchmarkDecodeEntry(b *testing.B) {
	raw := entryJSON(b, someEntry(1000, 12))
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok := decodeEntryFast(raw); !ok {
				b.Fatal("not the fast form")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := decodeEntryJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzEncodeEntry holds encodeEntry to encoding/json: the same bytes as
// json.Marshal of the replicaRecord, whatever the strings hold.
func FuzzEncodeEntry(f *testing.F) {
	f.Add("replica-1", "v1", "job:a", "every 1m0s", "q0Jx", int64(1764130000123), int64(5000), int64(-12), 2, true)
	f.Add("r\xff", "<&>", "\u2028\"", "\t", "", int64(-1), int64(0), int64(0), 0, false)
	f.Fuzz(func(t *testing.T, id, version, name, schedule, fp string, startedMs, refreshMs, offsetMs int64, jobs int, reads bool) {
		r := fleet.Replica{ID: id, Version: version, Started: time.UnixMilli(startedMs),
			Refresh: time.Duration(refreshMs) * time.Millisecond, ClockOffset: time.Duration(offsetMs) * time.Millisecond, ReadsIndex: reads}
		rec := replicaRecord{ID: id, Version: version, StartedAt: startedMs, RefreshMs: refreshMs, OffsetMs: offsetMs, Reads: reads}
		for i := range jobs % 4 {
			j := fleet.Job{Name: name + strconv.Itoa(i), Key: "job:" + name, Schedule: schedule, Spec: schedule + fp, Fingerprint: fp}
			r.Jobs = append(r.Jobs, j)
			rec.Jobs = append(rec.Jobs, jobRecord(j))
		}
		if time.Duration(refreshMs)*time.Millisecond/time.Millisecond != time.Duration(refreshMs) ||
			time.Duration(offsetMs)*time.Millisecond/time.Millisecond != time.Duration(offsetMs) ||
			time.UnixMilli(startedMs).UnixMilli() != startedMs {
			return // not a value a Replica holds
		}
		list := encodeJobs(r.Jobs)
		wantList, err := json.Marshal(rec.Jobs)
		require.NoError(t, err)
		require.Equal(t, string(wantList), list)
		digest := ""
		if len(r.Jobs) > 0 {
			digest = jobListDigest(list)
		}
		rec.Jobs, rec.JobList = nil, digest
		require.Equal(t, entryJSON(t, rec), encodeEntry(r, digest))
	})
}

func TestJobListDigest_NamesTheContent(t *testing.T) {
	a := encodeJobs([]fleet.Job{{Name: "a", Key: "cronguard:a", Schedule: "every 1m0s", Spec: "every:60000000000+0", Fingerprint: "f"}})
	b := encodeJobs([]fleet.Job{{Name: "a", Key: "cronguard:a", Schedule: "every 1m0s", Spec: "every:60000000000+0", Fingerprint: "g"}})
	assert.Equal(t, jobListDigest(a), jobListDigest(strings.Clone(a)), "the same list, the same name")
	assert.NotEqual(t, jobListDigest(a), jobListDigest(b), "another fingerprint, another list")
	assert.Len(t, jobListDigest(a), 22)
	assert.Regexp(t, `^[A-Za-z0-9_-]{22}$`, jobListDigest(a), "a digest is safe in a key")
	assert.True(t, isJobListDigest(jobListDigest(a)))
	for _, d := range []string{"", "q0Jx1cM2Zb3vU8aWq0Jx1", "q0Jx1cM2Zb3vU8aWq0Jx1cc", "q0Jx1cM2Zb3vU8aWq0Jx1}", "q0Jx1cM2Zb3vU8aWq0Jx1="} {
		assert.False(t, isJobListDigest(d), "%q is not a digest", d)
	}
}

func TestDecodeJobs_TheWrittenFormTakesTheFastPath(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		rec := someEntry(n, 0)
		jobs := make([]fleet.Job, 0, n)
		for _, j := range rec.Jobs {
			jobs = append(jobs, fleet.Job(j))
		}
		raw := encodeJobs(jobs)
		p := entryParser{s: raw}
		_, ok := p.jobs()
		require.True(t, ok && p.i == len(raw), "a list as written: %s", raw)
		got, err := decodeJobs(raw)
		require.NoError(t, err)
		assert.Equal(t, len(jobs), len(got))
		if n > 0 {
			assert.Equal(t, jobs, got)
		}
	}
	got, err := decodeJobs(`[ {"fingerprint":"f","name":"a\u0026b"} ]`)
	require.NoError(t, err, "another form goes to encoding/json")
	assert.Equal(t, []fleet.Job{{Name: "a&b", Fingerprint: "f"}}, got)
	_, err = decodeJobs(`[{"name":}]`)
	assert.Error(t, err, "text that is not JSON is refused")
	_, err = decodeJobs(`[{"name":"a"}] x`)
	assert.Error(t, err, "trailing text is refused")
}

// FuzzDecodeJobs holds decodeJobs to encoding/json on any text.
func FuzzDecodeJobs(f *testing.F) {
	f.Add(encodeJobs([]fleet.Job{{Name: "a", Key: "k", Schedule: "s", Spec: "p", Fingerprint: "f"}}))
	f.Add("null")
	f.Add(`[{"name":"a","key":"k","schedule":"s","spec":"p","fingerprint":"f"},]`)
	f.Add("[{\"name\":\"\xff\"}]")
	f.Fuzz(func(t *testing.T, raw string) {
		var recs []jobRecord
		werr := json.Unmarshal([]byte(raw), &recs)
		jobs, err := decodeJobs(raw)
		if werr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, len(recs), len(jobs))
		for i := range jobs {
			require.Equal(t, fleet.Job(recs[i]), jobs[i])
		}
	})
}

func TestEncodeEntry_NoJobsIsNull(t *testing.T) {
	for _, jobs := range [][]fleet.Job{nil, {}} {
		assert.Equal(t, "null", encodeJobs(jobs))
		raw := encodeEntry(fleet.Replica{ID: "r", Jobs: jobs}, "")
		assert.Contains(t, raw, `"jobs":null`)
		assert.NotContains(t, raw, "jobList")
		assert.Equal(t, entryJSON(t, replicaRecord{ID: "r", StartedAt: time.Time{}.UnixMilli()}), raw)
	}
}

func TestDecodeEntry_AnEntryNamingItsJobList(t *testing.T) {
	r := fleet.Replica{ID: "replica-1", Version: "v1", Started: time.UnixMilli(1764130000123), Refresh: 5 * time.Second,
		ClockOffset: -7 * time.Millisecond, ReadsIndex: true, Jobs: []fleet.Job{{Name: "a"}}}
	raw := encodeEntry(r, "q0Jx1cM2Zb3vU8aWq0Jx1c")
	rec, jobs, ok := decodeEntryFast(raw)
	require.True(t, ok, raw)
	assert.Empty(t, jobs, "the jobs are in the list, not in the entry")
	assert.Equal(t, replicaRecord{ID: "replica-1", Version: "v1", StartedAt: 1764130000123, RefreshMs: 5000,
		JobList: "q0Jx1cM2Zb3vU8aWq0Jx1c", OffsetMs: -7, Reads: true}, rec)
	_, _, ok = decodeEntryFast(`{"id":"r","version":"v","startedAt":1,"refreshMs":2,"jobs":null,"jobList":""}`)
	assert.False(t, ok, "an empty digest is not the written form (omitempty)")
	_, _, ok = decodeEntryFast(`{"id":"r","version":"v","startedAt":1,"refreshMs":2,"jobs":null,"readsIndex":false}`)
	assert.False(t, ok, "false is not the written form (omitempty)")
	rec, _, err := decodeEntry(`{"id":"r","version":"v","startedAt":1,"refreshMs":2,"jobs":null,"readsIndex":false}`)
	require.NoError(t, err, "encoding/json reads what the fast form does not")
	assert.False(t, rec.Reads)
}

// BenchmarkEncodeEntry compares encodeEntry with encoding/json (as
// PublishReplica encoded before) on an entry of 1,000 jobs.
func BenchmarkEncodeEntry(b *testing.B) {
	rec := someEntry(1000, 12)
	r := fleet.Replica{ID: rec.ID, Version: rec.Version, Started: time.UnixMilli(rec.StartedAt),
		Refresh: time.Duration(rec.RefreshMs) * time.Millisecond, ClockOffset: 12 * time.Millisecond}
	for _, j := range rec.Jobs {
		r.Jobs = append(r.Jobs, fleet.Job(j))
	}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = encodeEntry(r, jobListDigest(encodeJobs(r.Jobs)))
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := replicaRecord{ID: r.ID, Version: r.Version, StartedAt: r.Started.UnixMilli(), RefreshMs: r.Refresh.Milliseconds(),
				OffsetMs: r.ClockOffset.Milliseconds()}
			for _, j := range r.Jobs {
				out.Jobs = append(out.Jobs, jobRecord(j))
			}
			raw, err := json.Marshal(out)
			if err != nil {
				b.Fatal(err)
			}
			_ = string(raw)
		}
	})
}
