// Package completion proves, on a real redis-server and a real PostgreSQL,
// that the scheduler does every occurrence once (completion): an attempt
// interrupted by Shutdown (SIGTERM) or by the death of its process
// (SIGKILL) is resumed by another replica, within a second of the release
// or TTL + 2s of the death, and its effect, written through
// fencing.AdvanceOnceFromContext, commits once; an attempt that committed
// and then died is followed by one that finds the effect made
// (fencing.ErrDuplicate) and succeeds, and by nothing else; WithRetry
// spaces the attempts of a failing job by its backoff, and a job that
// never succeeds is reported given up once, fleet-wide.
//
// The package holds tests only. The replica that is stopped or killed is a
// real process: the test binary started again with CRONGUARD_TEST_CHILD
// set, which runs one replica and reports what happens to it, one JSON
// line each, on its standard output. The replica that takes over runs in
// the test's process. Times are measured on the clocks they concern: the
// store's for leases and the history, the machine's wall clock (shared by
// both processes) for events.
//
// What it does not prove: every process runs on one machine, so the
// replicas' clocks agree; completion under clock skew, store outages and
// data loss is the deterministic simulator's and faults/'s to show.
package completion
