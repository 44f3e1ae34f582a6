package redislease

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

var (
	_ lease.BatchAcquirer = (*Store)(nil)
	_ lease.RoundReader   = (*Store)(nil)
)

// AcquireBatch makes the acquires of reqs and writes each answer to
// results as Acquire would give it, rolling back each attempt whose
// outcome is unknown. See lease.BatchAcquirer. On a server that is not a
// Redis Cluster the acquires go in calls of acquire_batch.lua, up to
// batchMax acquires of one shape each (one TIME, MGET and MSET for them
// all: about a third less server time per acquire than acquire.lua's); on
// a Cluster, whose leases are in different slots, the acquire script runs
// once per request, all in one pipeline. Scripts the server does not have
// cached are sent again with EVAL. Requests for a trigger
// (lease.WithTrigger) or a resume (lease.WithResume), and every request
// when the store waits for replica acknowledgements (WithReplicaAck), are
// sent one by one with Acquire.
func (s *Store) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, results []lease.AcquireResult) {
	if s.ack.replicas > 0 {
		for i, r := range reqs {
			results[i].Lease, results[i].Err = s.Acquire(ctx, r.Key, r.TTL, r.Options...)
		}
		return
	}
	calls := make([]acquireCall, 0, len(reqs))
	at := make([]int, 0, len(reqs)) // at[k]: the request of calls[k]
	for i, r := range reqs {
		a, err := s.newAcquire(r.Key, r.TTL, r.Options)
		switch {
		case err != nil:
			results[i] = lease.AcquireResult{Err: err}
			continue
		case a.o.Trigger || a.o.Resume > 0:
			results[i].Lease, results[i].Err = s.Acquire(ctx, r.Key, r.TTL, r.Options...)
			continue
		}
		calls = append(calls, a)
		at = append(at, i)
	}
	if len(calls) == 0 {
		return
	}
	s.preflightOnce.Do(func() { s.preflight(ctx) })
	if s.client.Mode() == rueidis.ClientModeCluster {
		s.acquireEach(ctx, calls, at, results)
		return
	}
	s.acquireChunks(ctx, calls, at, results)
}

// acquireEach sends the acquire script once per call, in one pipeline.
func (s *Store) acquireEach(ctx context.Context, calls []acquireCall, at []int, results []lease.AcquireResult) {
	cmds := make(rueidis.Commands, 0, len(calls))
	for k := range calls {
		keys, args := s.keysArgs(&calls[k])
		cmds = append(cmds, s.evalAcquire(acquireSHA, "", keys, args))
	}
	sent := s.clock.Now()
	resps := s.doScripts(ctx, cmds, func(k int) rueidis.Completed {
		keys, args := s.keysArgs(&calls[k])
		return s.evalAcquire("", luascripts.Acquire, keys, args)
	})
	for k, resp := range resps {
		l, err := s.acquireAnswer(ctx, calls[k], sent, resp)
		results[at[k]] = lease.AcquireResult{Lease: l, Err: err}
	}
}

// LastRounds reads the round records of keys without a script: with MGET
// on a server that is not a Redis Cluster (a record of another type reads
// as none), with one pipelined GET each on a Cluster (readStrings). See
// lease.RoundReader.
func (s *Store) LastRounds(ctx context.Context, keys []string, rounds []int64) error {
	const op = "last rounds"
	if len(rounds) < len(keys) {
		return opErr(op, "", fmt.Errorf("%w: rounds must be as long as keys", lease.ErrInvalidArgument))
	}
	var bad unreadKeys
	err := s.readStrings(ctx, op, keys, 1, func(dst []string, ks keyset) []string { return append(dst, ks.round) }, func(i int, vs []string, found []bool, err error) {
		rounds[i] = 0
		switch {
		case err != nil:
			bad.add(i, internalErr(op, "", err))
		case !found[0]:
		default:
			r, perr := strconv.ParseInt(vs[0], 10, 64)
			if perr != nil {
				bad.add(i, internalErr(op, "", fmt.Errorf("%w: round record is not a number", lease.ErrInternal)))
				return
			}
			rounds[i] = r
		}
	})
	if err != nil {
		return err
	}
	return bad.err()
}

