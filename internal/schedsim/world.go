package schedsim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/scheduler"
)

// Config says what to simulate.
type Config struct {
	Seed     int64
	Duration time.Duration // simulated time of operations; default one hour
	// Full draws the full fleet: 2-4 replicas, 3-6 jobs as often as every
	// 5 seconds, registry refreshes every 5 seconds. Without it (the
	// normal suite) a fleet has 2-3 replicas and 2-4 jobs at least 15
	// seconds apart, refreshing every 30 seconds: about a quarter of the
	// work per simulated hour, with the same operations and faults.
	Full bool
	// Log, when not nil, receives the replicas' logs at debug level, each
	// line with the simulated time since the start (t) and the replica
	// (r): what a failing seed's history leaves out.
	Log io.Writer
}

// world is one simulation: the store, the replicas, the operator.
type world struct {
	cfg   Config
	rng   *rand.Rand
	h     *History
	rec   *recorder
	srv   *server
	op    *inspect.Inspector
	db    *sql.DB
	fence *fencing.Table
	log   *slog.Logger

	jobs     []JobSpec
	bases    []*base
	regN     int
	attemptN int
	running  atomic.Int64   // job functions executing
	stopping sync.WaitGroup // Shutdown calls in flight

	triggerSerial map[string]int // trigger ID -> its operation's serial, for behaviourOf
	mu            sync.Mutex     // guards triggerSerial
}

// base is one replica across its incarnations.
type base struct {
	n      int
	gen    int
	offset time.Duration // its clock's offset from the store's
	wanted map[int]int   // job index -> the limit n it registers it with
	cur    *incarnation  // nil while down
}

// incarnation is one process of a replica.
type incarnation struct {
	life  *Life
	view  *view
	clock *skewClock
	s     *scheduler.Scheduler
	dead  chan struct{} // closed at a crash
	regs  map[int]*Reg  // job index -> its registration, while registered
	parts *Interval     // the partition in force, if any
}

// skewClock is the bubble's clock offset by a duration that can jump.
// Timers keep the bubble's pace, so a scheduler on it fires when its own
// Now reaches the scheduled time.
type skewClock struct {
	clockwork.Clock
	off atomic.Int64
}

func (c *skewClock) Now() time.Time                  { return c.Clock.Now().Add(time.Duration(c.off.Load())) }
func (c *skewClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *skewClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Run simulates cfg and returns its history. It must run inside a
// testing/synctest bubble; every goroutine it starts has ended when it
// returns.
func Run(cfg Config) (*History, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = time.Hour
	}
	start := time.Now()
	h := &History{Seed: cfg.Seed, Start: start, End: start.Add(cfg.Duration), Pauses: make(map[string][]Interval)}
	w := &world{cfg: cfg, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)), h: h,
		log: simLog(cfg.Log, start), triggerSerial: make(map[string]int)}
	w.rec = newRecorder(h)
	var err error
	if w.srv, err = newServer(w.rec); err != nil {
		return nil, err
	}
	if w.op, err = inspect.New(&view{srv: w.srv, client: "operator"}, inspect.WithLogger(w.log)); err != nil {
		return nil, err
	}
	if w.db, w.fence, err = openFenceDB(); err != nil {
		return nil, err
	}
	defer w.db.Close()

	nJobs, nReplicas := 2+w.rng.IntN(3), 2+w.rng.IntN(2)
	if cfg.Full {
		nJobs, nReplicas = 3+w.rng.IntN(4), 2+w.rng.IntN(3)
	}
	for i := range nJobs {
		w.jobs = append(w.jobs, genJob(w.rng, i, start, cfg.Full))
		genPolicy(cfg.Seed, &w.jobs[len(w.jobs)-1])
	}
	h.Jobs = w.jobs
	h.Replicas = nReplicas
	for i := range h.Replicas {
		b := &base{n: i + 1, wanted: make(map[int]int)}
		b.offset = time.Duration(w.rng.IntN(601)-300) * time.Millisecond
		for j := range w.jobs {
			if i == 0 || w.rng.IntN(5) > 0 {
				b.wanted[j] = w.jobs[j].LimitN
			}
		}
		w.bases = append(w.bases, b)
	}
	ops := w.plan()
	for _, b := range w.bases {
		w.start(b)
	}
	for _, o := range ops {
		time.Sleep(time.Until(o.at))
		o.apply()
	}
	time.Sleep(time.Until(h.End))
	w.finish()
	return h, nil
}

