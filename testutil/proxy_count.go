package testutil

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// RequestCount counts the requests containing a marker that a Proxy has
// delivered to its server since CountRequests made it. A test waits on it
// to know that a request really reached the server (for example a server
// stopped with Redis.Pause, which holds the bytes unanswered), rather than
// guessing with a sleep.
type RequestCount struct {
	marker []byte

	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced at each change of n
}

// CountRequests starts counting the occurrences of marker (not empty) in
// the bytes the proxy delivers to its server from now on, on every
// connection. A chunk that carries marker k times counts k; a marker split
// across two chunks is not counted, which for the short markers of tests
// (a key in a command) does not happen in practice.
func (p *Proxy) CountRequests(marker []byte) *RequestCount {
	if len(marker) == 0 {
		panic("testutil: Proxy.CountRequests: marker must not be empty")
	}
	c := &RequestCount{marker: bytes.Clone(marker), changed: make(chan struct{})}
	p.countsMu.Lock()
	p.counts = append(p.counts, c)
	p.countsMu.Unlock()
	return c
}

// count feeds chunk, on its way to the server, to every counter.
func (p *Proxy) count(chunk []byte) {
	p.countsMu.Lock()
	defer p.countsMu.Unlock()
	for _, c := range p.counts {
		if k := bytes.Count(chunk, c.marker); k > 0 {
			c.add(k)
		}
	}
}

func (c *RequestCount) add(k int) {
	c.mu.Lock()
	c.n += k
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// N returns how many requests with the marker were delivered so far.
func (c *RequestCount) N() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Wait blocks until at least n requests with the marker were delivered to
// the server, or ctx is done; then it returns an error that says how many
// arrived.
func (c *RequestCount) Wait(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		got, changed := c.n, c.changed
		c.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("testutil: %d of %d requests containing %q reached the server: %w", got, n, c.marker, ctx.Err())
		}
	}
}
