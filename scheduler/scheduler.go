package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/lease"
)

// Scheduler runs registered jobs once per occurrence across every replica
// that shares its lease store. Build one with New, Register jobs, Start it,
// and Shutdown it. Its methods are safe for concurrent use.
type Scheduler struct {
	store      lease.Store
	storeClock clockwork.Clock // the clock the store measures lease deadlines on
	cfg        config
	log        *slog.Logger
	missed     *missedLog // the warnings of occurrences that ran nowhere, gathered per firing group
	stats      counters

	// claimCtx ends claims' retries and waits; Shutdown cancels it first,
	// with cause ErrShutdown, once firings have stopped.
	claimCtx     context.Context
	cancelClaims context.CancelCauseFunc
	// base is the ancestor of every run context (through runBases);
	// Shutdown cancels it next, with cause ErrShutdown.
	base       context.Context
	cancelBase context.CancelCauseFunc
	runBases   runBases // the runs' parents, children of base (runbase.go)

	// queue feeds the claim workers (fire.go); workers counts them and
	// the claims that wait for a job's lease.
	queue   *claimQueue
	workers sync.WaitGroup

	// control is the control plane (fleet.go), nil without one; view is
	// its latest snapshot of the fleet, nil until it read one; backups
	// holds the claims made as a backup until their grace ends (prefer.go,
	// backup.go).
	control *controlPlane
	view    atomic.Pointer[fleetView]
	offset  clockOffset // this replica's clock against the store's (offset.go)
	backups *backupQueue
	// releases batches the runs' releases with status when the store is
	// a fleet.BatchReleaser and there is a control plane (release_batch.go);
	// nil otherwise. Set in Start, before any run.
	releases *releaseBatcher
	// handOns counts the hand-ons of waiting triggers being published,
	// each on a goroutine of its own (handon.go); Shutdown waits for them
	// after the runs, once handOnsClosed makes later ones publish on their
	// caller's goroutine.
	handOnMu      sync.Mutex
	handOns       sync.WaitGroup
	handOnsClosed bool

	mu       sync.Mutex
	jobs     map[string]*job   // by lease key: the registered jobs, and removed ones whose run or claim still goes
	groups   map[string]*group // by schedule (plan.groupKey)
	order    []*job            // the registered jobs, in the order they were registered
	started  bool
	closed   bool
	cron     gocron.Scheduler         // nil until Start and after Shutdown
	nworkers int                      // claim workers started
	limits   map[string]*sharedLimit  // the concurrency limits, by name (limit.go)
	configs  map[jobConfig]*jobConfig // the jobs' options, one of each (shareConfig)
}

// registration is what Register was given for a job: immutable. A claim
// and a run keep the registration they started with, so a job registered
// again after Remove runs with its new registration while a run of the old
// one finishes.
type registration struct {
	// jobConfig holds the job's options, shared by the registrations
	// whose options are equal (Scheduler.shareConfig): most jobs of a
	// replica have the same ones, and a registration is kept per job.
	*jobConfig
	schedule Schedule
	plan     plan
	fn       func(ctx context.Context) error
	limit    *lease.Semaphore // the semaphore of limitSpec, set by Scheduler.add
}

