package scheduler

import (
	"sync"
	"time"
)

// A replica's clock offset from the store. The preferred replica's backup
// waits BackupGrace after its own firing; a first choice whose clock runs
// behind the backup's fires later by the difference, and a backup that
// waited only the grace would claim first. So each replica measures its
// clock against the store's and publishes the offset in its registry entry
// (fleet.Replica.ClockOffset), and a backup adds to its grace how far its
// clock runs ahead of its first choice's (backupDelay).
//
// The samples are the replica's acquires, whose answers carry the store's
// time of the acquire (lease.Lease.AcquiredAt), and, with a store that is
// a fleet.ServerClock, up to three reads of the store's time before the
// entry is first published (so that the first entry carries the offset),
// then one per registry refresh (and per second until an offset is
// published): a replica far behind may never win an acquire. Sent at s and answered at r on the scheduler's
// clock, the store's time lies between them, so the offset is the
// midpoint minus it, give or take half the round trip. Of the samples of
// a period, the one with the shortest round trip is kept, as NTP does.

// offsetRepublish is how far the measured offset may move from the
// published one before the replica publishes its entry again.
const offsetRepublish = 25 * time.Millisecond

// offsetMaxError is the largest error (half the round trip) of a sample
// the replica publishes: a sample taken across a stall says little.
const offsetMaxError = 10 * time.Millisecond

// clockOffset keeps the best sample of the current period.
type clockOffset struct {
	mu     sync.Mutex
	best   time.Duration // half the round trip of the best sample; 0: none yet
	offset time.Duration // that sample's offset
}

// observe takes one sample: an acquire sent at sent and answered at recv on
// the scheduler's clock, which the store made at server.
func (c *clockOffset) observe(sent, recv, server time.Time) {
	if server.IsZero() || recv.Before(sent) {
		return
	}
	half := recv.Sub(sent) / 2
	half = max(half, time.Nanosecond) // 0 means none
	off := sent.Add(half).Sub(server)
	c.mu.Lock()
	if c.best == 0 || half < c.best {
		c.best, c.offset = half, off
	}
	c.mu.Unlock()
}

// precise reports whether the period has a sample precise enough to
// publish.
func (c *clockOffset) precise() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.best != 0 && c.best <= offsetMaxError
}

// take returns the period's best sample, if it is precise enough, and
// starts a new period.
func (c *clockOffset) take() (offset time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	offset, ok = c.offset, c.best != 0 && c.best <= offsetMaxError
	c.best, c.offset = 0, 0
	return offset.Truncate(time.Millisecond), ok
}

// republish reports whether a measured offset differs enough from the
// published one to publish the entry again.
func republish(published, measured time.Duration) bool {
	d := measured - published
	return d > offsetRepublish || d < -offsetRepublish
}
