package schedscale

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// record is a buffer that a replica's goroutines fill without a lock:
// each value takes the next index with one atomic add. A mutex on every
// run's start (the observer's EventStarted) and end (the job) was the
// lock a replica waited for most at 10,000 jobs, so the harness added to
// the lateness it measured. The buffer is reserved before the heap is
// measured; values past its end, should a run outlast the reservation, are
// appended under a mutex. values is read once every writer has ended.
type record[T any] struct {
	buf  []T
	n    atomic.Int64
	mu   sync.Mutex
	more []T
}

// reserve makes room for n values; call it before any add.
func (r *record[T]) reserve(n int) { r.buf = make([]T, n) }

// add records v.
func (r *record[T]) add(v T) {
	if i := r.n.Add(1) - 1; i < int64(len(r.buf)) {
		r.buf[i] = v
		return
	}
	r.mu.Lock()
	r.more = append(r.more, v)
	r.mu.Unlock()
}

// values returns what was recorded; every add must have returned.
func (r *record[T]) values() []T {
	n := min(r.n.Load(), int64(len(r.buf)))
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(r.buf[:n:n], r.more...)
}

// bytes is the memory the buffer holds.
func (r *record[T]) bytes() uint64 {
	var zero T
	r.mu.Lock()
	defer r.mu.Unlock()
	return uint64(cap(r.buf)+cap(r.more)) * uint64(unsafe.Sizeof(zero))
}
