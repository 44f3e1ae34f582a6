package inspect

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// Job is one job of the fleet, as its live replicas registered it and as
// the store holds it, read by one job state read at the store's time Now
// (see the package documentation for how consistent that read is).
type Job struct {
	// Name is the job's name.
	Name string
	// Key is the job's lease key (the scheduler's key prefix plus Name),
	// as the first registration has it.
	Key string
	// Schedule describes the schedule (scheduler.Schedule's String), and
	// Spec is its machine form (fleet.Job.Spec), as the first registration
	// has them.
	Schedule, Spec string
	// Registrations are the live replicas that registered the job, one
	// each, in replica ID order.
	Registrations []Registration
	// Conflict says the replicas disagree: two registrations differ in
	// fingerprint (schedule or options) or in lease key. Each replica in
	// the conflict logs it and emits scheduler.EventConflict; the
	// Registrations say who has what.
	Conflict bool
	// Now is the store's time when the job's state was read (on
	// lease/redislease, just before its other reads): every duration below
	// is measured against it, never against a local clock.
	Now time.Time
	// Holder is the live lease on the job (a run in progress), or nil.
	Holder *Holder
	// LastOccurrence is the last occurrence claimed for the job: the last
	// scheduled occurrence that ran, or was skipped as paused, on any
	// replica (the job's last round). Zero when none was claimed.
	// Triggered runs claim no occurrence.
	LastOccurrence time.Time
	// LastRun is the last run recorded, by the replica that ran it when it
	// released the lease, or nil. A run that lost its lease records none.
	LastRun *Run
	// Pause is the job's fleet-wide pause, or nil when it is not paused.
	Pause *fleet.Pause
	// PendingTriggers is how many live triggers wait to be run.
	PendingTriggers int
	// Next is the first occurrence after Now of the first registration's
	// schedule (fleet.Next), in UTC; zero when there is none left or the
	// registration carries no schedule spec. A paused job's next
	// occurrence is skipped when it comes.
	Next time.Time
}

// Replicas returns the IDs of the live replicas that registered the job,
// in order.
func (j Job) Replicas() []string {
	ids := make([]string, len(j.Registrations))
	for i, r := range j.Registrations {
		ids[i] = r.Replica
	}
	return ids
}

// Registration is one live replica's registration of a job.
type Registration struct {
	// Replica is the replica's ID.
	Replica string
	// Job is the job as that replica registered it.
	Job fleet.Job
}

// Holder is the live lease on a job: a run in progress somewhere.
type Holder struct {
	// Owner is the lease's holder label: by default "<replica ID>/<job>"
	// (scheduler.WithOwner changes it).
	Owner string
	// Replica is the live replica whose default holder label Owner is, or
	// "" when Owner is not of that form.
	Replica string
	// Fence is the run's fencing token.
	Fence fencing.Token
	// LeaseHash is a short, non-secret form of the lease: the last
	// characters of its ID's hash (lease.ShortID of lease.Info.IDHash),
	// enough to tell two leases apart. It is not the short form logs show
	// (the ID's own last characters, which the store does not give out):
	// Fence is what identifies the run in the replicas' logs.
	LeaseHash string
	// AcquiredAt and ExpiresAt are the store's times.
	AcquiredAt, ExpiresAt time.Time
	// Left is how long the lease has until it expires unless renewed:
	// ExpiresAt minus Job.Now. A heartbeat renews it every third of its
	// TTL; a lease is live up to lease.ExpiryTolerance past ExpiresAt, so
	// Left can be slightly negative.
	Left time.Duration
}

// Run is the last run of a job, as recorded by the replica that ran it.
type Run struct {
	fleet.Status
	// Replica is the live replica whose default holder label
	// Status.Owner is, or "" when Owner is not of that form or that
	// replica is no longer live.
	Replica string
}

// Ended is when the run ended, approximately: its start (the store's
// time) plus its duration (on the replica's clock).
func (r Run) Ended() time.Time { return r.Started.Add(r.Duration) }

