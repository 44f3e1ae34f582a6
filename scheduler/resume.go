package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// Finding open occurrences, without a store call per job: the fleet keeps
// an index of the occurrences that are open or running (fleet.Store's
// IndexOccurrence), each scored by when it may next be attempted. Two
// replicas' control loops read the entries that are due once every
// resumePoll, one command whatever the number of jobs, and announce them
// on the control channel (fleet.MessageOpen) to the replicas that have
// their jobs; the other replicas read them for their own jobs, about twice
// a second in all (index_readers.go). A replica that releases an attempt
// open with no backoff says so there too, so that the others try at once.
// The index is a hint: the store's completion record of the job decides,
// in the claim of the next attempt (lease.WithResume).
//
//   - A run with attempts indexes its occurrence when it starts, at its
//     lease's expiry (plus lease.ExpiryTolerance): if its replica dies
//     without releasing, the entry comes due when the lease is no longer
//     live, and another replica resumes the occurrence at the next read:
//     within TTL + lease.ExpiryTolerance + resumePoll (TTL + 2s) of the
//     holder's last renewal, plus the time the replicas take to act.
//   - A claim that finds the lease still live (the run goes on, renewed)
//     or the backoff not passed moves the entry to when it may be taken.
//   - An entry past its deadline is given up by the replica that reads
//     it (GiveUp), whether or not it has the job, so that a job no replica
//     has any more is still reported given up, once.

// resumePoll is how often a replica that reads the fleet's index of open
// occurrences reads it.
const resumePoll = time.Second

// maxDue bounds the entries one read of the index returns.
const maxDue = 1000

// indexRun puts the occurrence of run r, which started with attempts, in
// the fleet's index, due when its lease would expire unrenewed: the
// holder's death is then found without any call per job.
func (s *Scheduler) indexRun(r *run) {
	if r.attempts.Max == 0 {
		return
	}
	at := r.lease.ExpiresAt.Add(lease.ExpiryTolerance)
	s.index(r.job, r.lease.Round, r.attempts.Deadline, at)
}

// index adds or moves job j's occurrence round in the fleet's index, due
// at at (store time). A failure is logged: the occurrence is then found
// only through a release that says it is open.
func (s *Scheduler) index(j *job, round int64, deadline, at time.Time) {
	fs, ok := s.store.(fleet.Store)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
	defer cancel()
	if err := fs.IndexOccurrence(ctx, j.key, round, deadline, at); err != nil {
		s.log.Warn("could not index an occurrence for its next attempt; if this replica dies while it runs, it is not resumed",
			slog.String("job", j.name), slog.Time("occurrence", time.UnixMilli(round).In(s.cfg.location)), slog.Any("error", err))
	}
}

// unindex removes job j's occurrence round from the fleet's index.
func (s *Scheduler) unindex(j *job, round int64, deadline time.Time) {
	fs, ok := s.store.(fleet.Store)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
	defer cancel()
	if err := fs.UnindexOccurrence(ctx, j.key, round, deadline); err != nil {
		s.debug(j, time.UnixMilli(round), "could not remove an occurrence from the index", slog.Any("error", err))
	}
}

// resumeAnswered keeps the index after the store answered the claim of
// firing f, an attempt of an open occurrence of j: a lease still live, or
// a backoff not passed, moves the entry to when it may be taken; an
// occurrence with nothing to resume leaves the index; one that ran out of
// attempts or time is reported given up by the claim that recorded it.
func (s *Scheduler) resumeAnswered(j *job, f firing, err error) {
	if err == nil {
		return // the run indexes it as it starts
	}
	occ := s.occ(f)
	deadline := s.attemptDeadline(f.reg, occ)
	var (
		locked *lease.LockedError
		notDue *lease.NotDueError
		gu     *lease.GivenUpError
	)
	switch {
	case errors.As(err, &gu):
		switch {
		case gu.First && gu.Superseded:
			s.givenUp(j, j.name, occ, gu.Attempt, "a later occurrence was claimed or skipped while it was open")
		case gu.First:
			s.givenUp(j, j.name, occ, gu.Attempt, "out of attempts or of time")
		}
		s.unindex(j, f.ms, deadline)
	case errors.Is(err, lease.ErrRoundClaimed):
		s.unindex(j, f.ms, deadline)
	case errors.As(err, &locked):
		s.index(j, f.ms, deadline, s.storeClock.Now().Add(locked.Remaining))
	case errors.As(err, &notDue):
		s.index(j, f.ms, deadline, s.storeClock.Now().Add(notDue.Remaining))
	case errors.Is(err, lease.ErrPaused):
		s.index(j, f.ms, deadline, s.storeClock.Now().Add(DefaultRegistryRefresh))
	}
}

