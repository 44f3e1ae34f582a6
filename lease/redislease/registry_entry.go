package redislease

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cronguard/cronguard/fleet"
)

// A registry entry is a replicaRecord in JSON, as json.Marshal writes it
// (its fields in order, no whitespace). Reading the registry decodes every
// live replica's entry, each with every job it has: at 20 replicas of
// 1,000 jobs, 20,000 jobs per read, and every replica reads at each change
// of the fleet. With encoding/json that was most of a replica's CPU while
// a fleet started. So encodeEntry writes that form and decodeEntry reads
// it by hand; decodeEntry hands anything else to encoding/json (an entry
// from another version, or a name that needed an escape). The job fields
// decodeEntry returns are substrings of the entry, which allocates nothing
// per job; they keep the entry's text alive while referenced, so the
// replica-level fields, which a scheduler's fleet view keeps, are copies.

// encodeEntry returns r's entry, as json.Marshal gives the replicaRecord
// of r, written in one buffer of about its size: at 10,000 jobs the
// reflective encoding grew a buffer to 4 MB and copied the jobs twice on
// the way, at the moment a replica starts.
func encodeEntry(r fleet.Replica) string {
	n := 128 + len(r.ID) + len(r.Version)
	for _, j := range r.Jobs {
		n += 80 + len(j.Name) + len(j.Key) + len(j.Schedule) + len(j.Spec) + len(j.Fingerprint)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(`{"id":`)
	writeJSONString(&b, r.ID)
	b.WriteString(`,"version":`)
	writeJSONString(&b, r.Version)
	b.WriteString(`,"startedAt":`)
	b.WriteString(strconv.FormatInt(r.Started.UnixMilli(), 10))
	b.WriteString(`,"refreshMs":`)
	b.WriteString(strconv.FormatInt(r.Refresh.Milliseconds(), 10))
	b.WriteString(`,"jobs":`)
	if len(r.Jobs) == 0 {
		b.WriteString("null") // as encoding/json writes the nil slice PublishReplica built for no jobs
	} else {
		b.WriteByte('[')
		for i, j := range r.Jobs {
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
	}
	if off := r.ClockOffset.Milliseconds(); off != 0 {
		b.WriteString(`,"clockOffsetMs":`)
		b.WriteString(strconv.FormatInt(off, 10))
	}
	b.WriteByte('}')
	return b.String()
}

// decodeEntry decodes a registry entry, as its fast form or, failing
// that, with encoding/json.
func decodeEntry(raw string) (replicaRecord, []fleet.Job, error) {
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
	if !p.lit("null") {
		if !p.lit("[") {
			return replicaRecord{}, nil, false
		}
		jobs = make([]fleet.Job, 0, strings.Count(raw[p.i:], `{"name":`))
		for first := true; !p.lit("]"); first = false {
			if !first && !p.lit(",") {
				return replicaRecord{}, nil, false
			}
			var j fleet.Job
			if !p.lit(`{"name":`) || !p.str(&j.Name) || !p.lit(`,"key":`) || !p.str(&j.Key) ||
				!p.lit(`,"schedule":`) || !p.str(&j.Schedule) || !p.lit(`,"spec":`) || !p.str(&j.Spec) ||
				!p.lit(`,"fingerprint":`) || !p.str(&j.Fingerprint) || !p.lit("}") {
				return replicaRecord{}, nil, false
			}
			jobs = append(jobs, j)
		}
	}
	if p.lit(`,"clockOffsetMs":`) && (!p.int(&rec.OffsetMs) || rec.OffsetMs == 0) { // omitempty: never 0
		return replicaRecord{}, nil, false
	}
	if !p.lit("}") || p.i != len(raw) {
		return replicaRecord{}, nil, false
	}
	rec.ID, rec.Version = strings.Clone(rec.ID), strings.Clone(rec.Version)
	return rec, jobs, true
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
