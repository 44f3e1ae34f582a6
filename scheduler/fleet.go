package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// The control plane (package fleet), when the lease store offers it: the
// registry entry of this replica, kept by one owned goroutine; conflicts
// with other replicas, reported; the control channel, on which triggers
// arrive.
const (
	// DefaultRegistryRefresh is how often a replica refreshes its registry
	// entry unless WithRegistryRefresh says otherwise. The entry lapses
	// after registryLapse refreshes are missed.
	DefaultRegistryRefresh = 5 * time.Second
	registryLapse          = 3
)

// controlPlane is a Scheduler's part of the fleet's control plane.
type controlPlane struct {
	s       *Scheduler
	store   fleet.Store
	refresh time.Duration
	started time.Time

	dirty  chan struct{} // a job was added or removed: publish again
	resync chan struct{} // the control channel reconnected: look for the triggers and registry changes it may have missed
	// changed: another replica announced that its registry entry changed
	// (fleet.MessageFleet): read the registry now, or when announceGap
	// has passed since the last read.
	changed chan struct{}
	stop    chan struct{}
	done    chan struct{}
	unsub   func()

	// subscribing, while the control channel's subscription is missing
	// after a failure, spaces the tries to make it again; subscribeAt is
	// when the next may be made (subscribe.go). Only the control loop
	// reads and writes them.
	subscribing *backoff.ExponentialBackOff
	subscribeAt time.Time

	// indexFailing: the last read of the fleet's index of open
	// occurrences failed (warned once, until a read works again). Only
	// the control loop reads and writes it.
	indexFailing bool
	// announceFailing: the last announcement of the index's due entries
	// failed (warned once while it lasts).
	announceFailing bool
	// indexPolls counts the polls of the index, read or not
	// (index_readers.go: a replica that is not a reader reads at some).
	indexPolls int

	// lastRead is when the registry was last read. Only the control loop
	// reads and writes it.
	lastRead time.Time

	// The clock offset published in the entry (offset.go): offset is the
	// latest measure worth publishing, offsetMeasured whether there is one,
	// offsetSent whether a publish carried one. Only the control loop
	// reads and writes them.
	offset         time.Duration
	offsetMeasured bool
	offsetSent     bool

	// unreadable names the replicas whose registry entries the last read
	// could not decode (fleet.UnreadableError), warned about once while
	// the same set lasts. Only the control loop reads and writes it.
	unreadable string

	mu       sync.Mutex
	reported map[string]bool // the conflicts reported and not resolved since, by ID
	// fresh are the jobs registered since the control loop last looked
	// for their waiting triggers (added).
	fresh []*job
}

