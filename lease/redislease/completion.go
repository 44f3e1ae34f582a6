package redislease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

// Completion records (DESIGN 16). A round acquire with lease.WithAttempts
// writes the occurrence's record beside its round record, in the job's
// slot, and the release that ends each attempt rewrites it. A trigger's
// acquire reads it (one GET) and, when the round it claims supersedes an
// occurrence still open or running, marks that one given up (one SET):
//
//	P:attempt:{G}   "<round>|<attempt>|<state>|<notBeforeMs>|<deadlineMs>|<max>" (never expires)
//	P:open          the index of open and running occurrences: sorted set,
//	                "<round>:<deadlineMs>:<key>" -> ms from when it may be attempted
//
// The index has a slot of its own; it is written by plain ZADD and ZREM,
// pipelined with the script they go with, and read by one script (due.lua)
// that compares the scores with the server's TIME.

var (
	acquireResumeScript = rueidis.NewLuaScript(luascripts.AcquireResume)
	giveUpScript        = rueidis.NewLuaScript(luascripts.GiveUp)
	dueScript           = rueidis.NewLuaScript(luascripts.Due)
	acquireResumeSHA    = scriptSHA(luascripts.AcquireResume)
)

// The codes of acquire_resume.lua beyond acquire.lua's.
const (
	codeGivenUp = -10
	codeNotDue  = -11
)

// attempt returns the completion record's key, P:attempt:{G}.
func (ks keyset) attempt(prefix string) string { return tagged(prefix, "attempt", ks.tag) }

// openIndex returns the index's key, P:open.
func openIndex(prefix string) string { return prefix + ":open" }

// dueMember returns the index member of key's occurrence round.
func dueMember(key string, round, deadlineMs int64) string {
	var b strings.Builder
	b.Grow(40 + len(key))
	b.WriteString(strconv.FormatInt(round, 10))
	b.WriteByte(':')
	b.WriteString(strconv.FormatInt(deadlineMs, 10))
	b.WriteByte(':')
	b.WriteString(key)
	return b.String()
}

// parseDueMember reads an index member; ok is false for a member this
// store did not write.
func parseDueMember(m string) (key string, round, deadlineMs int64, ok bool) {
	r, rest, ok1 := strings.Cut(m, ":")
	d, key, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || key == "" {
		return "", 0, 0, false
	}
	round, ok1 = parseDigits(r)
	deadlineMs, ok2 = parseDigits(d)
	if !ok1 || !ok2 || round <= 0 || deadlineMs <= 0 {
		return "", 0, 0, false
	}
	return key, round, deadlineMs, true
}

// parseDigits reads a whole number as the scripts write one: decimal
// digits, no sign, no leading zero, at most 2^53 (what a Lua number holds
// exactly).
func parseDigits(s string) (int64, bool) {
	if s == "" || len(s) > 16 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= 1<<53
}

// completionRecord is a completion record as stored.
type completionRecord struct {
	Round       int64
	Attempt     int
	State       byte // 'r', 'o', 'd' or 'g'
	NotBeforeMs int64
	DeadlineMs  int64
	Max         int
}

// errBadRecord is the cause of a completion record this store cannot read.
var errBadRecord = fmt.Errorf("%w: unreadable completion record", lease.ErrInternal)

// parseCompletionRecord reads "round|attempt|state|notBeforeMs|deadlineMs|max".
// Anything else (a field missing or extra, a number out of range, an
// unknown state) is errBadRecord, never a panic.
func parseCompletionRecord(v string) (completionRecord, error) {
	var f [6]string
	rest := v
	for i := range f {
		var ok bool
		if i == len(f)-1 {
			f[i], ok = rest, !strings.Contains(rest, "|")
		} else {
			f[i], rest, ok = strings.Cut(rest, "|")
		}
		if !ok {
			return completionRecord{}, fmt.Errorf("%w: want 6 fields", errBadRecord)
		}
	}
	var n [5]int64
	for i, j := range []int{0, 1, 3, 4, 5} {
		var ok bool
		if n[i], ok = parseDigits(f[j]); !ok {
			return completionRecord{}, fmt.Errorf("%w: field %d is not a whole number", errBadRecord, j+1)
		}
	}
	if len(f[2]) != 1 || !strings.Contains("rodg", f[2]) {
		return completionRecord{}, fmt.Errorf("%w: unknown state", errBadRecord)
	}
	if n[0] == 0 || n[1] == 0 || n[4] == 0 || n[4] > lease.MaxAttempts || n[1] > n[4] {
		return completionRecord{}, fmt.Errorf("%w: round, attempt or max out of range", errBadRecord)
	}
	return completionRecord{Round: n[0], Attempt: int(n[1]), State: f[2][0], NotBeforeMs: n[2], DeadlineMs: n[3], Max: int(n[4])}, nil
}