// LastRuns reads the status record and the lease record of each of keys
// with one MGET (the two share the key's slot; the MGETs of many keys are
// chunked as LastRounds's, one per key on a Cluster) and returns the span
// of each one's last run: the holder's, from its acquisition to its
// expiry, while a live lease holds the key, else the status record's. See
// lease.RoundReader.
func (s *Store) LastRuns(ctx context.Context, keys []string, spans []lease.RunSpan) error {
	const op = "last runs"
	if len(spans) < len(keys) {
		return opErr(op, "", fmt.Errorf("%w: spans must be as long as keys", lease.ErrInvalidArgument))
	}
	var bad unreadKeys
	names := func(dst []string, ks keyset) []string { return append(dst, ks.status(s.prefix), ks.data) }
	err := s.readStrings(ctx, op, keys, 2, names, func(i int, vs []string, found []bool, _ error) {
		spans[i] = lease.RunSpan{}
		if found[1] {
			// A record that exists is live (its PX ends with its
			// liveness): the run in progress.
			p, err := parseRecord(vs[1])
			if err != nil {
				bad.add(i, internalErr(op, "", err))
				return
			}
			spans[i] = lease.RunSpan{Start: p.acquiredAt, End: p.expiresAt}
			return
		}
		if !found[0] {
			return
		}
		var r struct {
			StartedAt  int64 `json:"startedAt"`
			DurationMs int64 `json:"durationMs"`
		}
		if err := json.Unmarshal([]byte(vs[0]), &r); err != nil {
			bad.add(i, internalErr(op, "", fmt.Errorf("%w: status is not JSON", lease.ErrInternal)))
			return
		}
		start := time.UnixMilli(r.StartedAt)
		spans[i] = lease.RunSpan{Start: start, End: start.Add(time.Duration(r.DurationMs) * time.Millisecond)}
	})
	if err != nil {
		return err
	}
	return bad.err()
}

// unreadKeys collects the keys of a read of many keys that could not be
// read (LastRounds, LastRuns, PendingTriggersBatch), for a
// *lease.UnreadableKeysError.
type unreadKeys struct {
	keys  []int
	first error
}

func (u *unreadKeys) add(i int, err error) {
	if u.first == nil {
		u.first = err
	}
	u.keys = append(u.keys, i)
}

// err returns nil when every key was read, and otherwise a
// *lease.UnreadableKeysError.
func (u *unreadKeys) err() error {
	if len(u.keys) == 0 {
		return nil
	}
	return &lease.UnreadableKeysError{Keys: u.keys, Err: u.first}
}

// wrongType reports whether err is Redis's answer to a command on a key
// that holds another type (WRONGTYPE): that key's value is unreadable,
// and the others of a pipeline are not concerned.
func wrongType(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// keyReads appends to cmds one read command per key of keys, made by build
// from the key's keyset: the pipelined reads of PendingTriggersBatch. A
// key that is not valid fails the call, before any I/O.
func (s *Store) keyReads(op string, keys []string, cmds rueidis.Commands, build func(keyset) rueidis.Completed) (rueidis.Commands, error) {
	err := s.eachKeyset(op, keys, func(ks keyset) { cmds = append(cmds, build(ks)) })
	if err != nil {
		return nil, err
	}
	return cmds, nil
}

// eachKeyset calls fn with the keyset of each of keys, in order. A key
// that is not valid fails the call with lease.ErrInvalidArgument, fn
// having been called for the keys before it: the reads of many keys
// (keyReads, readStrings) build their commands with it and send nothing
// when it fails.
func (s *Store) eachKeyset(op string, keys []string, fn func(keyset)) error {
	for _, k := range keys {
		nkey, err := lease.NormalizeKey(k)
		if err != nil {
			return opErr(op, "", err)
		}
		ks, err := keysFor(s.prefix, nkey)
		if err != nil {
			return opErr(op, "", err)
		}
		fn(ks)
	}
	return nil
}

// doScripts sends cmds (EVALSHA each) in one pipeline, and sends again
// those the server answered NOSCRIPT (its script cache was flushed, or it
// restarted) as eval(n) builds them, with EVAL and the script's source.
func (s *Store) doScripts(ctx context.Context, cmds rueidis.Commands, eval func(n int) rueidis.Completed) []rueidis.RedisResult {
	resps := s.client.DoMulti(ctx, cmds...)
	var again []int
	for n, resp := range resps {
		if isNoScript(resp.Error()) {
			again = append(again, n)
		}
	}
	if len(again) == 0 {
		return resps
	}
	retry := make(rueidis.Commands, 0, len(again))
	for _, n := range again {
		retry = append(retry, eval(n))
	}
	for i, resp := range s.client.DoMulti(ctx, retry...) {
		resps[again[i]] = resp
	}
	return resps
}
