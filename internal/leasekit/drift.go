package leasekit

import "time"

// Drift is the allowance subtracted from a TTL when computing a local
// deadline, to cover clock-rate differences between client and server:
// ttl/100 + 2ms (see lease.LocalDeadline).
func Drift(ttl time.Duration) time.Duration {
	return ttl/100 + 2*time.Millisecond
}