// String returns the record as stored.
func (c completionRecord) String() string {
	return fmt.Sprintf("%d|%d|%c|%d|%d|%d", c.Round, c.Attempt, c.State, c.NotBeforeMs, c.DeadlineMs, c.Max)
}

// attemptsKeysArgs extends an acquire's KEYS and ARGV (acquireKeysArgs)
// for lease.WithAttempts: the pause key always (with a flag saying
// whether it is honoured), the completion record and the policy.
func (s *Store) attemptsKeysArgs(ks keyset, keys, args []string, o lease.AcquireOptions) ([]string, []string) {
	honour := "1"
	if !o.PauseCheck {
		honour = "0"
	}
	keys = append(keys[:4:4], ks.pause(s.prefix), ks.attempt(s.prefix))
	policy := strconv.FormatInt(o.Attempts.Deadline.UnixMilli(), 10) + "|" + strconv.Itoa(o.Attempts.Max)
	args = append(args[:7:7], policy, honour)
	return keys, args
}

// acquireResume is Acquire with lease.WithResume (acquire_resume.lua).
func (s *Store) acquireResume(ctx context.Context, ks keyset, ik, id string, ttl time.Duration, nkey, owner, ownerJSON string, o lease.AcquireOptions) (*lease.Lease, error) {
	const op = "acquire"
	if o.Resume > maxRound {
		return nil, opErr(op, "", fmt.Errorf("%w: round must be at most %d, got %d", lease.ErrInvalidArgument, int64(maxRound), o.Resume))
	}
	base, baseArgs := acquireKeysArgs(ks, ik, "", id, ttl, nkey, ownerJSON, lease.AcquireOptions{})
	round := strconv.FormatInt(o.Resume, 10)
	keys := []string{base[0], base[1], base[2], ks.round, ks.attempt(s.prefix), ks.history(s.prefix)} // a plain acquire's keys stop at the fence counter
	if o.PauseCheck {
		keys = append(keys, ks.pause(s.prefix))
	}
	args := append(baseArgs[:5:5], round, s.historyLast, s.historyMost)
	sent := s.clock.Now()
	resp := s.execAcquireWith(ctx, acquireResumeScript, acquireResumeSHA, luascripts.AcquireResume, keys, args)
	if err := resp.Error(); err != nil {
		name := keyName(ks)
		if errors.Is(err, errReplicaAck) || outcomeUnknown(ctx, err) {
			s.rollback(ctx, ks, ik, id, 0, o.Resume, ttl, name)
		}
		return nil, wrapErr(ctx, op, name, err)
	}
	r, err := intsReply(resp)
	if err != nil {
		return nil, internalErr(op, keyName(ks), err)
	}
	v := r.v
	switch {
	case r.n == 7 && v[0] == 1:
		// checked below
	case r.n == 2 && v[0] == 0:
		return nil, opErr(op, keyName(ks), &lease.LockedError{Remaining: time.Duration(v[1]) * time.Millisecond})
	case r.is(codePaused):
		return nil, opErr(op, keyName(ks), lease.ErrPaused)
	case r.is(codeClaimed):
		return nil, opErr(op, keyName(ks), fmt.Errorf("%w: round %d has no open occurrence to resume", lease.ErrRoundClaimed, o.Resume))
	case (r.n == 2 || r.n == 3) && v[0] == codeGivenUp:
		return nil, opErr(op, keyName(ks), &lease.GivenUpError{Round: o.Resume, Attempt: int(v[1]), First: true, Superseded: r.n == 3 && v[2] == 1})
	case r.n == 2 && v[0] == codeNotDue:
		return nil, opErr(op, keyName(ks), &lease.NotDueError{Remaining: time.Duration(max(v[1], 1)) * time.Millisecond})
	case r.is(codeUnreadable):
		return nil, internalErr(op, keyName(ks), errUnreadable)
	default:
		return nil, internalErr(op, keyName(ks), r.bad())
	}
	fence, err := checkFence(v[1])
	if err != nil {
		name := keyName(ks)
		s.rollback(ctx, ks, ik, id, 0, o.Resume, ttl, name)
		return nil, internalErr(op, name, err)
	}
	s.warnFence(keyName(ks), fence, time.UnixMilli(v[3]))
	return lease.Attach(s, &lease.Lease{
		Key:        nkey,
		ID:         id,
		Fence:      fence,
		Owner:      owner,
		TTL:        ttl,
		AcquiredAt: time.UnixMilli(v[3]),
		ExpiresAt:  time.UnixMilli(v[2]),
		Round:      o.Resume,
		PrevRound:  o.Resume,
		Attempt:    int(v[4]),
		Attempts:   lease.Attempts{Max: int(v[6]), Deadline: time.UnixMilli(v[5])},
		Deadline:   lease.LocalDeadline(sent, ttl),
	}), nil
}

