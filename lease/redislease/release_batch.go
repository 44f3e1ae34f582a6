package redislease

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

var _ fleet.BatchReleaser = (*Store)(nil)

// releaseCall is one release of a batch, ready to send: release_status.lua's
// keys and arguments and, for a lease acquired with lease.WithAttempts, its
// command on the index of open occurrences.
type releaseCall struct {
	i            int // the entry of the batch
	keys, args   []string
	withAttempts bool
	alone        bool // answered by a release by ID instead (releaseCall)
}

// ReleaseWithStatusBatch makes the releases of leases and writes each
// answer to triggers and errs as ReleaseWithStatus would give it. See
// fleet.BatchReleaser. On a server that is not a Redis Cluster the
// releases go in calls of release_batch.lua of up to batchMax releases
// each (release_chunks.go); on a Cluster, release_status.lua once per
// lease. Either way all go in one pipeline, EVALSHA falling back to EVAL
// for a script the server does not have cached, with the index command of
// each lease acquired with lease.WithAttempts beside it, as
// ReleaseWithStatus sends it. An entry that fails before any I/O, and a
// lease whose ID or key this store cannot have issued, are answered by
// ReleaseWithStatus on its own; so is the follow-up of an answer that
// needs one (a release by ID when the lease's key does not lead to its
// record, the index entry put back when a lease with attempts was no
// longer held).
func (s *Store) ReleaseWithStatusBatch(ctx context.Context, leases []*lease.Lease, sts []fleet.Status, triggers []int, errs []error) {
	calls := make([]releaseCall, 0, len(leases))
	for i, l := range leases {
		c, ok := s.batchable(i, l, sts[i])
		if !ok {
			triggers[i], errs[i] = s.ReleaseWithStatus(ctx, l, sts[i])
			continue
		}
		calls = append(calls, c)
	}
	switch {
	case len(calls) == 0:
	case s.client.Mode() == rueidis.ClientModeCluster:
		s.releaseEach(ctx, calls, leases, sts, triggers, errs)
	default:
		s.releaseChunks(ctx, calls, leases, sts, triggers, errs)
	}
}

// releaseEach sends release_status.lua once per call, in one pipeline.
func (s *Store) releaseEach(ctx context.Context, calls []releaseCall, leases []*lease.Lease, sts []fleet.Status, triggers []int, errs []error) {
	cmds := make(rueidis.Commands, 0, len(calls))
	at := make([]int, 0, len(calls)) // at[k]: the command of calls[k] in cmds
	for _, c := range calls {
		at = append(at, len(cmds))
		cmds = s.appendRelease(cmds, releaseStatusSHA, "", c, leases[c.i], sts[c.i])
	}
	resps := s.client.DoMulti(ctx, cmds...)
	var again []int // indexes into calls whose script the server did not have
	for k := range calls {
		if isNoScript(resps[at[k]].Error()) {
			again = append(again, k)
		}
	}
	if len(again) > 0 {
		// Commands are recycled once sent: the retry builds its own.
		cmds = cmds[:0]
		for _, k := range again {
			c := calls[k]
			cmds = s.appendRelease(cmds, "", luascripts.ReleaseStatus, c, leases[c.i], sts[c.i])
		}
		res := s.client.DoMulti(ctx, cmds...)
		n := 0
		for _, k := range again {
			resps[at[k]] = res[n]
			n++
			if calls[k].withAttempts {
				resps[at[k]+1] = res[n]
				n++
			}
		}
	}
	for k, c := range calls {
		script := resps[at[k]]
		if c.withAttempts {
			s.indexAnswer(resps[at[k]+1], script.Error())
		}
		triggers[c.i], errs[c.i] = s.releaseAnswer(ctx, leases[c.i], c.withAttempts, script)
	}
}

// indexAnswer logs the failure of an index command sent beside a release
// whose script did not fail (scriptErr): the index is a hint.
func (s *Store) indexAnswer(resp rueidis.RedisResult, scriptErr error) {
	if err := resp.Error(); err != nil && scriptErr == nil {
		s.log.Warn("could not update the index of open occurrences", "error", err)
	}
}