// fingerprint identifies a job's schedule and options: replicas that
// register one name with different fingerprints disagree on when or how it
// runs.
func (reg *registration) fingerprint() string {
	b := fmt.Appendf(nil, "%s|%s|ttl=%d|timeout=%d|catchup=%d",
		reg.schedule.String(), reg.plan.groupKey(), reg.ttl, reg.timeout, reg.catchUp)
	// Options added later count only when set, so that a job without them
	// keeps the fingerprint older versions give it.
	if reg.overlap != OverlapSkip {
		b = fmt.Appendf(b, "|overlap=%d", int(reg.overlap))
	}
	if reg.limitSpec != nil {
		b = fmt.Appendf(b, "|limit=%q/%d", reg.limitSpec.name, reg.limitSpec.n)
	}
	if reg.attempts != DefaultAttempts || reg.retry != nil || reg.attemptWindow > 0 {
		b = fmt.Appendf(b, "|attempts=%d/%t/%d", reg.attempts, reg.retry != nil, reg.attemptWindow)
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// Version is the version of cronguard in this binary, as its build info
// records it ("devel" when built from a work tree).
var Version = func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if info.Main.Path == modulePath && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	for _, d := range info.Deps {
		if d.Path == modulePath && d.Version != "(devel)" {
			return d.Version
		}
	}
	return "devel"
}()

const modulePath = "github.com/cronguard/cronguard"

// startControlPlane sets s.control and starts the registry goroutine,
// which publishes this replica and subscribes to the control channel; it
// does nothing when the store is not a fleet.Store or the control plane is
// off. A store that cannot be reached now is tried again by the goroutine.
// start calls it, with s.mu held, before any job can fire: runs read
// s.control without a lock.
func (s *Scheduler) startControlPlane() {
	fs, ok := s.store.(fleet.Store)
	if !ok || s.cfg.registryRefresh < 0 {
		return
	}
	cp := &controlPlane{
		s: s, store: fs, refresh: s.cfg.registryRefresh, started: s.cfg.clock.Now(),
		dirty: make(chan struct{}, 1), resync: make(chan struct{}, 1), changed: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		reported: make(map[string]bool),
	}
	s.control = cp
	cp.markDirty()
	go cp.run()
}

// added tells the registry goroutine that j was registered after Start:
// it publishes this replica again and looks for triggers that wait for j.
// A trigger queued while no replica had the job (its last replica removed
// it, or stopped, and handed it on to nobody) was announced to nobody
// able to run it, and no later message announces it again.
func (cp *controlPlane) added(j *job) {
	cp.mu.Lock()
	cp.fresh = append(cp.fresh, j)
	cp.mu.Unlock()
	cp.markDirty()
}

// takeFresh returns the jobs added since its last call.
func (cp *controlPlane) takeFresh() []*job {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	fresh := cp.fresh
	cp.fresh = nil
	return fresh
}

// markDirty asks the registry goroutine to publish this replica again.
func (cp *controlPlane) markDirty() {
	select {
	case cp.dirty <- struct{}{}:
	default:
	}
}

// close stops the goroutine and the subscription and drops this replica's
// entry, with a fresh bounded context.
func (cp *controlPlane) close() {
	close(cp.stop)
	<-cp.done
	ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
	defer cancel()
	if err := cp.store.DropReplica(ctx, cp.s.cfg.instanceID); err != nil {
		cp.s.log.Warn("could not remove this replica from the registry; it lapses by itself", slog.Any("error", err))
		return
	}
	cp.announce(ctx)
}

// announce tells the other replicas that this replica's registry entry
// changed (fleet.MessageFleet), so that they read the registry now: until
// then their views of the fleet differ from this one's, and a choice of a
// preferred replica that differs costs an extra claim (both think they
// are chosen) or a grace of lateness (neither does). Without it they see
// the change at their next refresh. A failure costs only that.
func (cp *controlPlane) announce(ctx context.Context) {
	if err := cp.store.Publish(ctx, fleet.Message{Kind: fleet.MessageFleet, Replica: cp.s.cfg.instanceID}); err != nil {
		cp.s.log.Debug("could not announce a change of this replica's registry entry", slog.Any("error", err))
	}
}

// run is the registry goroutine: it publishes the entry when jobs change
// (and when the store lost it), refreshes it every period otherwise, looks
// for conflicts when the fleet changed, and keeps the control channel
// subscribed.
func (cp *controlPlane) run() {
	defer close(cp.done)
	defer func() {
		if cp.unsub != nil {
			cp.unsub()
		}
	}()
	ticker := cp.s.cfg.clock.NewTicker(cp.refresh)
	defer ticker.Stop()
	poll := cp.s.cfg.clock.NewTicker(resumePoll) // the fleet's index of open occurrences (resume.go)
	defer poll.Stop()
	var generation int64 = -1
	publish := false              // the entry must be written (again); tried now and then at every tick until it is
	ticks := 0                    // since the fleet was last read
	var readLater clockwork.Timer // the read for an announced change, due a gap after the last read
	var readLaterC <-chan time.Time
	defer func() {
		if readLater != nil {
			readLater.Stop()
		}
	}()
	for {
		select {
		case <-cp.stop:
			return
		case <-cp.dirty:
			publish = true
			if fresh := cp.takeFresh(); len(fresh) > 0 {
				cp.lookForTriggersOf(fresh)
			}
		case <-cp.resync:
			// The subscription lost messages: triggers, and the
			// announcements of registry changes (this replica's view
			// would lack a replica that joined, or keep one that left,
			// until a refresh read the registry).
			cp.lookForTriggers()
			if cp.readFleet() {
				ticks = 0
			}
		case <-cp.changed:
			if readLaterC == nil { // else a read is due: it sees this change too
				// At once (a timer of 0 fires at once) if the last read
				// is a gap old.
				readLater = cp.s.cfg.clock.NewTimer(max(announceGap-cp.s.cfg.clock.Since(cp.lastRead), 0))
				readLaterC = readLater.Chan()
			}
		case <-readLaterC:
			readLater, readLaterC = nil, nil
			if cp.readFleet() {
				ticks = 0
			}
		case <-poll.Chan():
			cp.lookForOpen()
			cp.subscribeIfDue()
			if cp.offsetSent || !cp.s.view.Load().others() {
				continue // neither publishes nor subscribes: that waits for the refresh
			}
			cp.sampleOffset()
			if !cp.measureOffset() {
				continue
			}
			publish = true // the first measure of the clock's offset: publish it at once
		case <-ticker.Chan():
			cp.sampleOffset()
			if cp.measureOffset() {
				publish = true
			}
			if publish {
				break
			}
			ticks++
			gen, found, ok := cp.refreshEntry()
			switch {
			case ok && !found:
				publish = true // lapsed, or the store lost it
			case ok && (gen != generation || ticks >= registryLapse && cp.s.view.Load().others()):
				// The generation changes when a replica publishes or
				// leaves, not when its entry lapses: while the view has
				// other replicas, read at least once per lapse, so that
				// one that died leaves it.
				if cp.readFleet() {
					generation, ticks = gen, 0
				}
			}
		}
		if publish && cp.publish() {
			publish, generation = false, -1
			// Read the fleet now, not a refresh later: a replica that
			// joins a running fleet stops racing at once. And tell the
			// others, which read it too.
			if cp.readFleet() {
				ticks = 0
			}
			ctx, cancel := cp.opContext()
			cp.announce(ctx)
			cancel()
		}
		cp.subscribe()
	}
}

// sampleOffset asks a store that is a fleet.ServerClock for its time: one
// sample of the clock offset (offset.go) whatever this replica acquires. A
// replica whose clock runs far behind may never win an acquire to sample
// it from: its backups claim its occurrences before it fires.
func (cp *controlPlane) sampleOffset() {
	sc, ok := cp.store.(fleet.ServerClock)
	if !ok {
		return
	}
	ctx, cancel := cp.opContext()
	defer cancel()
	clock := cp.s.cfg.clock
	sent := clock.Now()
	t, err := sc.ServerTime(ctx)
	if err != nil {
		cp.s.log.Debug("could not read the store's time", slog.Any("error", err))
		return
	}
	cp.s.offset.observe(sent, clock.Now(), t)
}

// measureOffset takes the clock offset measured since it was last called
// (offset.go) and reports whether the entry should be published again
// for it: the first measure, or one that moved more than offsetRepublish
// from the published one. Only replicas that back one another up read
// it: a replica alone in its view does not publish it.
func (cp *controlPlane) measureOffset() bool {
	if !cp.s.view.Load().others() {
		return false // the samples wait for the first view with other replicas
	}
	off, ok := cp.s.offset.take()
	if !ok || cp.offsetMeasured && !republish(cp.offset, off) {
		return false
	}
	cp.offset, cp.offsetMeasured = off, true
	return true
}

// measureFirstOffset measures the clock offset before the entry is first
// published, so that the first entry carries it. Published later, the
// offset is a second publish, and each publish changes the generation: at
// its next refresh every replica reads the whole registry again (every
// entry, and each distinct job list once). A fleet of R replicas starting
// together then reads R entries R times more, while its first firings are
// due. It takes
// up to firstOffsetSamples reads of the store's time, fewer when one is
// precise; without a precise one, the offset is published once measured
// (measureOffset), as before.
func (cp *controlPlane) measureFirstOffset() {
	if cp.offsetMeasured {
		return
	}
	if _, ok := cp.store.(fleet.ServerClock); !ok {
		return
	}
	for range firstOffsetSamples {
		cp.sampleOffset()
		if cp.s.offset.precise() {
			break
		}
	}
	if off, ok := cp.s.offset.take(); ok {
		cp.offset, cp.offsetMeasured = off, true
	}
}

// announceGap is the least time between two reads of the registry for
// changes other replicas announce: when a fleet starts or restarts all at
// once, each replica reads the registry (every entry, and each distinct
// job list once) at most once per gap, not once per replica that joins.
const announceGap = time.Second

// firstOffsetSamples is how many reads of the store's time a replica takes
// at most before its first publish.
const firstOffsetSamples = 3

// entryTTL is how long the registry entry lives unless refreshed.
func (cp *controlPlane) entryTTL() time.Duration {
	return (registryLapse * cp.refresh).Truncate(time.Millisecond)
}

func (cp *controlPlane) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), min(cp.refresh, MaxCleanup))
}