// step is one planned operation.
type step struct {
	at    time.Time
	apply func()
}

// plan draws the operations of the simulation.
func (w *world) plan() []step {
	var steps []step
	end := w.h.End
	at := func(d time.Duration) time.Time { return w.h.Start.Add(d).Truncate(time.Millisecond) }
	randAt := func() time.Time { return at(time.Duration(w.rng.Int64N(int64(w.cfg.Duration)))) }
	add := func(t time.Time, fn func()) {
		if t.Before(end) {
			steps = append(steps, step{at: t, apply: fn})
		}
	}
	hours := float64(w.cfg.Duration) / float64(time.Hour)
	count := func(perHour float64) int {
		n := perHour * hours
		k := int(n)
		if w.rng.Float64() < n-float64(k) {
			k++
		}
		return k
	}
	pickBase := func() *base { return w.bases[w.rng.IntN(len(w.bases))] }
	pickJob := func() int { return w.rng.IntN(len(w.jobs)) }
	secs := func(lo, hi int) time.Duration {
		return time.Duration(lo+w.rng.IntN(hi-lo+1))*time.Second + time.Duration(w.rng.IntN(1000))*time.Millisecond
	}

	for range count(4) { // remove, and register again later
		b, j, t := pickBase(), pickJob(), randAt()
		add(t, func() { w.remove(b, j) })
		add(t.Add(secs(0, 300)), func() { w.register(b, j, w.jobs[j].LimitN) })
	}
	for range count(3) { // remove and register at once, sometimes with another limit
		b, j, t := pickBase(), pickJob(), randAt()
		n := w.jobs[j].LimitN
		if n > 0 && w.rng.IntN(3) == 0 {
			n++
		}
		add(t, func() { w.remove(b, j); w.register(b, j, n) })
	}
	for range count(3) { // pause, resume later
		j, t := pickJob(), randAt()
		add(t, func() { w.pause(j) })
		add(t.Add(secs(10, 600)), func() { w.resume(j) })
	}
	for i := range count(12) {
		j, t, ttl := pickJob(), randAt(), secs(10, 120).Truncate(time.Millisecond)
		add(t, func() { w.trigger(j, ttl, i) })
	}
	for range count(2) { // graceful shutdown, restart later
		b, t, bound := pickBase(), randAt(), secs(1, 30)
		add(t, func() { w.shutdown(b, bound) })
		add(t.Add(secs(0, 180)), func() { w.restart(b) })
	}
	for range count(2) { // crash, restart later
		b, t := pickBase(), randAt()
		add(t, func() { w.crash(b) })
		add(t.Add(secs(0, 180)), func() { w.restart(b) })
	}
	for range count(2) { // partition, heal later
		b, t := pickBase(), randAt()
		add(t, func() { w.partition(b) })
		add(t.Add(secs(2, 90)), func() { w.heal(b) })
	}
	for range count(1) { // store outage
		t := randAt()
		add(t, w.outage)
		add(t.Add(secs(1, 60)), w.outageEnd)
	}
	for range count(0.5) {
		add(randAt(), w.wipe)
	}
	for range count(3) { // clock jump, within the skew a round allows, mostly
		b, t := pickBase(), randAt()
		off := time.Duration(w.rng.IntN(1201)-600) * time.Millisecond
		if w.rng.IntN(5) == 0 {
			off = time.Duration(w.rng.IntN(8001)-4000) * time.Millisecond
		}
		add(t, func() { w.jump(b, off) })
	}
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].at.Before(steps[b].at) })
	return steps
}

