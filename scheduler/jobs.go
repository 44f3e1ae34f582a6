package scheduler

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// JobInfo is what one replica knows of a job (Jobs). The fleet's view,
// read from the store, is package inspect's.
type JobInfo struct {
	Name     string
	Schedule string    // the schedule, as Schedule.String says it
	Next     time.Time // the next occurrence after now (zero: none left)
	Running  bool      // a run of the job executes on this replica
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

// setLastRun records the run's status as the job's last run here.
func (j *job) setLastRun(st fleet.Status) {
	ri := &RunInfo{Occurrence: st.Occurrence, Started: st.Started, Duration: st.Duration,
		Outcome: st.Outcome, Error: fleet.SanitizeError(st.Error), Trigger: st.Trigger}
	j.lastMu.Lock()
	j.lastRun = ri
	j.lastMu.Unlock()
}

// Jobs returns the jobs registered on this replica, in the order they were
// registered: each with its schedule, next occurrence, whether it runs
// here now, and the last run this replica ran.
func (s *Scheduler) Jobs() []JobInfo {
	now := s.cfg.clock.Now()
	var out []JobInfo
	for _, j := range s.jobsSnapshot() {
		ji := JobInfo{Name: j.name, Schedule: j.schedule.String(), Running: j.current.Load() != nil}
		if next := j.plan.next(now); !next.IsZero() {
			ji.Next = next.In(s.cfg.location)
		}
		j.lastMu.Lock()
		if j.lastRun != nil {
			last := *j.lastRun
			ji.LastRun = &last
		}
		j.lastMu.Unlock()
		out = append(out, ji)
	}
	return out
}

// Remove stops firing the job registered as name on this replica: no new
// occurrence of it starts here, a firing in flight is dropped, and a run
// that executes now finishes and releases its lease as usual. Other
// replicas go on running the job. It fails with ErrUnknownJob for a name
// that is not registered. The name may be registered again afterwards.
func (s *Scheduler) Remove(name string) error {
	key, err := lease.NormalizeKey(JobKeyPrefix + name)
	if err != nil {
		return fmt.Errorf("%w: Remove %q: %w", ErrUnknownJob, name, err)
	}
	s.mu.Lock()
	j := s.jobs[key]
	if j == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: Remove %q", ErrUnknownJob, name)
	}
	j.removed.Store(true)
	delete(s.jobs, key)
	s.order = slices.DeleteFunc(s.order, func(o *job) bool { return o == j })
	g := s.groups[j.plan.groupKey()]
	empty := g.remove(j)
	cron := s.cron
	if empty {
		delete(s.groups, g.key)
	}
	s.mu.Unlock()

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
