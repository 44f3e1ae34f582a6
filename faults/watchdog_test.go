package faults

import (
	"sync"
	"testing"
	"time"

	"github.com/cronguard/cronguard/faults/history"
)

// The stall watchdog wakes up every watchdogTick; a wake-up later than
// stallThreshold past its due time means the harness, and most likely the
// whole machine, stopped running: on a shared machine every process,
// replicas, proxies and redis-server included, can go unscheduled for
// seconds. The checker treats a recorded stall as a pause of every replica
// (except a replica that recorded an event inside the window: it ran).
const (
	watchdogTick   = 100 * time.Millisecond
	stallThreshold = 500 * time.Millisecond
)

// watchdog records stall faults in hist until its stop is called.
type watchdog struct {
	hist   *history.Writer
	stopc  chan struct{}
	done   sync.WaitGroup
	stalls int
}

// startWatchdog starts the watchdog; stop it (and wait for it) with stop.
func startWatchdog(t *testing.T, hist *history.Writer) *watchdog {
	t.Helper()
	w := &watchdog{hist: hist, stopc: make(chan struct{})}
	w.done.Add(1)
	go w.run(t)
	return w
}

func (w *watchdog) run(t *testing.T) {
	defer w.done.Done()
	ticker := time.NewTicker(watchdogTick)
	defer ticker.Stop()
	lastMono, lastWall := history.Mono(), history.Wall()
	for {
		select {
		case <-w.stopc:
			return
		case <-ticker.C:
		}
		mono, wall := history.Mono(), history.Wall()
		if late := time.Duration(mono-lastMono) - watchdogTick; late > stallThreshold {
			w.stalls++
			start := history.Event{Kind: history.FaultStart, Fault: history.FaultStall, Target: history.TargetMachine,
				Mono: lastMono, Wall: lastWall}
			end := history.Event{Kind: history.FaultEnd, Fault: history.FaultStall, Target: history.TargetMachine,
				Mono: mono, Wall: wall}
			for _, e := range []history.Event{start, end} {
				if err := w.hist.Write(e); err != nil {
					t.Errorf("watchdog: %v", err)
				}
			}
		}
		lastMono, lastWall = mono, wall
	}
}

// stop ends the watchdog and waits for it; it returns the stalls recorded.
func (w *watchdog) stop() int {
	close(w.stopc)
	w.done.Wait()
	return w.stalls
}
