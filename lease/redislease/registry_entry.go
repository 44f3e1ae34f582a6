package redislease

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cronguard/cronguard/fleet"
)

// A registry entry is a replicaRecord in JSON, as json.Marshal writes it
// (its fields in order, no whitespace). Its jobs are not in it: they are a
// job list, the []jobRecord in JSON, stored once under a key named by its
// digest (fleetKeys.jobList), and the entry names that digest (jobList).
// Replicas of one build register the same jobs, so a fleet of R replicas
// stores one list, not R, and a read of the registry fetches and decodes
// each distinct list once: at 50 replicas of 1,000 jobs, one list of
// 1,000 jobs instead of 50,000 jobs, at every change of the fleet. Entries
// written by earlier versions hold their jobs inline (jobs); they are
// read as before.
//
// Reading the registry decodes every distinct list, and with
// encoding/json that was most of a replica's CPU while a fleet started.
// So encodeEntry and encodeJobs write the form json.Marshal gives, and
// decodeEntry and decodeJobs read it by hand; they hand anything else to
// encoding/json (an entry from another version, or a name that needed an
// escape). The job fields they return are substrings of the text, which
// allocates nothing per job; they keep the text alive while referenced,
// so the replica-level fields, which a scheduler's fleet view keeps, are
// copies.

// encodeEntry returns r's entry without its jobs, naming the job list
// jobList ("" when r has none), as json.Marshal gives the replicaRecord.
func encodeEntry(r fleet.Replica, jobList string) string {
	var b strings.Builder
	b.Grow(160 + len(r.ID) + len(r.Version) + len(jobList))
	b.WriteString(`{"id":`)
	writeJSONString(&b, r.ID)
	b.WriteString(`,"version":`)
	writeJSONString(&b, r.Version)
	b.WriteString(`,"startedAt":`)
	b.WriteString(strconv.FormatInt(r.Started.UnixMilli(), 10))
	b.WriteString(`,"refreshMs":`)
	b.WriteString(strconv.FormatInt(r.Refresh.Milliseconds(), 10))
	b.WriteString(`,"jobs":null`)
	if jobList != "" {
		b.WriteString(`,"jobList":`)
		writeJSONString(&b, jobList)
	}
	if off := r.ClockOffset.Milliseconds(); off != 0 {
		b.WriteString(`,"clockOffsetMs":`)
		b.WriteString(strconv.FormatInt(off, 10))
	}
	if r.ReadsIndex {
		b.WriteString(`,"readsIndex":true`)
	}
	b.WriteByte('}')
	return b.String()
}

