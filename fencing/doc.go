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
// table or picks SQLite, and Create (or CreateTable for the default table)
// makes the table. The token is kept as a signed BIGINT, so tokens above
// MaxToken are refused. With SQLite, open the database so that write
// transactions begin with BEGIN IMMEDIATE and wait on a busy timeout
// (modernc.org/sqlite: "_txlock=immediate&_pragma=busy_timeout(5000)"), or
// concurrent writers fail with SQLITE_BUSY instead of taking turns.
//
// What fencing does not cover: anything outside the database transaction.
// An email sent, a payment API called or a file written by a stale holder
// cannot be rolled back; such side effects need an idempotency key (for
// example the job name and occurrence) checked by the receiving system.
// Fencing also only holds while token order holds: if the lease store loses
// its fence counter (a Redis failover without persistence), new tokens can
// repeat old ones.
package fencing
