package lease

import "github.com/jonboulle/clockwork"

// ClockedStore is an optional interface of a Store that measures its
// leases' Deadlines on a clock of its own (lease/redislease and lease/memory take
// one as an option). A Deadline means something only against that clock:
// code that compares one with "now", as heartbeat does, reads now from
// Clock.
type ClockedStore interface {
	Store
	// Clock returns the clock the Store measures Lease.Deadline on.
	Clock() clockwork.Clock
}

// ClockOf returns the clock s measures lease deadlines on: s.Clock() when s
// is a ClockedStore, else the real clock.
func ClockOf(s Store) clockwork.Clock {
	if cs, ok := s.(ClockedStore); ok {
		if c := cs.Clock(); c != nil {
			return c
		}
	}
	return clockwork.NewRealClock()
}