// start starts a new incarnation of b with the jobs it wants.
func (w *world) start(b *base) {
	b.gen++
	id := fmt.Sprintf("r%d.%d", b.n, b.gen)
	life := &Life{ID: id, Base: fmt.Sprintf("r%d", b.n), From: time.Now()}
	inc := &incarnation{life: life, view: &view{srv: w.srv, client: id}, clock: &skewClock{Clock: clockwork.NewRealClock()},
		dead: make(chan struct{}), regs: make(map[int]*Reg)}
	inc.clock.off.Store(int64(b.offset))
	life.Offsets = []ClockOffset{{At: life.From, Off: b.offset}}
	refresh := 30 * time.Second
	if w.cfg.Full {
		refresh = scheduler.DefaultRegistryRefresh
	}
	s, err := scheduler.New(inc.view, scheduler.WithLogger(w.log.With("r", id)), scheduler.WithInstanceID(id),
		scheduler.WithClock(inc.clock), scheduler.WithObserver(w.observe), scheduler.WithRegistryRefresh(refresh),
		scheduler.WithClaimLead(claimLeadOf(w.cfg.Seed, b.n)))
	if err != nil {
		panic(fmt.Sprintf("schedsim: scheduler.New: %v", err))
	}
	inc.s = s
	w.rec.with(func(h *History) { h.Lives = append(h.Lives, life) })
	b.cur = inc
	for j := range w.jobs {
		if n, ok := b.wanted[j]; ok {
			w.registerOn(inc, j, n)
		}
	}
	if err := s.Start(); err != nil {
		panic(fmt.Sprintf("schedsim: Start: %v", err))
	}
}

func (w *world) observe(e scheduler.Event) {
	if e.Kind == scheduler.EventRenewed {
		return
	}
	w.rec.event(e)
}

// registerOn registers job j on inc with the limit's n.
func (w *world) registerOn(inc *incarnation, j, limitN int) {
	spec := &w.jobs[j]
	w.regN++
	reg := &Reg{N: w.regN, Replica: inc.life.ID, Job: spec.Name, From: time.Now(), Limit: limitN}
	err := inc.s.Register(spec.Name, spec.schedule(), w.jobFunc(inc, reg, spec), spec.options(limitN)...)
	if err != nil {
		reg.Err = err.Error()
	} else {
		inc.regs[j] = reg
	}
	w.rec.with(func(h *History) { h.Regs = append(h.Regs, reg) })
}

func (w *world) register(b *base, j, limitN int) {
	b.wanted[j] = limitN
	inc := b.cur
	switch {
	case inc == nil:
		w.rec.op(Op{Kind: "register", Replica: fmt.Sprintf("r%d", b.n), Job: w.jobs[j].Name, Skipped: "replica down"})
		return
	case inc.regs[j] != nil:
		w.rec.op(Op{Kind: "register", Replica: inc.life.ID, Job: w.jobs[j].Name, Skipped: "registered already"})
		return
	}
	w.registerOn(inc, j, limitN)
	w.rec.op(Op{Kind: "register", Replica: inc.life.ID, Job: w.jobs[j].Name})
}

func (w *world) remove(b *base, j int) {
	delete(b.wanted, j)
	inc := b.cur
	if inc == nil || inc.regs[j] == nil {
		w.rec.op(Op{Kind: "remove", Replica: fmt.Sprintf("r%d", b.n), Job: w.jobs[j].Name, Skipped: "not registered"})
		return
	}
	err := inc.s.Remove(w.jobs[j].Name)
	reg := inc.regs[j]
	delete(inc.regs, j)
	now := time.Now()
	w.rec.with(func(*History) { reg.To = now })
	o := Op{Kind: "remove", Replica: inc.life.ID, Job: w.jobs[j].Name}
	if err != nil {
		o.Err = err.Error()
	}
	w.rec.op(o)
}

func (w *world) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