// encodeJobs returns jobs as json.Marshal gives their []jobRecord ("null"
// for none), written in one buffer of about its size: at 10,000 jobs the
// reflective encoding grew a buffer to 4 MB and copied the jobs twice on
// the way, at the moment a replica starts.
func encodeJobs(jobs []fleet.Job) string {
	if len(jobs) == 0 {
		return "null"
	}
	n := 2
	for _, j := range jobs {
		n += 80 + len(j.Name) + len(j.Key) + len(j.Schedule) + len(j.Spec) + len(j.Fingerprint)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		writeJSONString(&b, j.Name)
		b.WriteString(`,"key":`)
		writeJSONString(&b, j.Key)
		b.WriteString(`,"schedule":`)
		writeJSONString(&b, j.Schedule)
		b.WriteString(`,"spec":`)
		writeJSONString(&b, j.Spec)
		b.WriteString(`,"fingerprint":`)
		writeJSONString(&b, j.Fingerprint)
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}

// jobListDigest names a job list by its content: the first 16 bytes of
// its SHA-256, in unpadded base64url (22 characters). Replicas that
// register the same jobs name the same list.
func jobListDigest(list string) string {
	sum := sha256.Sum256([]byte(list))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// isJobListDigest reports whether d is a name jobListDigest gives: 22
// characters of unpadded base64url.
func isJobListDigest(d string) bool {
	if len(d) != 22 {
		return false
	}
	for i := 0; i < len(d); i++ {
		switch c := d[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// decodeEntry decodes a registry entry, as its fast form or, failing
// that, with encoding/json. jobs are the entry's inline jobs (an entry of
// an earlier version); rec.JobList names the list of a current one.
func decodeEntry(raw string) (rec replicaRecord, jobs []fleet.Job, err error) {
	if rec, jobs, ok := decodeEntryFast(raw); ok {
		return rec, jobs, nil
	}
	return decodeEntryJSON(raw)
}

// decodeEntryJSON decodes a registry entry with encoding/json.
func decodeEntryJSON(raw string) (replicaRecord, []fleet.Job, error) {
	var rec replicaRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return replicaRecord{}, nil, err
	}
	jobs := make([]fleet.Job, len(rec.Jobs))
	for i, j := range rec.Jobs {
		jobs[i] = fleet.Job(j)
	}
	rec.Jobs = nil
	return rec, jobs, nil
}

// decodeEntryFast reads the form json.Marshal gives a replicaRecord; ok
// is false for any other text, valid JSON or not.
func decodeEntryFast(raw string) (rec replicaRecord, jobs []fleet.Job, ok bool) {
	p := entryParser{s: raw}
	if !p.lit(`{"id":`) || !p.str(&rec.ID) || !p.lit(`,"version":`) || !p.str(&rec.Version) ||
		!p.lit(`,"startedAt":`) || !p.int(&rec.StartedAt) || !p.lit(`,"refreshMs":`) || !p.int(&rec.RefreshMs) ||
		!p.lit(`,"jobs":`) {
		return replicaRecord{}, nil, false
	}
	if jobs, ok = p.jobs(); !ok {
		return replicaRecord{}, nil, false
	}
	if p.lit(`,"jobList":`) && (!p.str(&rec.JobList) || rec.JobList == "") { // omitempty: never ""
		return replicaRecord{}, nil, false
	}
	if p.lit(`,"clockOffsetMs":`) && (!p.int(&rec.OffsetMs) || rec.OffsetMs == 0) { // omitempty: never 0
		return replicaRecord{}, nil, false
	}
	rec.Reads = p.lit(`,"readsIndex":true`) // omitempty: never false
	if !p.lit("}") || p.i != len(raw) {
		return replicaRecord{}, nil, false
	}
	rec.ID, rec.Version, rec.JobList = strings.Clone(rec.ID), strings.Clone(rec.Version), strings.Clone(rec.JobList)
	return rec, jobs, true
}

// decodeJobs decodes a job list, as its fast form or, failing that, with
// encoding/json.
func decodeJobs(raw string) ([]fleet.Job, error) {
	p := entryParser{s: raw}
	if jobs, ok := p.jobs(); ok && p.i == len(raw) {
		return jobs, nil
	}
	var recs []jobRecord
	if err := json.Unmarshal([]byte(raw), &recs); err != nil {
		return nil, err
	}
	jobs := make([]fleet.Job, len(recs))
	for i, j := range recs {
		jobs[i] = fleet.Job(j)
	}
	return jobs, nil
}

// jobs consumes a job list in the form json.Marshal gives a []jobRecord:
// null (no jobs), or an array of jobs.
func (p *entryParser) jobs() (jobs []fleet.Job, ok bool) {
	if p.lit("null") {
		return nil, true
	}
	if !p.lit("[") {
		return nil, false
	}
	jobs = make([]fleet.Job, 0, strings.Count(p.s[p.i:], `{"name":`))
	for first := true; !p.lit("]"); first = false {
		if !first && !p.lit(",") {
			return nil, false
		}
		var j fleet.Job
		if !p.lit(`{"name":`) || !p.str(&j.Name) || !p.lit(`,"key":`) || !p.str(&j.Key) ||
			!p.lit(`,"schedule":`) || !p.str(&j.Schedule) || !p.lit(`,"spec":`) || !p.str(&j.Spec) ||
			!p.lit(`,"fingerprint":`) || !p.str(&j.Fingerprint) || !p.lit("}") {
			return nil, false
		}
		jobs = append(jobs, j)
	}
	return jobs, true
}

// entryParser reads s from i on.
type entryParser struct {
	s string
	i int
}

// lit consumes t if the text goes on with it.
func (p *entryParser) lit(t string) bool {
	if !strings.HasPrefix(p.s[p.i:], t) {
		return false
	}
	p.i += len(t)
	return true
}

// str consumes a string without escapes or control characters, in valid
// UTF-8 (encoding/json would replace invalid bytes), into *out.
func (p *entryParser) str(out *string) bool {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return false
	}
	start := p.i + 1
	for k := start; k < len(p.s); k++ {
		switch c := p.s[k]; {
		case c == '"':
			v := p.s[start:k]
			if !utf8.ValidString(v) {
				return false
			}
			*out, p.i = v, k+1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

// int consumes an integer in JSON's form that fits an int64 without
// question (at most 18 digits) into *out.
func (p *entryParser) int(out *int64) bool {
	k := p.i
	neg := k < len(p.s) && p.s[k] == '-'
	if neg {
		k++
	}
	start := k
	var v int64
	for k < len(p.s) && p.s[k] >= '0' && p.s[k] <= '9' && k-start < 18 {
		v = v*10 + int64(p.s[k]-'0')
		k++
	}
	switch {
	case k == start, k < len(p.s) && p.s[k] >= '0' && p.s[k] <= '9': // none, or too many
		return false
	case p.s[start] == '0' && k-start > 1: // a leading zero: not JSON
		return false
	case k < len(p.s) && (p.s[k] == '.' || p.s[k] == 'e' || p.s[k] == 'E'): // a fraction or exponent
		return false
	}
	if neg {
		v = -v
	}
	*out, p.i = v, k
	return true
}
