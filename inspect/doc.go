// Package inspect reads and steers a fleet of cronguard schedulers from
// the outside, through the control plane they keep in their lease store
// (package fleet): which replicas are live, which jobs they have, who runs
// what now, how each job's last run ended, when it runs next; and the
// operator's commands: pause and resume a job fleet-wide, trigger a run
// now, force-release a lease. The cronguard command (cmd/cronguard) prints
// it.
//
//	in, err := inspect.New(store) // a lease/redislease Store on the fleet's Redis and key prefix
//	jobs, err := in.Jobs(ctx)
//	err = in.Pause(ctx, "report", "alice", "the warehouse is being migrated")
//	res, err := in.Trigger(ctx, "report", "alice", inspect.WithWait(time.Minute))
//
// # What it reads, and what that costs
//
// The fleet's jobs are the union, by name, of the jobs its live replicas
// registered (the registry; fleet.Store.Replicas). For each job, one read
// of the store (fleet.Store.JobState) gives the live lease (holder label,
// fence, time left, measured against the store's clock, never the local
// one), the last occurrence claimed, the last run's status, the pause and
// the pending triggers. Jobs does one such read per job (see its cost
// there); Job one.
//
// Every read is plain read commands, never a script: on lease/redislease
// the registry is TIME, ZRANGE and MGET, a job's state TIME, GET and
// LRANGE in one pipeline. So the read methods (Replicas, Jobs, Job) work
// for a Redis user that may run no script (docs/redis-acl.md, the
// read-only user), and cannot hold up the server. A new read of the
// fleet (a job's run history, say) follows the same rule: more plain
// reads in the job's slot, added to the job's pipeline, not a script.
//
// # What it guarantees, and what it does not
//
//   - What it shows is not one snapshot of the fleet: runs start and end,
//     replicas come and go, between the read and the display, and between
//     one read and the next. On lease/memory a job's state is read under
//     one lock; on lease/redislease it is one pipeline of plain reads, each
//     exact as of its own instant, which another client's command can
//     (rarely) fall between: a run that ends in between shows, for that
//     read, as neither running nor recorded, never as both. Different jobs,
//     and the registry, are read at different instants.
//   - The registry is advisory. A replica that died stays listed for up to
//     three of its refresh periods (15s by default); its jobs with it. A
//     job that no live replica registered is unknown (ErrUnknownJob) even
//     if its lease, status or pause are still in the store: the job's
//     lease key comes from the registry. A live replica whose registry
//     entry cannot be read (written by hand, or by a later version in
//     another form) is left out, with the jobs only it has: Replicas, Jobs
//     and Job return the rest with an error that wraps a
//     *fleet.UnreadableError naming it.
//   - Commands act on the store, not on the replicas: a pause is honoured
//     by every scheduled acquire on every replica from the moment it is
//     set, but a run in progress is not stopped; a trigger runs when a
//     replica takes it, and lapses unrun after its TTL if none does;
//     resuming does not bring back the occurrences skipped while paused.
//   - ForceRelease does not stop the holder: it is safe only for jobs
//     whose writes are fenced (package fencing).
//   - Inspector never imports the scheduler; it sees only what the
//     replicas publish. Commands that change the fleet are logged with who
//     asked (WithLogger).
package inspect