// publish writes this replica's entry and reports the conflicts it has;
// it reports whether the entry was written.
func (cp *controlPlane) publish() bool {
	cp.measureFirstOffset()
	r := fleet.Replica{ID: cp.s.cfg.instanceID, Version: Version, Started: cp.started, Refresh: cp.refresh,
		ClockOffset: cp.offset, ReadsIndex: true}
	for _, j := range cp.s.jobsSnapshot() {
		if reg := j.registered(); reg != nil {
			r.Jobs = append(r.Jobs, fleet.Job{Name: j.name, Key: j.key, Schedule: reg.schedule.String(),
				Spec: reg.plan.groupKey(), Fingerprint: reg.fingerprint()})
		}
	}
	ctx, cancel := cp.opContext()
	defer cancel()
	conflicts, err := cp.store.PublishReplica(ctx, r, cp.entryTTL())
	if !cp.readable(err) {
		cp.s.log.Warn("could not publish this replica to the registry; trying again at the next refresh", slog.Any("error", err))
		return false
	}
	cp.offsetSent = cp.offsetSent || cp.offsetMeasured
	cp.report(conflicts)
	return true
}

// refreshEntry keeps the entry alive and returns the fleet's generation,
// whether the entry was still there, and whether the store answered.
func (cp *controlPlane) refreshEntry() (gen int64, found, ok bool) {
	ctx, cancel := cp.opContext()
	defer cancel()
	gen, found, err := cp.store.RefreshReplica(ctx, cp.s.cfg.instanceID, cp.entryTTL())
	if err != nil {
		cp.s.log.Warn("could not refresh this replica's registry entry", slog.Any("error", err))
		return 0, false, false
	}
	return gen, found, true
}