// givenUpEntry returns the "given_up" history entry of occurrence round
// after attempt, at (store time), as the scripts write it.
func givenUpEntry(round int64, attempt int, replica string, at time.Time) string {
	raw, _ := json.Marshal(statusRecord{ // cannot fail: strings and integers
		Occurrence: round,
		Replica:    replica,
		Attempt:    attempt,
		StartedAt:  at.UnixMilli(),
		Outcome:    fleet.OutcomeGivenUp,
	})
	return string(raw)
}

// pushGivenUp pushes the "given_up" entry of an occurrence that a round
// acquire superseded on the key's history: one round trip on that rare
// path, after the acquire gave the occurrence up in its record. A failure
// is logged: the acquirer reports the occurrence given up (Lease.Superseded)
// either way.
func (s *Store) pushGivenUp(ctx context.Context, ks keyset, what string, round int64, attempt int, at time.Time) {
	hk := ks.history(s.prefix)
	res := s.client.DoMulti(ctx,
		s.client.B().Lpush().Key(hk).Element(givenUpEntry(round, attempt, "", at)).Build(),
		s.client.B().Ltrim().Key(hk).Start(0).Stop(int64(s.historyLimit-1)).Build())
	for _, r := range res {
		if err := r.Error(); err != nil {
			s.log.Warn("could not record a superseded occurrence as given up in the job's history", "key", what, "error", err)
			return
		}
	}
}

// closeArgs returns release_status.lua's extra KEYS[6] and ARGV[5..9] for
// a lease acquired with lease.WithAttempts.
func (s *Store) closeArgs(ks keyset, l *lease.Lease, st fleet.Status) (key string, args []string) {
	state := "d"
	switch st.Close {
	case fleet.CloseOpen:
		state = "o"
	case fleet.CloseGivenUp:
		state = "g"
	}
	head := strconv.FormatInt(l.Round, 10) + "|" + strconv.Itoa(l.Attempt) + "|"
	tail := "|" + strconv.FormatInt(l.Attempts.Deadline.UnixMilli(), 10) + "|" + strconv.Itoa(l.Attempts.Max)
	entry := ""
	if state == "g" {
		entry = givenUpEntry(l.Round, l.Attempt, st.Replica, st.Started.Add(st.Duration))
	}
	return ks.attempt(s.prefix), []string{state, head, tail, strconv.FormatInt(st.RetryAfter.Milliseconds(), 10), entry}
}