// New returns a Scheduler whose jobs take their leases from store. It starts
// nothing: jobs fire only after Start. Options are validated; the first
// invalid one is returned (wrapping ErrInvalidArgument).
func New(store lease.Store, opts ...Option) (*Scheduler, error) {
	if store == nil {
		return nil, invalidOption("New: store must not be nil")
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt == nil {
			return nil, invalidOption("New: option must not be nil")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	s := &Scheduler{
		store:      store,
		storeClock: lease.ClockOf(store),
		cfg:        cfg,
		log:        cfg.logger.With(slog.String("replica", cfg.instanceID)),
		queue:      newClaimQueue(),
		backups:    newBackupQueue(),
		jobs:       make(map[string]*job),
		groups:     make(map[string]*group),
		limits:     make(map[string]*sharedLimit),
	}
	s.missed = newMissedLog(s.log, cfg.clock)
	s.claimCtx, s.cancelClaims = context.WithCancelCause(context.Background())
	s.base, s.cancelBase = context.WithCancelCause(context.Background())
	s.runBases.init(s.base)
	return s, nil
}

// Register adds a job: at each occurrence of sch, the replica that wins the
// job's lease calls fn with a context that carries the run (RunFromContext)
// and its fencing token (fencing.FromContext), and that is cancelled when
// the lease is lost, the job times out, or the scheduler shuts down
// (context.Cause says which).
//
// name must be non-empty and unique within the Scheduler; prefixed with the
// key prefix it is the lease key, so it obeys the lease key rules (valid
// UTF-8, at most lease.MaxKeyBytes bytes). Every replica must register the
// job under the same name with the same schedule.
//
// Register may be called before or after Start; a job registered after Start
// fires from its next occurrence. It fails with ErrShutdown after Shutdown,
// ErrDuplicateJob for a name already registered, ErrInvalidSchedule for a
// schedule that cannot be used, and ErrInvalidArgument for anything else.
func (s *Scheduler) Register(name string, sch Schedule, fn func(ctx context.Context) error, opts ...JobOption) error {
	switch {
	case name == "":
		return invalidOption("Register: job name must not be empty")
	case !utf8.ValidString(name):
		return invalidOption("Register %q: job name must be valid UTF-8", name)
	case sch == nil:
		return invalidOption("Register %q: schedule must not be nil", name)
	case fn == nil:
		return invalidOption("Register %q: job function must not be nil", name)
	}
	key, err := lease.NormalizeKey(JobKeyPrefix + name)
	if err != nil {
		return fmt.Errorf("%w: Register %q: lease key: %w", ErrInvalidArgument, name, err)
	}
	jc := jobConfig{ttl: DefaultTTL, overlap: OverlapSkip, attempts: DefaultAttempts}
	for _, opt := range opts {
		if opt == nil {
			return invalidOption("Register %q: job option must not be nil", name)
		}
		if err := opt(&jc); err != nil {
			return fmt.Errorf("Register %q: %w", name, err)
		}
	}
	p, err := sch.compile(s.cfg.location, s.cfg.clock.Now().In(s.cfg.location))
	if err != nil {
		return fmt.Errorf("Register %q: %w", name, err)
	}
	reg := &registration{jobConfig: &jc, schedule: sch, plan: p, fn: s.wrap(fn)}

	j, started, err := s.add(name, key, reg)
	if err != nil {
		return err
	}
	if started {
		if s.control != nil {
			s.control.added(j)
		}
		j.deliver(input{kind: inCatchUp})
		s.fireWithinLead(j)
	}
	return nil
}

// add registers reg as the job with lease key key, and adds it to gocron
// when it runs already, and reports whether it does. A job removed while
// its run (or claim) still goes is the same job registered again: its
// owner keeps the run, so the two never overlap here.
func (s *Scheduler) add(name, key string, reg *registration) (j *job, started bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, fmt.Errorf("Register %q: %w", name, ErrShutdown)
	}
	j = s.jobs[key]
	if j != nil && j.registered() != nil {
		return nil, false, fmt.Errorf("%w: %q (lease key %q) is already registered", ErrDuplicateJob, name, key)
	}
	if reg.limitSpec != nil {
		sem, err := s.semaphoreFor(name, reg.limitSpec)
		if err != nil {
			return nil, false, err
		}
		reg.limit = sem
	}
	if j != nil && reg.owner == "" && j.name != name {
		// Registered again, under another spelling of the name (one NFC
		// form): the job keeps its first name, and ownerOf would build
		// the owner from it; the owner is the name Register was given.
		reg.owner = truncateUTF8(s.cfg.instanceID+"/"+name, lease.MaxOwnerLen) // reg's own jobConfig: not shared yet
	}
	reg.jobConfig = s.shareConfig(reg.jobConfig)
	gk := reg.plan.groupKey()
	g, grouped := s.groups[gk]
	if grouped {
		reg.plan = g.plan // equal plans (same group key): one per group, not per job
		if sameSchedule(reg.schedule, g.schedule) {
			reg.schedule = g.schedule // so is an equal schedule
		}
	} else {
		g = &group{key: gk, plan: reg.plan, schedule: reg.schedule, lead: s.leadOf(reg.plan)}
	}
	if j == nil {
		if strings.HasPrefix(key, JobKeyPrefix) && key[len(JobKeyPrefix):] == name {
			name = key[len(JobKeyPrefix):] // the key holds the name: one string per job, not two
		}
		j = &job{s: s, name: name, key: key}
		j.st.reg = reg
		s.jobs[key] = j
	} else {
		j.deliver(input{kind: inRegister, reg: reg}) // decides nothing to do: safe under s.mu
	}
	if s.started && !grouped {
		if err := s.schedule(s.cron, g, j); err != nil {
			s.unregisterLocked(j, reg)
			return nil, false, err
		}
	}
	g.add(j)
	s.groups[g.key] = g
	s.order = append(s.order, j)
	if s.started {
		s.startWorkersLocked()
	}
	return j, s.started, nil
}

// Start starts firing the registered jobs and returns at once; jobs with
// WithCatchUp first try to catch up their latest occurrence. It fails with
// ErrAlreadyStarted when called twice and ErrShutdown after Shutdown.
func (s *Scheduler) Start() error {
	jobs, err := s.start()
	if err != nil {
		return err
	}
	for _, j := range jobs {
		j.deliver(input{kind: inCatchUp}) // queues at most one claim per job, never waits
		s.fireWithinLead(j)
	}
	return nil
}

// start starts gocron and the claim workers and returns the jobs.
func (s *Scheduler) start() ([]*job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, fmt.Errorf("Start: %w", ErrShutdown)
	case s.started:
		return nil, ErrAlreadyStarted
	}
	g, err := gocron.NewScheduler(
		gocron.WithClock(s.cfg.clock),
		gocron.WithLocation(s.cfg.location),
	)
	if err != nil {
		return nil, fmt.Errorf("scheduler: Start: gocron: %w", err)
	}
	for _, j := range s.order {
		grp := s.groups[j.registered().plan.groupKey()]
		if grp.members()[0] != j {
			continue // scheduled with the group's first member
		}
		if err := s.schedule(g, grp, j); err != nil {
			_ = g.Shutdown()
			return nil, err
		}
	}
	// Before any firing: runs read s.control and s.releases without a
	// lock.
	s.startControlPlane()
	s.startReleases()
	s.workers.Add(1)
	go s.backupPass()
	g.Start()
	s.cron, s.started = g, true
	s.startWorkersLocked()
	s.log.Info("scheduler started", slog.Int("jobs", len(s.order)))
	return slices.Clone(s.order), nil
}

