package inspect

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// DefaultTriggerTTL is how long a trigger waits to be run unless WithTTL
// says otherwise.
const DefaultTriggerTTL = time.Minute

// maxEarlyDone bounds the end messages of a job's runs kept while a
// trigger's ID is not yet known (between its queuing and AddTrigger's
// return).
const maxEarlyDone = 1024

// TriggerOption configures one Trigger call.
type TriggerOption func(*triggerConfig) error

type triggerConfig struct {
	ttl  time.Duration
	wait time.Duration // 0: do not wait
}

// WithTTL sets how long the trigger waits to be run: a trigger that no
// replica has run within ttl lapses. Default: DefaultTriggerTTL (1 minute).
// ttl must be a whole number of milliseconds from 1ms to
// fleet.MaxTriggerTTL.
func WithTTL(ttl time.Duration) TriggerOption {
	return func(c *triggerConfig) error {
		if ttl <= 0 || ttl%time.Millisecond != 0 || ttl > fleet.MaxTriggerTTL {
			return invalid("WithTTL", "ttl must be a whole number of milliseconds from 1ms to %s, got %s", fleet.MaxTriggerTTL, ttl)
		}
		c.ttl = ttl
		return nil
	}
}

// WithWait makes Trigger wait, up to timeout, for the triggered run to
// end, and return its outcome. timeout must be positive. Default: no wait.
func WithWait(timeout time.Duration) TriggerOption {
	return func(c *triggerConfig) error {
		if timeout <= 0 {
			return invalid("WithWait", "timeout must be positive, got %s", timeout)
		}
		c.wait = timeout
		return nil
	}
}

// TriggerResult is what Trigger did.
type TriggerResult struct {
	// Trigger is the trigger queued: its ID, job key, who asked, when it
	// was queued and when it lapses (the store's times).
	Trigger fleet.Trigger
	// Done says the triggered run ended (WithWait only): Outcome is then
	// its fleet.Status.Outcome ("succeeded", "failed", "panicked" or
	// "timed_out") and Error its error as the status keeps it.
	Done           bool
	Outcome, Error string
	// Run is the run's recorded status, when Done and the store still held
	// it as the job's last run; nil otherwise (a run that lost its lease
	// records none).
	Run *Run
}

// Succeeded reports whether the triggered run ended and succeeded.
func (r TriggerResult) Succeeded() bool { return r.Done && r.Outcome == "succeeded" }

// Trigger asks the fleet to run the job now, once, on one live replica
// that has it, under the job's lease, and returns the trigger. by says who
// asks (it must pass lease.ValidateOwner).
//
// The trigger is queued in the store and announced on the control
// channel; the first replica whose acquire finds the job's lease free
// takes it and runs the job. If the job is running, the trigger waits in
// the queue and the replica whose run ends takes it. A triggered run
// claims no occurrence: the schedule goes on as before, and a scheduled
// occurrence that comes due while it runs is skipped as locked, as with
// any run. Triggers lapse after their TTL (WithTTL) if no replica took
// them. Several triggers queue and run one after another.
//
// It refuses a job no live replica has registered (ErrUnknownJob) and a
// paused job (ErrPaused: resume it first). The pause is checked before
// the trigger is queued; a pause set between the two does not stop it.
//
// With WithWait it subscribes to the control channel before queuing the
// trigger, and waits for the run's end (the replica announces it with a
// fleet.MessageDone), for the timeout, or for ctx. It returns the outcome
// in the result, with a nil error whatever the outcome. When the timeout
// passes first it returns the result and an error wrapping ErrWaitTimeout:
// the trigger is still queued (until its TTL) or its run in progress.
func (in *Inspector) Trigger(ctx context.Context, name, by string, opts ...TriggerOption) (TriggerResult, error) {
	const op = "trigger"
	c := triggerConfig{ttl: DefaultTriggerTTL}
	for _, opt := range opts {
		if opt == nil {
			return TriggerResult{}, invalid(op, "option must not be nil")
		}
		if err := opt(&c); err != nil {
			return TriggerResult{}, err
		}
	}
	if err := checkBy(op, by); err != nil {
		return TriggerResult{}, err
	}
	regs, replicas, _, err := in.resolve(ctx, op, name) // acts on the job as the readable entries name it
	if err != nil {
		return TriggerResult{}, err
	}
	key := regs[0].Job.Key
	p, paused, err := in.store.PauseOf(ctx, key)
	if err != nil {
		return TriggerResult{}, fmt.Errorf("inspect: %s %q: %w", op, name, err)
	}
	if paused {
		return TriggerResult{}, fmt.Errorf("%w: %s %q: paused by %q since %s (%q): resume it first",
			ErrPaused, op, name, p.By, p.At.UTC().Format(time.RFC3339), p.Note)
	}

	var w *doneWaiter
	if c.wait > 0 {
		nkey, err := lease.NormalizeKey(key)
		if err != nil {
			return TriggerResult{}, fmt.Errorf("inspect: %s %q: %w", op, name, err)
		}
		w = &doneWaiter{key: nkey, wake: make(chan struct{}, 1)}
		stop, err := in.store.Subscribe(ctx, w.hear)
		if err != nil {
			return TriggerResult{}, fmt.Errorf("inspect: %s %q: subscribe to the control channel: %w", op, name, err)
		}
		defer stop()
	}
	t, err := in.store.AddTrigger(ctx, key, by, c.ttl)
	if err != nil {
		if t.ID != "" {
			// Queued, but not announced: a replica runs it after its
			// current run ends, or at its next resync.
			return TriggerResult{Trigger: t}, fmt.Errorf("inspect: %s %q: trigger %s queued, but its announcement failed: %w", op, name, t.ID, err)
		}
		return TriggerResult{}, fmt.Errorf("inspect: %s %q: %w", op, name, err)
	}
	in.log.Info("job triggered", slog.String("job", name), slog.String("by", by), slog.String("trigger", t.ID))
	res := TriggerResult{Trigger: t}
	if w == nil {
		return res, nil
	}
	return in.waitDone(ctx, w, res, name, replicas, c.wait)
}