// afterClose follows the release of run r, recorded as st: an occurrence
// released open for an attempt at once is announced to the replicas that
// have the job; one released given up is reported (the release recorded
// it, once).
func (s *Scheduler) afterClose(r *run, st fleet.Status) {
	if r.attempts.Max == 0 {
		return
	}
	switch {
	case st.Close == fleet.CloseGivenUp:
		why := "out of attempts"
		if r.info.Attempt < r.attempts.Max {
			why = "out of time: the next attempt would start after the occurrence's deadline"
		}
		s.givenUp(r.job, r.job.name, r.info.Occurrence, r.info.Attempt, why)
	case st.Close == fleet.CloseOpen && st.RetryAfter == 0:
		fs, ok := s.store.(fleet.Store)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(r.reg.ttl, MaxCleanup))
		defer cancel()
		if err := fs.Publish(ctx, fleet.Message{Kind: fleet.MessageOpen, Key: r.job.key, Round: r.lease.Round}); err != nil {
			r.log.Warn("could not announce an open occurrence; the fleet's index brings it to the others within a second", slog.Any("error", err))
		}
	}
}

// lookForOpen reads the fleet's index of open occurrences once (the
// control loop calls it every resumePoll) if this replica reads it at
// this poll (index_readers.go): an entry past its deadline is given up,
// whichever replica has its job; the others it offers to the owners of
// its own jobs, which claim the next attempt unless they are busy, and a
// reader for the fleet also announces them to the other replicas.
func (cp *controlPlane) lookForOpen() {
	role := cp.s.view.Load().indexRole()
	cp.indexPolls++
	if cp.indexPolls%role.every != 0 {
		return
	}
	ctx, cancel := cp.opContext()
	defer cancel()
	due, err := cp.store.DueOccurrences(ctx, maxDue)
	switch {
	case err != nil && !cp.indexFailing:
		cp.indexFailing = true
		cp.s.log.Warn("could not read the fleet's index of open occurrences; interrupted and failed occurrences are not resumed here until it works again",
			slog.Any("error", err))
		return
	case err != nil:
		cp.s.log.Debug("could not read the index of open occurrences", slog.Any("error", err))
		return
	case cp.indexFailing:
		cp.indexFailing = false
		cp.s.log.Info("the fleet's index of open occurrences can be read again")
	}
	s := cp.s
	open := due[:0]
	for _, d := range due {
		if !d.Deadline.After(s.storeClock.Now()) {
			cp.giveUp(d)
			continue
		}
		open = append(open, d)
	}
	if role.announce {
		cp.announceDue(open)
	}
	for _, d := range open {
		cp.offer(d)
	}
}

// offer offers due entry d to the owner of its job, if this replica has
// it.
func (cp *controlPlane) offer(d fleet.Due) {
	if j := cp.s.jobByKey(d.Key); j != nil {
		j.deliver(input{kind: inResume, f: firing{ms: d.Round, kind: firedByResume}})
	}
}

// giveUp gives up the occurrence of entry d, past its deadline, and
// reports it if this call recorded it.
func (cp *controlPlane) giveUp(d fleet.Due) {
	s := cp.s
	ctx, cancel := cp.opContext()
	defer cancel()
	first, err := cp.store.GiveUp(ctx, d.Key, d.Round)
	if err != nil {
		s.log.Debug("could not give up an occurrence past its deadline", slog.String("job", d.Key), slog.Any("error", err))
		return
	}
	if !first {
		return
	}
	name := strings.TrimPrefix(d.Key, JobKeyPrefix)
	s.givenUp(s.jobByKey(d.Key), name, time.UnixMilli(d.Round).In(s.cfg.location), 0, "out of time: its deadline passed before another attempt")
}