// indexCmd returns the index command that goes with a release's close:
// ZADD at the next attempt's time, or ZREM. The record holds the exact
// time (the script reads the server's clock); the index, a hint, is
// written in the same round trip and so can only estimate it: an attempt
// due at once is scored with the lease's acquire time, which has passed
// on the server's clock; one after a backoff with the store's estimate
// of the server's now (serverNow) plus the backoff.
func (s *Store) indexCmd(l *lease.Lease, st fleet.Status) rueidis.Completed {
	member := dueMember(l.Key, l.Round, l.Attempts.Deadline.UnixMilli())
	if st.Close != fleet.CloseOpen {
		return s.client.B().Zrem().Key(openIndex(s.prefix)).Member(member).Build()
	}
	at := l.AcquiredAt
	if st.RetryAfter > 0 {
		at = s.serverNow(l).Add(st.RetryAfter)
	}
	return s.client.B().Zadd().Key(openIndex(s.prefix)).ScoreMember().ScoreMember(float64(at.UnixMilli()), member).Build()
}

// serverNow estimates the server's time now from l's acquire: its server
// time plus the time elapsed on the local clock since its request was
// sent (recovered from l.Deadline). It errs late by at most the acquire's
// one-way latency (a connection dialled for it included) and the clocks'
// drift, so a backoff read from the index ends no earlier than the
// record's.
func (s *Store) serverNow(l *lease.Lease) time.Time {
	sent := l.Deadline.Add(-l.TTL + leasekit.Drift(l.TTL))
	return l.AcquiredAt.Add(s.clock.Since(sent))
}

// reindex puts the entry of l's occurrence back in the index, due now,
// after a release with attempts that found the lease no longer held: the
// entry the release's ZREM or ZADD touched belongs to whoever attempts the
// occurrence now, and a stale entry costs one refused resume, a lost one
// an occurrence that nobody resumes.
func (s *Store) reindex(ctx context.Context, l *lease.Lease) {
	member := dueMember(l.Key, l.Round, l.Attempts.Deadline.UnixMilli())
	err := s.client.Do(ctx, s.client.B().Zadd().Key(openIndex(s.prefix)).ScoreMember().
		ScoreMember(float64(l.AcquiredAt.UnixMilli()), member).Build()).Error()
	if err != nil {
		s.log.Warn("could not put an occurrence back in the index after a release that no longer held its lease", "lease", lease.ShortID(l.ID), "error", err)
	}
}

// validateClose checks a status's close before any I/O.
func validateClose(st fleet.Status) error {
	if st.Close < fleet.CloseDone || st.Close > fleet.CloseGivenUp {
		return fmt.Errorf("%w: status close must be CloseDone, CloseOpen or CloseGivenUp, got %s", lease.ErrInvalidArgument, st.Close)
	}
	if st.RetryAfter < 0 {
		return fmt.Errorf("%w: status retry after must not be negative, got %s", lease.ErrInvalidArgument, st.RetryAfter)
	}
	return nil
}

// validateOccurrence checks an index entry's arguments before any I/O and
// returns the normalized key.
func validateOccurrence(key string, round int64, deadline time.Time) (string, error) {
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return "", err
	}
	if round <= 0 || round > maxRound {
		return "", fmt.Errorf("%w: round must be from 1 to %d, got %d", lease.ErrInvalidArgument, int64(maxRound), round)
	}
	if deadline.IsZero() || deadline.UnixMilli() <= 0 {
		return "", fmt.Errorf("%w: occurrence deadline must be after the Unix epoch", lease.ErrInvalidArgument)
	}
	return key, nil
}

// IndexOccurrence adds or moves key's occurrence round in the index of
// open and running occurrences, due at at: one ZADD. See fleet.Store.
func (s *Store) IndexOccurrence(ctx context.Context, key string, round int64, deadline, at time.Time) error {
	const op = "index occurrence"
	key, err := validateOccurrence(key, round, deadline)
	if err != nil {
		return opErr(op, "", err)
	}
	if at.IsZero() {
		return opErr(op, "", fmt.Errorf("%w: index time must be set", lease.ErrInvalidArgument))
	}
	err = s.client.Do(ctx, s.client.B().Zadd().Key(openIndex(s.prefix)).ScoreMember().
		ScoreMember(float64(at.UnixMilli()), dueMember(key, round, deadline.UnixMilli())).Build()).Error()
	if err != nil {
		return wrapErr(ctx, op, "", err)
	}
	return nil
}

