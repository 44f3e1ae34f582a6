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
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"

	"github.com/redis/rueidis"
)

var jobStateScript = rueidis.NewLuaScript(luascripts.JobState)

// JobState reads what Redis holds about key in one script. See
// fleet.Store.
func (s *Store) JobState(ctx context.Context, key string) (fleet.JobState, error) {
	const op = "job state"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return fleet.JobState{}, err
	}
	resp := jobStateScript.Exec(ctx, s.client,
		[]string{ks.data, ks.round, ks.status(s.prefix), ks.pause(s.prefix), ks.trigger(s.prefix)}, nil)
	if err := resp.Error(); err != nil {
		return fleet.JobState{}, wrapErr(ctx, op, what, err)
	}
	arr, err := resp.ToArray()
	if err != nil || len(arr) != 6 {
		return fleet.JobState{}, internalErr(op, what, fmt.Errorf("%w: %d elements", errBadReply, len(arr)))
	}
	now, err1 := arr[0].AsInt64()
	rec, err2 := arr[1].ToString()
	round, err3 := arr[2].ToString()
	status, err4 := arr[3].ToString()
	pause, err5 := arr[4].ToString()
	triggers, err6 := arr[5].AsInt64()
	for _, e := range []error{err1, err2, err3, err4, err5, err6} {
		if e != nil {
			return fleet.JobState{}, internalErr(op, what, fmt.Errorf("%w: %w", errBadReply, e))
		}
	}
	st := fleet.JobState{Now: time.UnixMilli(now), Triggers: int(triggers)}
	if rec != "" {
		p, err := parseRecord(rec)
		if err != nil {
			return fleet.JobState{}, internalErr(op, what, err)
		}
		info := p.info(ks.storage)
		st.Holder = &info
	}
	if round != "" {
		if st.LastRound, err = strconv.ParseInt(round, 10, 64); err != nil {
			return fleet.JobState{}, internalErr(op, what, fmt.Errorf("%w: round record is not a number", lease.ErrInternal))
		}
	}
	if status != "" {
		var r statusRecord
		if err := json.Unmarshal([]byte(status), &r); err != nil {
			return fleet.JobState{}, internalErr(op, what, fmt.Errorf("%w: status is not JSON", lease.ErrInternal))
		}
		sv := r.status()
		st.Status = &sv
	}
	if pause != "" {
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
	}
}