// readFleet reads the registry's live replicas: it reports the fleet's
// conflicts that involve this replica and replaces the view that chooses
// a preferred replica per occurrence (prefer.go), from the entries it
// could read (see readable). It reports whether the store answered; if
// not, the view stays as it was.
func (cp *controlPlane) readFleet() bool {
	ctx, cancel := cp.opContext()
	defer cancel()
	all, err := cp.store.Replicas(ctx)
	if !cp.readable(err) {
		cp.s.log.Warn("could not read the registry", slog.Any("error", err))
		return false
	}
	self := cp.s.cfg.instanceID
	cp.report(fleet.Involving(fleet.FindConflicts(all), self))
	mine := map[string]string{}
	for _, j := range cp.s.jobsSnapshot() {
		if reg := j.registered(); reg != nil {
			mine[j.key] = reg.fingerprint()
		}
	}
	cp.s.view.Store(newFleetView(self, all, mine))
	cp.lastRead = cp.s.cfg.clock.Now()
	return true
}

// readable reports whether a registry call that returned err answered
// with what it could read: err is nil, or a *fleet.UnreadableError, whose
// entries are left out of this replica's view (it chooses among the
// others; the rounds keep an occurrence to one run whatever the views).
// The unreadable entries are warned about once while the same set lasts.
func (cp *controlPlane) readable(err error) bool {
	var u *fleet.UnreadableError
	switch {
	case err == nil:
		cp.unreadable = ""
		return true
	case !errors.As(err, &u):
		return false
	}
	if ids := strings.Join(u.Replicas, ","); ids != cp.unreadable {
		cp.unreadable = ids
		cp.s.log.Warn("registry entries this replica cannot read are left out of its view of the fleet",
			slog.Int("replicas", len(u.Replicas)), slog.Any("error", err))
	}
	return true
}

// report logs and emits each conflict of conflicts, the full set that
// involves this replica, once while it lasts: a conflict reported before
// is not reported again, and one that is no longer in the set is
// forgotten, so that it is reported again if it comes back.
func (cp *controlPlane) report(conflicts []fleet.Conflict) {
	now := make(map[string]bool, len(conflicts))
	var fresh []fleet.Conflict
	cp.mu.Lock()
	for _, c := range conflicts {
		id := fmt.Sprintf("%s|%s|%s|%s|%s", c.Job, c.Replicas[0], c.Jobs[0].Fingerprint, c.Replicas[1], c.Jobs[1].Fingerprint)
		if !cp.reported[id] && !now[id] {
			fresh = append(fresh, c)
		}
		now[id] = true
	}
	cp.reported = now
	cp.mu.Unlock()
	for _, c := range fresh {
		cp.s.log.Error("job registered differently on two replicas: they disagree on when or how it runs",
			slog.String("job", c.Job),
			slog.String("replica", c.Replicas[0]), slog.String("schedule", c.Jobs[0].Schedule),
			slog.String("other_replica", c.Replicas[1]), slog.String("other_schedule", c.Jobs[1].Schedule))
		j := cp.s.jobByKey(c.Key)
		if j == nil {
			continue
		}
		cp.s.emit(j, Event{Kind: EventConflict, Job: c.Job, Conflict: c})
	}
}

