package heartbeat

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// Group starts heartbeats that need no goroutine until their first
// renewal is due. Most leases of short work are released before a third
// of their TTL has passed: with Start each of them still costs a
// goroutine, two timers and two channels; with a Group it costs a place
// in the group's queue, and one goroutine (the group's) starts the
// heartbeat's own goroutine when its first renewal, or its cut-off, comes
// due. Its heartbeats behave as Start's in every other way: the context,
// the renewals, the loss causes, Stop and the events are the same.
//
// A Group's heartbeats keep its clock, which must be the clock the store
// measured the leases' deadlines on: lease.ClockOf(store) for one store.
// Close stops the group's goroutine; a heartbeat still waiting then
// starts its goroutine at once, and every heartbeat still ends with its
// Stop.
type Group struct {
	clock clockwork.Clock

	mu     sync.Mutex
	queue  waitQueue // by due time
	closed bool

	wake chan struct{} // capacity 1: the earliest due time changed
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the group's goroutine returns
}

// NewGroup returns a Group whose heartbeats keep clock (a real clock when
// nil), and starts its goroutine; Close stops it.
func NewGroup(clock clockwork.Clock) *Group {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	g := &Group{clock: clock, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// Start is the package's Start for a heartbeat of the group: the same
// input, rules, context and Stop, but no goroutine until the first
// renewal (or the cut-off, if it comes first) is due. The heartbeat keeps
// the group's clock: WithClock, when given, must name it. After Close,
// Start starts the heartbeat's goroutine at once.
func (g *Group) Start(parent context.Context, store lease.Store, l *lease.Lease, opts ...Option) (context.Context, Stop, error) {
	h, err := newHeartbeat(parent, store, l, opts, g.clock)
	if err != nil {
		return nil, nil, err
	}
	h.group = g
	h.due = h.firstDue()
	g.mu.Lock()
	if g.closed {
		h.state = stateRunning
		g.mu.Unlock()
		go h.run()
		return h.ctx, h.stop, nil
	}
	h.state = stateWaiting
	heap.Push(&g.queue, h)
	earliest := h.index == 0
	g.mu.Unlock()
	if earliest {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
	return h.ctx, h.stop, nil
}

// Close stops the group's goroutine and waits for it. The heartbeats
// still waiting start their goroutines now; each still ends with its Stop
// (or a loss, or its parent). Close is idempotent.
func (g *Group) Close() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		for _, h := range g.queue {
			h.index, h.state = -1, stateRunning
			go h.run()
		}
		g.queue = nil
		close(g.stop)
	}
	g.mu.Unlock()
	<-g.done
}

// firstDue is when the heartbeat first has something to do: its first
// renewal, one interval after the acquire was sent (which the lease's
// deadline tells: Deadline = sent + ttl - drift), or its cut-off if that
// comes first.
func (h *heartbeat) firstDue() time.Time {
	ttl := h.lease.TTL
	renew := h.lease.Deadline.Add(-(ttl - leasekit.Drift(ttl))).Add(h.cfg.interval)
	if cutoff := h.lease.Deadline.Add(-h.cfg.margin); cutoff.Before(renew) {
		return cutoff
	}
	return renew
}

// dequeue takes h out of the queue if it still waits there, and reports
// whether it did: h then never runs (Stop ends it).
func (g *Group) dequeue(h *heartbeat) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h.state != stateWaiting {
		return false
	}
	heap.Remove(&g.queue, h.index)
	h.state = stateEnded
	return true
}

// run is the group's goroutine: it starts the goroutine of each heartbeat
// whose due time has come, and sleeps until the next one, a new earliest
// one, or Close.
func (g *Group) run() {
	defer close(g.done)
	for {
		g.mu.Lock()
		now := g.clock.Now()
		for len(g.queue) > 0 && !g.queue[0].due.After(now) {
			h := heap.Pop(&g.queue).(*heartbeat)
			h.state = stateRunning
			go h.run()
		}
		next := time.Duration(-1)
		if len(g.queue) > 0 {
			next = g.queue[0].due.Sub(now)
		}
		g.mu.Unlock()

		if next < 0 {
			select {
			case <-g.stop:
				return
			case <-g.wake:
			}
			continue
		}
		timer := g.clock.NewTimer(next)
		select {
		case <-g.stop:
			timer.Stop()
			return
		case <-g.wake:
			timer.Stop()
		case <-timer.Chan():
		}
	}
}

// waitQueue is a min-heap of waiting heartbeats by due time
// (container/heap); each knows its index, so that Stop can take it out.
type waitQueue []*heartbeat

func (q waitQueue) Len() int           { return len(q) }
func (q waitQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q waitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *waitQueue) Push(x any) {
	h := x.(*heartbeat)
	h.index = len(*q)
	*q = append(*q, h)
}
func (q *waitQueue) Pop() any {
	old := *q
	n := len(old)
	h := old[n-1]
	old[n-1] = nil
	h.index = -1
	*q = old[:n-1]
	return h
}
