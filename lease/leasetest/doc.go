// Package leasetest is the conformance suite for lease.Store
// implementations. Every Store in this module (lease/redislease, lease/memory)
// passes it, and a Store written elsewhere should too:
//
//	func TestStore(t *testing.T) {
//		leasetest.Run(t, func(t *testing.T) leasetest.Env {
//			return leasetest.Env{Store: newIsolatedStore(t), Wait: time.Sleep}
//		})
//	}
//
// The suite covers the contract of package lease: the acquire, extend and
// release lifecycle; contention; expiry with lease.ExpiryTolerance and
// lease.ExpiredRetention; ownership by ID; fences; rounds and clock skew;
// Lookup and LookupID; input validation; that Lease.Extend and
// Lease.Release (which may take a store's keyed path, lease.KeyedStore)
// answer as Store.Extend and Store.Release do for the lease's ID; and, for
// a store that is a lease.Notifier, that releases wake the key's watches
// (the Notify subtests skip, saying so, for a store that is not).
//
// What it assumes: the store's "server time" is whatever Env.Wait advances;
// it never compares a server time with the local wall clock. Subtests run in
// concurrently, each with its own Env, so against a real server the suite takes
// a few seconds (TTLs are 200-500 ms and expiry needs TTL +
// lease.ExpiryTolerance). What it does not check: behaviour under network
// faults, persistence of fences across restarts, and that validation does no
// I/O (it checks the error kind only); those belong to each Store's own tests.
package leasetest
