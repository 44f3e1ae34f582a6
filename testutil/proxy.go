package testutil

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxyDialTimeout bounds how long the proxy waits to connect to its target
// for each accepted connection.
const proxyDialTimeout = 5 * time.Second

// proxyChunkSize is the most bytes the proxy reads before forwarding.
const proxyChunkSize = 32 << 10

// proxyMode is what the proxy does with connections and bytes.
type proxyMode int32

const (
	modeForward   proxyMode = iota // forward bytes both ways
	modeCut                        // no connections: close live ones, refuse new ones
	modeBlackhole                  // keep connections, deliver nothing
)

// Proxy is a TCP proxy on loopback between a client and a server that
// injects network faults: cut connections, a blackhole and latency. Faults
// apply to bytes read after the call that sets them returns; a chunk
// already read and being delivered may still arrive.
//
// Its methods are safe for concurrent use. Every goroutine it starts ends
// before Close returns.
type Proxy struct {
	// Addr is the host:port on 127.0.0.1 that clients connect to.
	Addr string

	target    string
	ln        net.Listener
	latency   atomic.Int64           // time.Duration applied to each chunk
	loseReply atomic.Pointer[[]byte] // LoseReplyTo's marker, until a request carries it

	mu     sync.Mutex
	mode   proxyMode
	closed bool
	links  map[*proxyLink]struct{}

	countsMu sync.Mutex
	counts   []*RequestCount // CountRequests' counters, each fed by deliver

	wg sync.WaitGroup
}

// proxyLink is one proxied connection: the client side and the server side.
type proxyLink struct {
	client, server net.Conn
	blackholed     atomic.Bool // set once; the link never forwards again
	loseReply      atomic.Bool // the next reply on this link is lost with it (LoseReplyTo)
	done           chan struct{}
	closeOnce      sync.Once
}

// close closes both sides; the link's goroutines then end. Safe to call
// more than once.
func (l *proxyLink) close() {
	l.closeOnce.Do(func() {
		close(l.done)
		_ = l.client.Close()
		if l.server != nil {
			_ = l.server.Close()
		}
	})
}

// NewProxy starts a proxy on a free loopback port that forwards every
// connection to target (host:port), and closes it when the test ends. The
// target is dialled once per accepted connection; if that fails, the
// client's connection is closed.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testutil: proxy listen: %v", err)
	}
	p := &Proxy{
		Addr:   ln.Addr().String(),
		target: target,
		ln:     ln,
		links:  make(map[*proxyLink]struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

// Cut closes every live connection and, until Restore, accepts new ones
// only to close them at once: clients see connections reset or closed,
// as when a network path or a server process goes away.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.mode = modeCut
	links := p.takeLinksLocked()
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Blackhole keeps live connections open and accepts new ones, but delivers
// nothing in either direction until Restore: bytes read from either side
// are dropped, as when packets are silently lost. Clients see timeouts,
// never errors.
//
// Because bytes were dropped mid-stream, a connection open during a
// blackhole can never be used again: Restore closes it.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = modeBlackhole
	for l := range p.links {
		l.blackholed.Store(true)
	}
}

// SetLatency delays the delivery of each chunk of bytes by d, in both
// directions, so a request-reply exchange takes at least 2*d longer. Chunks
// on one connection stay in order. d <= 0 removes the delay. Latency
// combines with the other faults and is cleared by Restore.
func (p *Proxy) SetLatency(d time.Duration) {
	p.latency.Store(int64(max(d, 0)))
}

// LoseReplyTo makes the reply to the next request that contains marker
// be lost with its connection: the request reaches the server, which runs
// it, and the server's next bytes on that connection are dropped and the
// connection closed, so the client sees EOF or a reset. It reproduces a
// reply lost to a broken connection, the case where a client cannot know
// whether its command took effect. Other connections and requests are not
// affected. Restore cancels it.
func (p *Proxy) LoseReplyTo(marker []byte) {
	m := bytes.Clone(marker)
	p.loseReply.Store(&m)
}

// Restore ends Cut, Blackhole and SetLatency: new connections are forwarded
// normally again. Connections that were open during a Blackhole are closed
// (their streams lost bytes); clients must reconnect.
func (p *Proxy) Restore() {
	p.latency.Store(0)
	p.loseReply.Store(nil)
	p.mu.Lock()
	p.mode = modeForward
	var stale []*proxyLink
	for l := range p.links {
		if l.blackholed.Load() {
			stale = append(stale, l)
			delete(p.links, l)
		}
	}
	p.mu.Unlock()
	for _, l := range stale {
		l.close()
	}
}

// Close stops accepting, closes every connection and waits for all of the
// proxy's goroutines to end. It is safe to call twice; NewProxy registers
// it with t.Cleanup.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	links := p.takeLinksLocked()
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
}

// takeLinksLocked empties the link set and returns what it held.
func (p *Proxy) takeLinksLocked() []*proxyLink {
	links := make([]*proxyLink, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
		delete(p.links, l)
	}
	return links
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			// The listener only fails for good once Close has closed it;
			// any other error leaves the proxy refusing connections, which
			// tests see as dial errors.
			return
		}
		p.mu.Lock()
		refuse := p.closed || p.mode == modeCut
		if !refuse {
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		go p.serve(c)
	}
}

// serve dials the target for client c, registers the link and forwards
// bytes until either side closes.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	l := &proxyLink{client: c, done: make(chan struct{})}
	d := net.Dialer{Timeout: proxyDialTimeout}
	server, err := d.Dial("tcp", p.target)
	if err != nil {
		l.close()
		return
	}
	l.server = server

	p.mu.Lock()
	switch {
	case p.closed || p.mode == modeCut:
		p.mu.Unlock()
		l.close()
		return
	case p.mode == modeBlackhole:
		l.blackholed.Store(true)
	}
	p.links[l] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()

	go func() {
		defer p.wg.Done()
		p.pipe(l, l.server, l.client)
	}()
	p.pipe(l, l.client, l.server)
}

// pipe copies src to dst chunk by chunk, applying latency and the
// blackhole, until either side fails; then it closes the link, which ends
// the other direction too, and forgets it.
func (p *Proxy) pipe(l *proxyLink, src, dst net.Conn) {
	defer p.forget(l)
	buf := make([]byte, proxyChunkSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.deliver(l, dst, buf[:n]) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver writes chunk to dst after the current latency unless the link is
// blackholed. It reports false when the link is finished.
func (p *Proxy) deliver(l *proxyLink, dst net.Conn, chunk []byte) bool {
	if d := time.Duration(p.latency.Load()); d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-l.done:
			timer.Stop()
			return false
		}
	}
	if l.blackholed.Load() {
		return true // dropped
	}
	if dst == l.client && l.loseReply.Load() {
		return false // dropped, and the link closed: the reply is lost
	}
	if dst == l.server {
		p.count(chunk)
		if m := p.loseReply.Load(); m != nil && bytes.Contains(chunk, *m) && p.loseReply.CompareAndSwap(m, nil) {
			l.loseReply.Store(true)
		}
	}
	_, err := dst.Write(chunk)
	return err == nil
}

// forget closes l and removes it from the live set.
func (p *Proxy) forget(l *proxyLink) {
	l.close()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}