// Jobs returns every job of the fleet, sorted by name: the union, by
// name, of the jobs the live replicas registered, each with its state.
//
// It reads the registry once (Replicas) and then each job's state once
// (fleet.Store.JobState), up to WithConcurrency reads at a time. On
// lease/redislease a job's read is one pipeline of plain commands to the
// job's slot: TIME, four GETs and an LRANGE of the job's trigger queue
// (O(1) plus the queued triggers), a few microseconds of server time, and
// no script; the reads share the client's connection. So Jobs costs three
// round trips for the registry plus one per job, divided among the
// concurrent reads: a fleet of 1,000 jobs is 1,000 pipelines of six
// commands. Each job's state is read at its own Job.Now (see the package
// documentation for how consistent one read is); different jobs are read
// at slightly different instants.
//
// When some registry entries cannot be read, it returns the jobs of the
// readable ones with an error that wraps a *fleet.UnreadableError, as
// Replicas does; a job only unreadable replicas have is not among them.
func (in *Inspector) Jobs(ctx context.Context) ([]Job, error) {
	replicas, unreadable, err := in.readRegistry(ctx)
	if err != nil {
		return nil, fmt.Errorf("inspect: jobs: %w", err)
	}
	regs, names := registrations(replicas)
	jobs := make([]Job, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, in.concurrency)
	var wg sync.WaitGroup
	for i, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			jobs[i], errs[i] = in.jobState(ctx, name, regs[name], replicas)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("inspect: jobs: job %q: %w", names[i], err)
		}
	}
	if unreadable != nil {
		return jobs, fmt.Errorf("inspect: jobs: %w", unreadable)
	}
	return jobs, nil
}

// Job returns one job of the fleet with its state: a registry read and
// one job state read. It fails with ErrUnknownJob when no live replica has
// registered name. When some registry entries cannot be read, it returns
// the job as the readable replicas registered it with an error that wraps
// a *fleet.UnreadableError, as Replicas does.
func (in *Inspector) Job(ctx context.Context, name string) (Job, error) {
	regs, replicas, unreadable, err := in.resolve(ctx, "job", name)
	if err != nil {
		return Job{}, err
	}
	j, err := in.jobState(ctx, name, regs, replicas)
	if err != nil {
		return Job{}, fmt.Errorf("inspect: job %q: %w", name, err)
	}
	if unreadable != nil {
		return j, fmt.Errorf("inspect: job %q: %w", name, unreadable)
	}
	return j, nil
}

// jobState reads the state of the job registered as regs (at least one)
// and builds its Job.
func (in *Inspector) jobState(ctx context.Context, name string, regs []Registration, replicas []fleet.Replica) (Job, error) {
	first := regs[0].Job
	j := Job{Name: name, Key: first.Key, Schedule: first.Schedule, Spec: first.Spec, Registrations: regs}
	for _, r := range regs[1:] {
		if r.Job.Fingerprint != first.Fingerprint || r.Job.Key != first.Key {
			j.Conflict = true
		}
	}
	st, err := in.store.JobState(ctx, j.Key)
	if err != nil {
		return Job{}, err
	}
	j.Now = st.Now.UTC()
	if st.Holder != nil {
		h := st.Holder
		j.Holder = &Holder{
			Owner: h.Owner, Replica: replicaOf(h.Owner, name, replicas), Fence: h.Fence,
			LeaseHash: lease.ShortID(h.IDHash), AcquiredAt: h.AcquiredAt.UTC(), ExpiresAt: h.ExpiresAt.UTC(),
			Left: h.ExpiresAt.Sub(st.Now),
		}
	}
	if st.LastRound > 0 {
		j.LastOccurrence = time.UnixMilli(st.LastRound).UTC()
	}
	if st.Status != nil {
		s := *st.Status
		s.Occurrence, s.Started = s.Occurrence.UTC(), s.Started.UTC()
		j.LastRun = &Run{Status: s, Replica: replicaOf(s.Owner, name, replicas)}
	}
	if st.Pause != nil {
		p := *st.Pause
		p.At = p.At.UTC()
		j.Pause = &p
	}
	j.PendingTriggers = st.Triggers
	if next, err := fleet.Next(first.Spec, st.Now); err == nil && !next.IsZero() {
		j.Next = next.UTC()
	}
	return j, nil
}

// replicaOf returns the live replica whose default holder label
// ("<replica ID>/<job>") owner is, or "".
func replicaOf(owner, job string, replicas []fleet.Replica) string {
	for _, r := range replicas {
		if len(owner) == len(r.ID)+1+len(job) && owner[:len(r.ID)] == r.ID && owner[len(r.ID)] == '/' && owner[len(r.ID)+1:] == job {
			return r.ID
		}
	}
	return ""
}
