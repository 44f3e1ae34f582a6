package scheduler

import (
	"context"
	"sync/atomic"
)

// runBaseShards is how many parents the runs' contexts spread over.
const runBaseShards = 32

// runBases are the parents of the runs' heartbeat contexts: children of
// the scheduler's base context, cancelled with it and with its cause
// (ErrShutdown). A run's heartbeat context registers with its parent when
// the run starts and removes itself when it ends, each under the parent's
// mutex. At a large firing group's occurrence thousands of runs start and
// end at once; with one parent they queued on its mutex (in a mutex
// profile at 10,000 jobs x 3, the heartbeats' removals were 38% of the
// time goroutines waited for a lock). The runs take the parents in turn.
type runBases struct {
	next    atomic.Uint32
	ctxs    [runBaseShards]context.Context
	cancels [runBaseShards]context.CancelFunc
}

// init makes the parents, children of base.
func (b *runBases) init(base context.Context) {
	for i := range b.ctxs {
		b.ctxs[i], b.cancels[i] = context.WithCancel(base)
	}
}

// take returns the parent of the next run's context.
func (b *runBases) take() context.Context {
	return b.ctxs[b.next.Add(1)%runBaseShards]
}

// release frees the parents once base is cancelled (which has cancelled
// them, with its cause).
func (b *runBases) release() {
	for _, cancel := range b.cancels {
		cancel()
	}
}