// UnindexOccurrence removes one entry from the index: one ZREM. See
// fleet.Store.
func (s *Store) UnindexOccurrence(ctx context.Context, key string, round int64, deadline time.Time) error {
	const op = "unindex occurrence"
	key, err := validateOccurrence(key, round, deadline)
	if err != nil {
		return opErr(op, "", err)
	}
	err = s.client.Do(ctx, s.client.B().Zrem().Key(openIndex(s.prefix)).Member(dueMember(key, round, deadline.UnixMilli())).Build()).Error()
	if err != nil {
		return wrapErr(ctx, op, "", err)
	}
	return nil
}

// DueOccurrences returns up to limit index entries due at the server's
// now, oldest first: one script (due.lua) that reads TIME and runs
// ZRANGEBYSCORE, so the comparison is on the server's clock. Members this
// store did not write are skipped. See fleet.Store.
func (s *Store) DueOccurrences(ctx context.Context, limit int) ([]fleet.Due, error) {
	const op = "due occurrences"
	if limit <= 0 {
		return nil, opErr(op, "", fmt.Errorf("%w: limit must be positive, got %d", lease.ErrInvalidArgument, limit))
	}
	raw, err := dueScript.Exec(ctx, s.client, []string{openIndex(s.prefix)}, []string{strconv.Itoa(limit)}).AsStrSlice()
	if err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	return parseDue(raw), nil
}

// parseDue reads due.lua's reply, {member, score, ...}, skipping what this
// store did not write.
func parseDue(raw []string) []fleet.Due {
	out := make([]fleet.Due, 0, len(raw)/2)
	for i := 0; i+1 < len(raw); i += 2 {
		key, round, dl, ok := parseDueMember(raw[i])
		at, err := strconv.ParseFloat(raw[i+1], 64)
		if !ok || err != nil || math.IsNaN(at) || math.IsInf(at, 0) {
			continue
		}
		out = append(out, fleet.Due{Key: key, Round: round, Deadline: time.UnixMilli(dl), At: time.UnixMilli(int64(at))})
	}
	return out
}

// GiveUp marks key's occurrence round given up (give_up.lua) and, unless
// the occurrence may still be attempted, removes its index entry in a
// second round trip. See fleet.Store.
func (s *Store) GiveUp(ctx context.Context, key string, round int64) (bool, error) {
	const op = "give up"
	nkey, err := lease.NormalizeKey(key)
	if err != nil {
		return false, opErr(op, "", err)
	}
	if round <= 0 || round > maxRound {
		return false, opErr(op, "", fmt.Errorf("%w: round must be from 1 to %d, got %d", lease.ErrInvalidArgument, int64(maxRound), round))
	}
	ks, err := keysFor(s.prefix, nkey)
	if err != nil {
		return false, opErr(op, "", err)
	}
	resp := giveUpScript.Exec(ctx, s.client, []string{ks.data, ks.attempt(s.prefix), ks.history(s.prefix)},
		[]string{strconv.FormatInt(round, 10), s.historyLast, s.historyMost})
	if err := resp.Error(); err != nil {
		return false, wrapErr(ctx, op, keyName(ks), err)
	}
	r, err := intsReply(resp)
	if err != nil {
		return false, internalErr(op, keyName(ks), err)
	}
	switch {
	case r.is(codeClaimed):
		return false, nil
	case r.is(codeUnreadable):
		return false, internalErr(op, keyName(ks), errBadRecord)
	case r.n != 2 || r.v[0] < 0 || r.v[0] > 2:
		return false, internalErr(op, keyName(ks), r.bad())
	case r.v[0] == 0:
		return false, nil
	}
	if err := s.UnindexOccurrence(ctx, nkey, round, time.UnixMilli(r.v[1])); err != nil {
		if r.v[0] == 1 {
			s.log.Warn("gave up an occurrence but could not remove it from the index", "key", keyName(ks), "error", err)
			return true, nil
		}
		return false, err
	}
	return r.v[0] == 1, nil
}