// onMessage handles the control channel. It never waits on the store: a
// resync is handed to the registry goroutine.
func (cp *controlPlane) onMessage(m fleet.Message) {
	switch m.Kind {
	case fleet.MessageTrigger:
		if j := cp.s.jobByKey(m.Key); j != nil {
			j.deliver(input{kind: inTrigger})
		}
	case fleet.MessageOpen:
		if m.Replica == cp.s.cfg.instanceID {
			return // this replica's own announcement of the index: offered as it read it
		}
		if j := cp.s.jobByKey(m.Key); j != nil && m.Round > 0 {
			j.deliver(input{kind: inResume, f: firing{ms: m.Round, kind: firedByResume}})
		}
	case fleet.MessageUnclaimed:
		if j := cp.s.jobByKey(m.Key); j != nil && m.Round > 0 {
			j.deliver(input{kind: inUnclaimed, f: firing{ms: m.Round}})
		}
	case fleet.MessageFleet:
		if m.Replica == cp.s.cfg.instanceID {
			return // this replica's own: it read the registry as it published
		}
		select {
		case cp.changed <- struct{}{}:
		default: // a read is pending already: it sees this change too
		}
	case fleet.MessageResync:
		select {
		case cp.resync <- struct{}{}:
		default: // one is pending already
		}
	}
}

// lookForTriggers looks for triggers that wait for this replica's jobs,
// which no subscription heard of (queued before this replica subscribed,
// or while its subscription was down), on the control loop (not the
// subscription's goroutine), stopped by close.
func (cp *controlPlane) lookForTriggers() {
	cp.lookForTriggersOf(cp.s.jobsSnapshot())
}

// lookForTriggersOf looks for triggers that wait for jobs and hands each
// job that has some to its owner. A store that is a fleet.TriggerCounter
// is asked for triggerBatch jobs per round trip: one read per job held the
// control loop, and with it the fleet's announcements and the registry's
// refresh, for seconds at 10,000 jobs.
func (cp *controlPlane) lookForTriggersOf(jobs []*job) {
	tc, batched := cp.store.(fleet.TriggerCounter)
	if !batched {
		for _, j := range jobs {
			if cp.stopped() {
				return
			}
			ctx, cancel := cp.opContext()
			n, err := cp.store.PendingTriggers(ctx, j.key)
			cancel()
			if err == nil && n > 0 {
				j.deliver(input{kind: inTrigger})
			}
		}
		return
	}
	keys := make([]string, 0, min(len(jobs), triggerBatch))
	counts := make([]int, min(len(jobs), triggerBatch))
	for len(jobs) > 0 && !cp.stopped() {
		chunk := jobs[:min(len(jobs), triggerBatch)]
		jobs = jobs[len(chunk):]
		keys = keys[:0]
		for _, j := range chunk {
			keys = append(keys, j.key)
		}
		ctx, cancel := cp.opContext()
		err := tc.PendingTriggersBatch(ctx, keys, counts[:len(keys)])
		cancel()
		unread, rest := lease.UnreadKeys(err)
		if !rest {
			// The store is failing: the other batches would wait out
			// their timeouts too. A resubscription looks again; until
			// then a trigger waits for its job's next run to end.
			cp.s.log.Debug("could not look for waiting triggers; they run after the job's next run instead", slog.Any("error", err))
			return
		}
		if len(unread) > 0 {
			// Counted 0; the others are counted. Such a job cannot be
			// triggered at all (the queue cannot take one).
			cp.s.log.Warn("the trigger queues of some jobs hold another type than a list: they cannot be triggered until those keys are deleted",
				slog.Any("jobs", namesAt(chunk, unread)), slog.Any("error", err))
		}
		for i, j := range chunk {
			if counts[i] > 0 {
				j.deliver(input{kind: inTrigger})
			}
		}
	}
}

// namesAt names the jobs of chunk at indexes at, up to 10 of them.
func namesAt(chunk []*job, at []int) []string {
	names := make([]string, 0, min(len(at), 10))
	for _, i := range at[:min(len(at), 10)] {
		names = append(names, chunk[i].name)
	}
	if len(at) > 10 {
		names = append(names, fmt.Sprintf("and %d more", len(at)-10))
	}
	return names
}

// triggerBatch is how many jobs' triggers lookForTriggers asks a
// fleet.TriggerCounter for in one round trip.
const triggerBatch = 1000

// stopped reports whether close asked the control loop to stop.
func (cp *controlPlane) stopped() bool {
	select {
	case <-cp.stop:
		return true
	default:
		return false
	}
}
