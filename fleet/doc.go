// Package fleet is the control plane's model: what the replicas of a
// service that share a lease store tell each other and their operators
// about their jobs, kept in that store.
//
//   - The registry: each running scheduler keeps a Replica entry (its
//     instance ID, start, version and jobs, each with a fingerprint of its
//     schedule and options), refreshed periodically and dropped when it
//     stops, or after a few missed refreshes when it dies. Two replicas that
//     register one job name with different fingerprints are a Conflict.
//   - Run status and history: the replica that ran a job's last occurrence
//     records its Status when it releases the lease (outcome, duration, a
//     one-line error), in the same store operation as the release, which
//     also adds it to the job's history: the last DefaultHistoryLimit runs
//     as RunRecords, newest first (Store.History).
//   - Pause: a paused job's occurrences are refused by the lease acquire
//     itself (lease.WithPauseCheck, lease.ErrPaused) on every replica,
//     recorded as handled, neither missed nor caught up.
//   - Triggers: a request to run a job now, once, on one replica that has
//     it, under the job's lease. Triggers queue per job and expire; the
//     acquire that runs one consumes it in the same atomic step
//     (lease.WithTrigger), and replicas hear of new triggers and finished
//     runs through the store's control channel (Store.Subscribe).
//
// Store is implemented by lease/redislease and lease/memory; the scheduler uses
// it when its lease store offers it, and package inspect reads and steers
// a fleet through it. Keys name jobs as their lease keys (the scheduler's
// key prefix plus the job name).
//
// What it does not guarantee: the registry is advisory (an entry lives a
// few refresh periods after its replica died), conflicts are detected when
// a replica publishes or sees the fleet change, not prevented, and a
// Status is written only by a run that still held its lease when it ended.
package fleet
