package scheduler

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cronguard/cronguard/lease"
)

// JobInfo is what one replica knows of a job (Jobs). The fleet's view,
// read from the store, is package inspect's.
type JobInfo struct {
	Name     string
	Schedule string    // the schedule, as Schedule.String says it
	Next     time.Time // the next occurrence after now (zero: none left)
	Running  bool      // a run of the job executes on this replica (or, claimed ahead with WithClaimLead, waits for its occurrence)
	LastRun  *RunInfo  // the last run this replica ran, or nil
}

// RunInfo is one run as the replica that ran it saw it.
type RunInfo struct {
	Occurrence time.Time
	Started    time.Time // in the store's time (the lease's AcquiredAt)
	Duration   time.Duration
	Outcome    string // "succeeded", "failed", "panicked" or "timed_out"
	Error      string // the error, as the run status keeps it (see WithErrorClassOnly)
	Trigger    string // the trigger it ran for, if any
}

// Jobs returns the jobs registered on this replica, in the order they were
// registered: each with its schedule, next occurrence, whether it runs
// here now, and the last run this replica ran.
func (s *Scheduler) Jobs() []JobInfo {
	now := s.cfg.clock.Now()
	var out []JobInfo
	for _, j := range s.jobsSnapshot() {
		reg, running, last := j.info()
		if reg == nil {
			continue // removed since the snapshot
		}
		ji := JobInfo{Name: j.name, Schedule: reg.schedule.String(), Running: running, LastRun: last}
		if next := reg.plan.next(now); !next.IsZero() {
			ji.Next = next.In(s.cfg.location)
		}
		out = append(out, ji)
	}
	return out
}

// Remove stops firing the job registered as name on this replica: no new
// occurrence of it starts here, a firing in flight or waiting (a buffered
// occurrence, a catch-up) is dropped (a buffered occurrence, which came due
// while the job was registered, is reported skipped: SkipLocked; so is one
// whose claim was at the store and won, unless, with attempts, it stays
// open for a replica that has the job to resume), a trigger
// that waits for it is handed on to the replicas that still have it, and a
// run that executes now finishes and releases its lease as usual. Other
// replicas go on running the job. It fails with ErrUnknownJob for a name
// that is not registered. The name may be registered again afterwards;
// while the removed job's run still executes here, the job registered
// again does not start another (SkipRunning).
func (s *Scheduler) Remove(name string) error {
	key, err := lease.NormalizeKey(JobKeyPrefix + name)
	if err != nil {
		return fmt.Errorf("%w: Remove %q: %w", ErrUnknownJob, name, err)
	}
	s.mu.Lock()
	j := s.jobs[key]
	reg := (*registration)(nil)
	if j != nil {
		reg = j.registered()
	}
	if reg == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: Remove %q", ErrUnknownJob, name)
	}
	s.order = slices.DeleteFunc(s.order, func(o *job) bool { return o == j })
	g := s.groups[reg.plan.groupKey()]
	empty := g.remove(j)
	cron := s.cron
	if empty {
		delete(s.groups, g.key)
	}
	s.dropLimit(reg.limitSpec)
	s.mu.Unlock()

	j.deliver(input{kind: inRemove})
	if empty && cron != nil && g.id.Load() != nil {
		if err := cron.RemoveJob(*g.id.Load()); err != nil {
			s.log.Warn("could not remove a job's timer from gocron; its firings are dropped", slog.String("job", name), slog.Any("error", err))
		}
	}
	if s.control != nil {
		s.control.markDirty()
	}
	s.log.Info("job removed from this replica", slog.String("job", name))
	return nil
}

// forget drops the owner of a removed job once nothing of it goes on
// here; a job registered again meanwhile is kept.
func (s *Scheduler) forget(j *job) {
	s.mu.Lock()
	s.forgetLocked(j)
	s.mu.Unlock()
}

// forgetLocked is forget with s.mu held.
func (s *Scheduler) forgetLocked(j *job) {
	if s.jobs[j.key] != j {
		return
	}
	if j.removable() {
		delete(s.jobs, j.key)
	}
}

// unregisterLocked undoes add's registration of reg for j when gocron
// refused its schedule. s.mu is held.
func (s *Scheduler) unregisterLocked(j *job, reg *registration) {
	s.dropLimit(reg.limitSpec)
	as := j.decide(input{kind: inRemove})
	for i := range as.n {
		if as.a[i].kind != actForget { // forgotten here: s.mu is held
			s.do(j, as.a[i])
		}
	}
	s.forgetLocked(j)
}