func (w *world) pause(j int) {
	ctx, cancel := w.opContext()
	defer cancel()
	name := w.jobs[j].Name
	err := w.op.Pause(ctx, name, "sim", "simulated pause")
	o := Op{Kind: "pause", Job: name}
	if err != nil {
		o.Err = err.Error()
	} else {
		now := time.Now()
		w.rec.with(func(h *History) {
			ivs := h.Pauses[name]
			if len(ivs) == 0 || !ivs[len(ivs)-1].To.IsZero() {
				h.Pauses[name] = append(ivs, Interval{From: now})
			}
		})
	}
	w.rec.op(o)
}

func (w *world) resume(j int) {
	ctx, cancel := w.opContext()
	defer cancel()
	name := w.jobs[j].Name
	_, err := w.op.Resume(ctx, name)
	o := Op{Kind: "resume", Job: name}
	if err != nil {
		o.Err = err.Error()
	} else {
		w.closePause(name, time.Now())
	}
	w.rec.op(o)
}

func (w *world) closePause(name string, now time.Time) {
	w.rec.with(func(h *History) {
		if ivs := h.Pauses[name]; len(ivs) > 0 && ivs[len(ivs)-1].To.IsZero() {
			ivs[len(ivs)-1].To = now
		}
	})
}

func (w *world) trigger(j int, ttl time.Duration, serial int) {
	ctx, cancel := w.opContext()
	defer cancel()
	name := w.jobs[j].Name
	res, err := w.op.Trigger(ctx, name, "sim", inspect.WithTTL(ttl))
	o := Op{Kind: "trigger", Job: name, Arg: ttl}
	if err != nil {
		o.Err = err.Error()
	}
	if res.Trigger.ID != "" {
		w.mu.Lock()
		w.triggerSerial[res.Trigger.ID] = serial
		w.mu.Unlock()
		w.rec.with(func(h *History) {
			h.Triggers = append(h.Triggers, TriggerRec{ID: res.Trigger.ID, Job: name, At: time.Now(), Expires: res.Trigger.Expires})
		})
	}
	w.rec.op(o)
}

// stop ends inc's life: Shutdown in a goroutine of its own, bounded by
// bound, whose return is recorded.
func (w *world) stop(inc *incarnation, how string, bound time.Duration) {
	now := time.Now()
	w.rec.with(func(*History) {
		if how != "" {
			inc.life.To, inc.life.How = now, how
		}
		if inc.parts != nil {
			// A partition that the stop ends: the checks see it as they
			// see a healed one (live tells both from a stop's end).
			iv := *inc.parts
			iv.To = now
			inc.life.Severed = append(inc.life.Severed, iv)
		}
		for _, reg := range inc.regs {
			reg.To = now
		}
	})
	rec := &ShutdownRec{Replica: inc.life.ID, Crash: how == "crash", Begin: now, Bound: bound}
	w.rec.with(func(h *History) { h.Shutdowns = append(h.Shutdowns, rec) })
	w.stopping.Add(1)
	go func() {
		defer w.stopping.Done()
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		err := inc.s.Shutdown(ctx)
		now := time.Now()
		w.rec.with(func(*History) { rec.Returned, rec.Err = now, err })
	}()
}

func (w *world) shutdown(b *base, bound time.Duration) {
	inc := b.cur
	if inc == nil {
		w.rec.op(Op{Kind: "shutdown", Replica: fmt.Sprintf("r%d", b.n), Skipped: "replica down"})
		return
	}
	b.cur = nil
	w.rec.op(Op{Kind: "shutdown", Replica: inc.life.ID, Arg: bound})
	w.stop(inc, "shutdown", bound)
}

// crash kills inc: its store is out of reach from now on (no heartbeat,
// no release), its job functions stop at once, and nothing it does after
// counts; its Scheduler is then shut down against the unreachable store
// so that its goroutines end.
func (w *world) crash(b *base) {
	inc := b.cur
	if inc == nil {
		w.rec.op(Op{Kind: "crash", Replica: fmt.Sprintf("r%d", b.n), Skipped: "replica down"})
		return
	}
	b.cur = nil
	inc.view.severed.Store(true)
	close(inc.dead)
	w.rec.op(Op{Kind: "crash", Replica: inc.life.ID})
	w.stop(inc, "crash", 2*time.Minute)
}

