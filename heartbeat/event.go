package heartbeat

import (
	"fmt"
	"time"

	"github.com/cronguard/cronguard/fencing"
)

// EventKind says what happened to a heartbeat.
type EventKind int

// The kinds of Event, in the order a heartbeat can produce them.
const (
	// EventRenewed: a renewal (an Extend) was confirmed; Deadline moved
	// forward.
	EventRenewed EventKind = iota + 1
	// EventRetrying: an Extend failed with a transient error (Err); another
	// try follows after a backoff, unless the cut-off comes first.
	EventRetrying
	// EventLost: the heartbeat gave up the lease; Err is the cause the
	// context was cancelled with (ErrLeaseLost or ErrLeaseUnconfirmed).
	EventLost
	// EventStopped: renewals ended (Stop, parent cancellation or loss). It is
	// always the last event; Err is the loss cause or nil.
	EventStopped
)

// String returns "renewed", "retrying", "lost" or "stopped".
func (k EventKind) String() string {
	switch k {
	case EventRenewed:
		return "renewed"
	case EventRetrying:
		return "retrying"
	case EventLost:
		return "lost"
	case EventStopped:
		return "stopped"
	default:
		return fmt.Sprintf("EventKind(%d)", int(k))
	}
}

// Event is what the observer set with WithObserver receives.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Key is the lease's (normalized) key.
	Key string
	// ShortLeaseID is the short, loggable form of the lease ID
	// (lease.ShortID), never the full ID.
	ShortLeaseID string
	// Fence is the lease's fencing token.
	Fence fencing.Token
	// ExpiresAt is the server's expiry from the last confirmed Extend (or
	// the acquire), for display only: never compare it with a local clock.
	ExpiresAt time.Time
	// Deadline is the local deadline (on the heartbeat's clock) up to which
	// the lease is trusted after this event.
	Deadline time.Time
	// Try counts Extend tries since the last confirmed one: for
	// EventRetrying the number of the try that failed, for EventRenewed
	// the number of tries it took (1 when the first one succeeded).
	Try int
	// Err is the store error (EventRetrying), the loss cause (EventLost,
	// EventStopped) or nil.
	Err error
	// Latency, for EventRenewed, is how long the confirmed Extend took,
	// from just before it was sent to its answer, on the heartbeat's clock.
	Latency time.Duration
	// Remaining, for EventLost, is how long the lease still had to its local
	// deadline when the context was cancelled: the stop margin for a loss
	// by cut-off (less any delay), possibly more for a definitive loss.
	Remaining time.Duration
}