// batchable returns entry i's call, or false when ReleaseWithStatus must
// answer it on its own: an invalid entry (its error), or one releaseCall
// leaves to a release by ID.
func (s *Store) batchable(i int, l *lease.Lease, st fleet.Status) (releaseCall, bool) {
	if l == nil || validateClose(st) != nil {
		return releaseCall{}, false
	}
	c, err := s.releaseCall(i, l, st)
	return c, err == nil && !c.alone
}

// releaseCall prepares entry i's release of l with st: release_status.lua's
// keys and arguments, the same for a batch as for ReleaseWithStatus. alone
// says that a plain release by ID must answer it instead: a lease whose ID
// or key this store cannot have issued.
func (s *Store) releaseCall(i int, l *lease.Lease, st fleet.Status) (releaseCall, error) {
	data, index, head, ok := heldKeys(s.prefix, l.Key, l.ID)
	if !ok {
		return releaseCall{i: i, alone: true}, nil
	}
	ks, err := keysFor(s.prefix, l.Key)
	if err != nil {
		return releaseCall{i: i, alone: true}, nil
	}
	raw, err := json.Marshal(statusRecord{
		Occurrence: st.Occurrence.UnixMilli(),
		Owner:      st.Owner,
		Replica:    st.Replica,
		Attempt:    st.Attempt,
		Fence:      uint64(st.Fence),
		StartedAt:  st.Started.UnixMilli(),
		DurationMs: st.Duration.Milliseconds(),
		Outcome:    st.Outcome,
		Error:      fleet.SanitizeError(st.Error),
		Trigger:    st.Trigger,
		Missed:     st.Missed,
	})
	if err != nil {
		return releaseCall{}, err
	}
	c := releaseCall{
		i:            i,
		keys:         []string{data, index, ks.status(s.prefix), ks.trigger(s.prefix), ks.history(s.prefix)},
		args:         []string{head, string(raw), s.historyLast, s.historyMost},
		withAttempts: l.Attempts.Max > 0 && l.Round > 0,
	}
	if c.withAttempts {
		key, more := s.closeArgs(ks, l, st)
		c.keys, c.args = append(c.keys, key), append(c.args, more...)
	}
	return c, nil
}

// appendRelease appends c's script call (EVALSHA sha, or EVAL src when sha
// is "") and, with attempts, its index command.
func (s *Store) appendRelease(cmds rueidis.Commands, sha, src string, c releaseCall, l *lease.Lease, st fleet.Status) rueidis.Commands {
	cmds = append(cmds, s.evalAcquire(sha, src, c.keys, c.args))
	if c.withAttempts {
		cmds = append(cmds, s.indexCmd(l, st))
	}
	return cmds
}

// releaseAnswer reads release_status.lua's reply about l as
// ReleaseWithStatus does, and makes the follow-up the reply asks for.
func (s *Store) releaseAnswer(ctx context.Context, l *lease.Lease, withAttempts bool, resp rueidis.RedisResult) (int, error) {
	m, err := resp.ToMessage()
	return s.releaseAnswerMessage(ctx, l, withAttempts, &m, err)
}

// releaseAnswerMessage is releaseAnswer for a reply already read (an
// element of release_batch.lua's reply), or for err, the failure of the
// call that would have carried it.
func (s *Store) releaseAnswerMessage(ctx context.Context, l *lease.Lease, withAttempts bool, m *rueidis.RedisMessage, err error) (int, error) {
	const op = "release"
	if err == nil {
		err = m.Error()
	}
	if err != nil {
		return 0, wrapErr(ctx, op, leaseName(l.ID), err)
	}
	r, err := intsMessage(m)
	if err != nil || r.n != 2 && (r.n != 3 || r.v[0] != codeDone) {
		return 0, internalErr(op, leaseName(l.ID), fmt.Errorf("%w: %v", errBadReply, r.v[:r.n]))
	}
	switch r.v[0] {
	case codeDone:
		if r.n == 3 {
			// The run ended and is recorded; only its history entry is
			// missing (release_status.lua).
			s.log.Warn("the job's history key holds another type than a list: the run is not in its history; delete the key to restore it",
				slog.String("job", l.Key))
		}
		return int(r.v[1]), nil
	case codeElsewhere:
		return 0, s.Release(ctx, l.ID)
	}
	if withAttempts {
		s.reindex(ctx, l)
	}
	return 0, notHeldCode(op, l.ID, r.v[0])
}