func (w *world) restart(b *base) {
	if b.cur != nil {
		w.rec.op(Op{Kind: "restart", Replica: b.cur.life.ID, Skipped: "running"})
		return
	}
	w.start(b)
	w.rec.op(Op{Kind: "restart", Replica: b.cur.life.ID})
}

func (w *world) partition(b *base) {
	inc := b.cur
	if inc == nil || inc.parts != nil {
		w.rec.op(Op{Kind: "partition", Replica: fmt.Sprintf("r%d", b.n), Skipped: "down or partitioned"})
		return
	}
	inc.view.severed.Store(true)
	iv := &Interval{From: time.Now()}
	inc.parts = iv
	w.rec.op(Op{Kind: "partition", Replica: inc.life.ID})
}

func (w *world) heal(b *base) {
	inc := b.cur
	if inc == nil || inc.parts == nil {
		w.rec.op(Op{Kind: "heal", Replica: fmt.Sprintf("r%d", b.n), Skipped: "not partitioned"})
		return
	}
	w.healInc(inc)
	w.rec.op(Op{Kind: "heal", Replica: inc.life.ID})
}

func (w *world) healInc(inc *incarnation) {
	inc.view.severed.Store(false)
	if err := w.srv.restore(inc.view); err != nil {
		panic(fmt.Sprintf("schedsim: restore the control channel of %s: %v", inc.life.ID, err))
	}
	iv := *inc.parts
	iv.To = time.Now()
	inc.parts = nil
	w.rec.with(func(*History) { inc.life.Severed = append(inc.life.Severed, iv) })
}

func (w *world) outage() {
	w.srv.setDown(true)
	now := time.Now()
	w.rec.with(func(h *History) { h.Outages = append(h.Outages, Interval{From: now}) })
	w.rec.op(Op{Kind: "outage"})
}

func (w *world) outageEnd() {
	w.srv.setDown(false)
	now := time.Now()
	w.rec.with(func(h *History) {
		if n := len(h.Outages); n > 0 && h.Outages[n-1].To.IsZero() {
			h.Outages[n-1].To = now
		}
	})
	w.rec.op(Op{Kind: "outage end"})
}

func (w *world) wipe() {
	if err := w.srv.wipe(); err != nil {
		panic(fmt.Sprintf("schedsim: wipe: %v", err))
	}
	now := time.Now()
	w.rec.with(func(h *History) { h.Wipes = append(h.Wipes, now) })
	for _, j := range w.jobs {
		w.closePause(j.Name, now) // the pause keys went with the data
	}
	w.rec.op(Op{Kind: "wipe"})
}

func (w *world) jump(b *base, off time.Duration) {
	b.offset = off
	inc := b.cur
	if inc == nil {
		w.rec.op(Op{Kind: "clock jump", Replica: fmt.Sprintf("r%d", b.n), Arg: off, Skipped: "replica down"})
		return
	}
	inc.clock.off.Store(int64(off))
	now := time.Now()
	w.rec.with(func(*History) {
		inc.life.Jumps = append(inc.life.Jumps, now)
		inc.life.Offsets = append(inc.life.Offsets, ClockOffset{At: now, Off: off})
	})
	w.rec.op(Op{Kind: "clock jump", Replica: inc.life.ID, Arg: off})
}

