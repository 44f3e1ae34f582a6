// Package fencing turns a lease's fencing token into writes that a stale
// lease holder cannot make.
//
// A lease alone does not give mutual exclusion. A holder can pause (a GC
// pause, a stopped VM, a slow network) for longer than its TTL, wake after
// another replica has taken the lease, and write as if it still held it
// (Martin Kleppmann, "How to do distributed locking", 2016). Every acquire
// therefore returns a Token strictly greater than all earlier tokens for
// the key, and the resource being written remembers the greatest token it
// has seen and refuses smaller ones. Only the resource can do this check:
// the paused holder cannot know it has been paused.
//
// For a SQL database, Advance records the token for a named resource in a
// fence table with one statement (an upsert that only moves the token
// forward) and returns ErrStale when a greater token is already recorded;
// equal tokens pass, since one lease may write many times. The check is
// only worth something when it runs in the same transaction as the writes
// it protects: then either the token and the writes commit together, or a
// stale holder's writes roll back with its rejected token. Checking in one
// transaction and writing in another leaves the same window a lease has.
// For rows of your own that carry a token column, a conditional UPDATE
// (... WHERE last_token <= $token) and CheckResult do the same job.
//
//	tx, err := db.BeginTx(ctx, nil)
//	...
//	defer tx.Rollback()
//	if err := fencing.Advance(ctx, tx, "billing:invoices", token); err != nil {
//		return err // errors.Is(err, fencing.ErrStale): another holder has moved on
//	}
//	// ... the job's writes, on tx ...
//	return tx.Commit()
//
// PostgreSQL and SQLite are supported (see Dialect); NewTable names another
// table or picks SQLite, and Table.Create (or CreateTable for the default
// table) makes the table. Create is safe to call from every replica as it
// starts, all at once: concurrent calls take turns (a PostgreSQL advisory
// lock; SQLite's write lock, waited for) and all succeed. The token is kept as a signed BIGINT, so tokens above
// MaxToken are refused. With SQLite, open the database so that write
// transactions begin with BEGIN IMMEDIATE and wait on a busy timeout
// (modernc.org/sqlite: "_txlock=immediate&_pragma=busy_timeout(5000)"), or
// concurrent writers fail with SQLITE_BUSY instead of taking turns.
//
// # One effect per occurrence
//
// A token orders lease holders; it does not say which occurrence of a job a
// holder is running. If the lease store loses its round records (Redis
// data loss), one occurrence can run twice, on two replicas with two
// tokens, the second greater: Advance lets both commit. AdvanceOnce also
// records the occurrence (the run's scheduled time, in Unix milliseconds)
// and refuses, with ErrDuplicate, a run whose occurrence is at or before
// the recorded one unless it is the run that recorded it (same token, same
// occurrence). A token below the recorded one is still ErrStale. The
// scheduler puts each run's occurrence into its context next to the token
// (NewOccurrenceContext), so a job calls
//
//	if err := fencing.AdvanceOnceFromContext(ctx, tx, "billing:invoices"); err != nil {
//		return err // ErrDuplicate: this occurrence's effect is already committed
//	}
//
// ErrDuplicate means done, not failed. The scheduler attempts an
// occurrence again when its attempt was interrupted (a shutdown, a lost
// lease, a replica that died), and that attempt may have committed before
// it was cut off; the next attempt's AdvanceOnce then answers ErrDuplicate.
// Return it (wrapped or not) from the job: the scheduler records the
// attempt as succeeded and attempts the occurrence no more.
//
// Use one resource per job, written only with AdvanceOnce: Advance on the
// same resource moves the token and leaves the occurrence, which defeats
// the duplicate check (see Table.AdvanceOnce). Rows that have no
// occurrence (written by Advance, or from before the migration) count as
// earlier than every occurrence.
//
// # Migration
//
// The occurrence column is new. Table.Create and CreateTable make tables
// with it and add it to tables made without it, so services that create
// the table on start need nothing else, however many replicas start at
// once; Table.Migrate adds the column alone. Advance
// works on tables with or without it; AdvanceOnce on a table without it
// fails with ErrNotMigrated. For those who run their own migrations, the
// SQL for the default table is, in PostgreSQL
//
//	ALTER TABLE cronguard_fences ADD COLUMN IF NOT EXISTS occurrence BIGINT CHECK (occurrence > 0);
//
// and in SQLite (which has no IF NOT EXISTS here: run it once)
//
//	ALTER TABLE cronguard_fences ADD COLUMN occurrence BIGINT CHECK (occurrence > 0);
//
// Existing rows keep their tokens and get a NULL occurrence. A new table is
//
//	CREATE TABLE cronguard_fences (
//		resource   TEXT NOT NULL PRIMARY KEY,
//		token      BIGINT NOT NULL CHECK (token > 0),
//		occurrence BIGINT CHECK (occurrence > 0)
//	);
//
// # Limits
//
// What fencing does not cover: anything outside the database transaction.
// An email sent, a payment API called or a file written by a stale holder
// cannot be rolled back; such side effects need an idempotency key (for
// example the job name and occurrence) checked by the receiving system.
// Fencing also only holds while token order holds: if the lease store loses
// its fence counter and new tokens do not resume above every earlier one,
// they can repeat old ones and pass as current. And AdvanceOnce fences the
// occurrences of one resource in order: an occurrence earlier than the
// recorded one is refused even if it was never written, so runs of one
// job must write in occurrence order (a catch-up that runs a missed
// occurrence after a later one has written is refused with ErrDuplicate).
package fencing