// schedule adds group grp, whose first member is j, to g. A one-time
// schedule whose time has passed is logged and left out.
func (s *Scheduler) schedule(g gocron.Scheduler, grp *group, j *job) error {
	now := s.cfg.clock.Now().In(s.cfg.location)
	def, opts, ok := grp.plan.definition(now, grp.lead)
	if !ok {
		ms := slices.Clone(grp.members())
		if !slices.Contains(ms, j) {
			ms = append(ms, j)
		}
		for _, m := range ms {
			if reg := m.registered(); reg != nil {
				s.log.Warn("job has no occurrence left; it will not run", slog.String("job", m.name), slog.String("schedule", reg.schedule.String()))
			}
		}
		return nil
	}
	// The task only maps the firing to its occurrence and delivers it to
	// the group's jobs (fire.go); it never waits on the store or on user
	// code, so gocron's own concurrency modes play no part.
	opts = append(opts, gocron.WithName(grp.key))
	grp.scheduledAt(now) // before gocron can fire it
	gj, err := g.NewJob(def, gocron.NewTask(func() { s.fireGroup(grp) }), opts...)
	if err != nil {
		return fmt.Errorf("%w: Register %q: gocron: %w", ErrInvalidSchedule, j.name, err)
	}
	id := gj.ID()
	grp.id.Store(&id)
	return nil
}

// Stats returns running totals of what this Scheduler did, over all jobs.
func (s *Scheduler) Stats() Stats { return s.stats.snapshot() }

// JobStats returns running totals of what this Scheduler did for the job
// registered as name, and false if there is none. A job registered again
// while a run of it, removed, still went keeps its totals.
func (s *Scheduler) JobStats(name string) (Stats, bool) {
	key, err := lease.NormalizeKey(JobKeyPrefix + name)
	if err != nil {
		return Stats{}, false
	}
	s.mu.Lock()
	j := s.jobs[key]
	s.mu.Unlock()
	if j == nil || j.registered() == nil {
		return Stats{}, false
	}
	return j.stats.snapshot(), true
}

// jobByKey returns the registered job with lease key key, or nil.
func (s *Scheduler) jobByKey(key string) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[key]
}

func truncateUTF8(str string, n int) string {
	if len(str) <= n {
		return str
	}
	for n > 0 && !utf8.RuneStart(str[n]) {
		n--
	}
	return str[:n]
}