// waitDone waits for the end of res.Trigger's run.
func (in *Inspector) waitDone(ctx context.Context, w *doneWaiter, res TriggerResult, name string, replicas []fleet.Replica, timeout time.Duration) (TriggerResult, error) {
	id := res.Trigger.ID
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		m, found, resync := w.check(id)
		switch {
		case found:
			res.Done, res.Outcome, res.Error = true, m.Outcome, m.Error
			res.Run = in.runOf(ctx, name, res.Trigger, replicas)
			return res, nil
		case resync:
			// Messages may have been lost while the subscription was down:
			// the run's status tells whether it ended meanwhile.
			if run := in.runOf(ctx, name, res.Trigger, replicas); run != nil {
				return finished(res, run), nil
			}
		}
		select {
		case <-w.wake:
		case <-timer.C:
			if run := in.runOf(ctx, name, res.Trigger, replicas); run != nil {
				return finished(res, run), nil
			}
			return res, fmt.Errorf("%w: trigger %s of %q after %s; it stays queued until %s unless a replica takes it",
				ErrWaitTimeout, id, name, timeout, res.Trigger.Expires.UTC().Format(time.RFC3339))
		case <-ctx.Done():
			return res, fmt.Errorf("inspect: trigger %s of %q: waiting for its run: %w", id, name, context.Cause(ctx))
		}
	}
}

// finished fills res from the run's status.
func finished(res TriggerResult, run *Run) TriggerResult {
	res.Done, res.Outcome, res.Error, res.Run = true, run.Outcome, run.Error, run
	return res
}

// runOf returns the last run of job name if it is t's, else nil (also
// when the status cannot be read).
func (in *Inspector) runOf(ctx context.Context, name string, t fleet.Trigger, replicas []fleet.Replica) *Run {
	st, ok, err := in.store.LastStatus(ctx, t.Key)
	if err != nil || !ok || st.Trigger != t.ID {
		return nil
	}
	st.Occurrence, st.Started = st.Occurrence.UTC(), st.Started.UTC()
	return &Run{Status: st, Replica: replicaOf(st.Owner, name, replicas)}
}

// doneWaiter collects, from the control channel, the end messages of one
// job's triggered runs, and whether the subscription was restored.
type doneWaiter struct {
	key  string
	wake chan struct{}

	mu     sync.Mutex
	done   []fleet.Message
	resync bool
}

// hear is the subscription's callback.
func (w *doneWaiter) hear(m fleet.Message) {
	switch {
	case m.Kind == fleet.MessageDone && m.Key == w.key:
		w.mu.Lock()
		if len(w.done) < maxEarlyDone {
			w.done = append(w.done, m)
		}
		w.mu.Unlock()
	case m.Kind == fleet.MessageResync:
		w.mu.Lock()
		w.resync = true
		w.mu.Unlock()
	default:
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// check returns the end message of trigger id if it came, and whether the
// subscription was restored since the last check. Other triggers' end
// messages are dropped.
func (w *doneWaiter) check(id string) (m fleet.Message, found, resync bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.done {
		if d.Trigger == id {
			m, found = d, true
		}
	}
	w.done = w.done[:0]
	resync, w.resync = w.resync, false
	return m, found, resync
}