// finish ends the simulation: partitions heal, the store comes back, every
// replica shuts down with a minute's bound, and every job function ends.
func (w *world) finish() {
	if w.h.Outages != nil && w.h.Outages[len(w.h.Outages)-1].To.IsZero() {
		w.outageEnd()
	}
	for _, b := range w.bases {
		if inc := b.cur; inc != nil {
			if inc.parts != nil {
				w.healInc(inc)
			}
			b.cur = nil
			w.stop(inc, "", time.Minute)
		}
	}
	w.stopping.Wait()
	for deadline := time.Now().Add(time.Hour); w.running.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Second)
	}
	// A job that outlived its replica's Shutdown releases its lease when
	// it returns, retrying for up to scheduler.MaxCleanup against a store
	// its replica may no longer reach (a crash): the bubble ends once
	// those tries have.
	time.Sleep(scheduler.MaxCleanup + time.Second)
}

// jobFunc is the function registration reg of job spec runs on inc.
func (w *world) jobFunc(inc *incarnation, reg *Reg, spec *JobSpec) func(context.Context) error {
	return func(ctx context.Context) error {
		w.running.Add(1)
		defer w.running.Add(-1)
		run, _ := scheduler.RunFromContext(ctx)
		key := run.Trigger
		if key != "" {
			w.mu.Lock()
			if n, ok := w.triggerSerial[key]; ok {
				key = fmt.Sprintf("trigger %d", n)
			}
			w.mu.Unlock()
		}
		b := behaviourOf(w.cfg.Seed, spec, run.Occurrence, key, run.Attempt)
		a := &Attempt{Job: spec.Name, Replica: inc.life.ID, Reg: reg.N, Occurrence: run.Occurrence, Fence: run.Fence,
			Trigger: run.Trigger, CatchUp: run.CatchUp, Attempt: run.Attempt, Behaviour: behaviourNames[b.kind], Start: time.Now()}
		w.rec.with(func(h *History) {
			w.attemptN++
			a.N = w.attemptN
			h.Attempts = append(h.Attempts, a)
		})
		stop := context.AfterFunc(ctx, func() {
			now, cause := time.Now(), context.Cause(ctx)
			w.rec.with(func(*History) { a.Cancelled, a.Cause = now, fmt.Sprint(cause) })
		})
		defer func() {
			stop()
			now := time.Now()
			w.rec.with(func(*History) {
				if a.Return.IsZero() {
					a.Return = now
				}
			})
		}()
		if err := w.write(ctx, inc, a); errors.Is(err, fencing.ErrDuplicate) && a.Attempt > 1 {
			// An earlier attempt committed the occurrence's effect: this
			// one is done, as a job written for completion says.
			return err
		}
		timer := time.NewTimer(b.d)
		defer timer.Stop()
		done := ctx.Done()
		if b.kind == behaveStubborn {
			done = nil
		}
		select {
		case <-timer.C:
		case <-done:
			return context.Cause(ctx)
		case <-inc.dead:
			now := time.Now()
			w.rec.with(func(*History) { a.Crashed = now })
			return nil
		}
		switch b.kind {
		case behaveFail:
			return errors.New("simulated failure")
		case behavePanic:
			panic("simulated panic")
		case behaveGoexit:
			runtime.Goexit()
		case behaveStubborn:
			w.write(ctx, inc, a) // late, perhaps after its lease
		}
		return nil
	}
}

// write commits the attempt's effect through fencing, unless its replica
// is dead, and returns what fencing answered.
func (w *world) write(ctx context.Context, inc *incarnation, a *Attempt) error {
	select {
	case <-inc.dead:
		return nil
	default:
	}
	guarded := ctx.Err() == nil
	err := writeOnce(ctx, w.db, w.fence, a.Job)
	wr := Write{At: time.Now(), Guarded: guarded, Committed: err == nil, Duplicate: errors.Is(err, fencing.ErrDuplicate)}
	if err != nil {
		wr.Err = err.Error()
	}
	w.rec.with(func(*History) { a.Writes = append(a.Writes, wr) })
	return err
}

// simLog returns the replicas' logger: one that writes to out at debug
// level with times relative to start, or one that discards when out is
// nil.
func simLog(out io.Writer, start time.Time) *slog.Logger {
	if out == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.String("t", "+"+time.Since(start).String())
		}
		return a
	}}))
}
