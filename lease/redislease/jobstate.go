package redislease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"

	"github.com/redis/rueidis"
)

// The reads of a job's state, in the order JobState sends them: TIME,
// then one plain read per key of the job's slot, as one pipeline (one
// round trip, one node in a cluster: the keys share the job's hash tag and
// TIME goes with them). No script, so a user granted only these read
// commands can read a job's state (docs/redis-acl.md, the read-only
// user). A read of another key in the job's slot (a run history, say) is
// one more constant here and one more command in jobStateCommands.
const (
	readNow      = iota // TIME
	readStatus          // GET status: before the lease, see JobState
	readRecord          // GET lease record
	readRound           // GET round record
	readPause           // GET pause
	readTriggers        // LRANGE trigger queue
	jobStateReads
)

// jobStateCommands returns the reads of ks's state, indexed as above.
func (s *Store) jobStateCommands(ks keyset) rueidis.Commands {
	b := s.client.B()
	cmds := make(rueidis.Commands, jobStateReads)
	cmds[readNow] = b.Time().Build()
	cmds[readStatus] = b.Get().Key(ks.status(s.prefix)).Build()
	cmds[readRecord] = b.Get().Key(ks.data).Build()
	cmds[readRound] = b.Get().Key(ks.round).Build()
	cmds[readPause] = b.Get().Key(ks.pause(s.prefix)).Build()
	cmds[readTriggers] = b.Lrange().Key(ks.trigger(s.prefix)).Start(0).Stop(-1).Build()
	return cmds
}

// JobState reads what Redis holds about key: TIME, four GETs and an
// LRANGE of the trigger queue, pipelined in one round trip. See
// fleet.Store.
//
// The reads are plain commands, not a script or a transaction, so they are
// not one atomic snapshot: another client's command can run between two
// of them (rarely: Redis usually runs a pipeline that arrives in one
// piece before it turns to another client). Each value is exact as of its
// own read, and Now is the server's time just before the first. The
// status is read before the lease, so a run that ends between the two
// reads shows as neither running nor yet recorded (the next read shows
// it), never as both; a run that starts between them shows with the
// previous run's status, as it would at any instant.
func (s *Store) JobState(ctx context.Context, key string) (fleet.JobState, error) {
	const op = "job state"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return fleet.JobState{}, err
	}
	res := s.client.DoMulti(ctx, s.jobStateCommands(ks)...)
	t, err := serverTime(res[readNow])
	if err != nil {
		return fleet.JobState{}, wrapErr(ctx, op, what, err)
	}
	now := t.UnixMilli()
	var vals [jobStateReads]string
	for _, i := range []int{readStatus, readRecord, readRound, readPause} {
		v, err := res[i].ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			return fleet.JobState{}, wrapErr(ctx, op, what, err)
		}
		vals[i] = v
	}
	triggers, err := res[readTriggers].AsStrSlice()
	if err != nil {
		return fleet.JobState{}, wrapErr(ctx, op, what, err)
	}
	st := fleet.JobState{Now: time.UnixMilli(now), Triggers: liveTriggers(triggers, now)}
	if rec := vals[readRecord]; rec != "" {
		p, err := parseRecord(rec)
		if err != nil {
			return fleet.JobState{}, internalErr(op, what, err)
		}
		// Live as the scripts judge it (acquire.lua): up to
		// ExpiryTolerance past its expiry. The record's PX ends it
		// about then too.
		if p.expiresAt.UnixMilli() > now-lease.ExpiryTolerance.Milliseconds() {
			info := p.info(ks.storage)
			st.Holder = &info
		}
	}
	if round := vals[readRound]; round != "" {
		if st.LastRound, err = strconv.ParseInt(round, 10, 64); err != nil {
			return fleet.JobState{}, internalErr(op, what, fmt.Errorf("%w: round record is not a number", lease.ErrInternal))
		}
	}
	if status := vals[readStatus]; status != "" {
		var r statusRecord
		if err := json.Unmarshal([]byte(status), &r); err != nil {
			return fleet.JobState{}, internalErr(op, what, fmt.Errorf("%w: status is not JSON", lease.ErrInternal))
		}
		sv := r.status()
		st.Status = &sv
	}
	if pause := vals[readPause]; pause != "" {
		p, err := parsePause(pause)
		if err != nil {
			return fleet.JobState{}, internalErr(op, what, err)
		}
		st.Pause = &p
	}
	return st, nil
}

// ForceRelease deletes the live lease on key whoever holds it. See
// fleet.Store. It is logged at warn, naming the key's hash and the
// holder's owner label and short lease ID.
func (s *Store) ForceRelease(ctx context.Context, key string) (lease.Info, error) {
	const op = "force release"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return lease.Info{}, err
	}
	for range 3 { // the lease may change hands between the read and the release
		p, err := s.recordReply(ctx, op, what, lookupScript.Exec(ctx, s.client, []string{ks.data}, nil))
		if err != nil {
			return lease.Info{}, err
		}
		err = s.Release(ctx, p.id)
		if err == nil {
			s.log.Warn("lease force-released by an operator; its holder may still be running",
				"key", what, "owner", p.owner, "lease", lease.ShortID(p.id), "fence", p.fence)
			return p.info(ks.storage), nil
		}
		var nh *lease.NotHeldError
		if !errors.As(err, &nh) {
			return lease.Info{}, err
		}
	}
	return lease.Info{}, opErr(op, what, fmt.Errorf("%w: the lease kept changing hands", lease.ErrInternal))
}

// status turns a stored status into a fleet.Status.
func (r statusRecord) status() fleet.Status {
	return fleet.Status{
		Occurrence: time.UnixMilli(r.Occurrence),
		Owner:      r.Owner,
		Replica:    r.Replica,
		Attempt:    r.Attempt,
		Fence:      fencing.Token(r.Fence),
		Started:    time.UnixMilli(r.StartedAt),
		Duration:   time.Duration(r.DurationMs) * time.Millisecond,
		Outcome:    r.Outcome,
		Error:      r.Error,
		Trigger:    r.Trigger,
		Missed:     r.Missed,
	}
}
