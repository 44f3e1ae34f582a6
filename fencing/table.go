package fencing

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"unicode/utf8"
)

// DefaultTableName is the fence table the package-level Advance and
// CreateTable use.
const DefaultTableName = "cronguard_fences"

// MaxResourceBytes is the longest resource name accepted, in bytes.
const MaxResourceBytes = 512

// MaxToken is the greatest token a fence table can record: the column is a
// signed 64-bit BIGINT, so tokens above math.MaxInt64 cannot be stored.
const MaxToken Token = math.MaxInt64

// Execer runs a statement. *sql.Tx, *sql.DB and *sql.Conn satisfy it.
// Advance needs the caller's transaction (a *sql.Tx, or a *sql.Conn inside
// BEGIN ... COMMIT) to protect anything: see the package documentation.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Table is a fence table: one row per resource holding the greatest token
// recorded for it and, for rows written by AdvanceOnce, the occurrence of
// that write. Its columns are
//
//	resource   TEXT NOT NULL PRIMARY KEY
//	token      BIGINT NOT NULL CHECK (token > 0)
//	occurrence BIGINT CHECK (occurrence > 0)  -- Unix milliseconds; NULL if never set
//
// Create makes it; a migration of your own with the same columns works as
// well. Tables made before the occurrence column existed keep working for
// Advance; Migrate (or Create) adds the column that AdvanceOnce needs. A
// Table holds only its statement texts and is safe for concurrent use.
type Table struct {
	name    string
	dialect Dialect
	advance string // the upsert, with two placeholders: resource, token
	// advanceOnce is the occurrence upsert, with three placeholders:
	// resource, token, occurrence.
	advanceOnce string
	readFence   string // the row's token and occurrence; one placeholder: resource
	create      string // makes the table, and in PostgreSQL migrates it (see schemaStatements)
	migrate     string // adds the occurrence column (see Migrate)
}

// NewTable returns the fence table called name in a database of the given
// dialect. name is a table name or schema.table, each part matching
// [a-z_][a-z0-9_]* and at most MaxIdentifierBytes long; it is quoted in every
// statement. Anything else is refused with ErrInvalidArgument, so no
// unchecked text ever reaches SQL.
func NewTable(name string, dialect Dialect) (*Table, error) {
	quoted, err := quoteTableName(name)
	if err != nil {
		return nil, err
	}
	p, err := dialect.placeholders(3)
	if err != nil {
		return nil, err
	}
	create, migrate := schemaStatements(name, quoted, dialect)
	return &Table{
		name:    name,
		dialect: dialect,
		// The alias keeps the WHERE clause valid for schema-qualified
		// names in both dialects. Zero rows affected means the row exists
		// with a greater token: the DO UPDATE's condition was false.
		advance: "INSERT INTO " + quoted + " AS fence (resource, token) VALUES (" + p[0] + ", " + p[1] + ")" +
			" ON CONFLICT (resource) DO UPDATE SET token = excluded.token" +
			" WHERE fence.token <= excluded.token",
		advanceOnce: advanceOnceStatement(quoted, p),
		readFence:   "SELECT token, occurrence FROM " + quoted + " WHERE resource = " + p[0],
		create:      create,
		migrate:     migrate,
	}, nil
}

// Name returns the table name as given to NewTable.
func (t *Table) Name() string { return t.name }

// Dialect returns the table's dialect.
func (t *Table) Dialect() Dialect { return t.dialect }

// Create creates the table if it does not exist (CREATE TABLE IF NOT
// EXISTS) and adds the occurrence column to a table made before the column
// existed (see Migrate); rows are never changed. A schema in the name must
// already exist. Create is idempotent and cheap when there is nothing to
// do, so a service can run it on every start.
//
// It is safe to call from every replica at once, each with its own
// connection or pool: the callers take turns and all succeed. In
// PostgreSQL, Create is one statement that first takes a transaction-scoped
// advisory lock derived from the table name (the name as given to
// NewTable: spell it the same way on every replica), so concurrent callers
// wait for each other instead of failing with a unique violation; with a
// *sql.Tx the lock is held until that transaction ends. In SQLite, each
// schema change takes the database write lock as it starts; Create retries
// one refused with SQLITE_BUSY (a busy timeout shorter than the wait, or
// none) with backoff for up to 10 seconds, or until ctx is done.
func (t *Table) Create(ctx context.Context, db Execer) error {
	if err := t.check(db); err != nil {
		return err
	}
	if err := t.execSchema(ctx, db, t.create, nil); err != nil {
		return fmt.Errorf("fencing: create table %s: %w", t.name, err)
	}
	if t.dialect == Postgres {
		return nil // the DO block has migrated the table already
	}
	return t.Migrate(ctx, db)
}

// Advance records token for resource in one statement run on tx, and
// returns an error wrapping ErrStale if a greater token was already
// recorded for resource. An equal token passes, so one lease may write many
// times. Run it in the same transaction as the writes it protects, and roll
// that transaction back on any error: the recorded token commits or rolls
// back with them. Running it first in the transaction lets a stale holder
// fail before doing any work.
//
// While the transaction is open, the fence row stays locked (PostgreSQL
// row lock; SQLite write lock), so concurrent writers of one resource are
// serialized: a later Advance waits, then sees the committed token. Under
// PostgreSQL's REPEATABLE READ or SERIALIZABLE isolation that wait ends
// in a serialization failure instead, which the caller retries as usual.
//
// token must be in [1, MaxToken] and resource non-empty valid UTF-8 without
// NUL bytes, at most MaxResourceBytes long; otherwise Advance returns
// ErrInvalidArgument without touching the database. Resources are compared
// byte for byte.
//
// Advance writes only the token: a new row gets a NULL occurrence, an
// existing one keeps its occurrence. It works on tables with or without
// the occurrence column. For a resource fenced per occurrence use
// AdvanceOnce alone (its documentation says why).
func (t *Table) Advance(ctx context.Context, tx Execer, resource string, token Token) error {
	if err := t.check(tx); err != nil {
		return err
	}
	if err := checkResource(resource); err != nil {
		return err
	}
	if err := checkToken(token); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, t.advance, resource, int64(token))
	if err != nil {
		return fmt.Errorf("fencing: advance %q to %s: %w", resource, token, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fencing: advance %q to %s: rows affected: %w", resource, token, err)
	}
	if n == 0 {
		return fmt.Errorf("fencing: advance %q to %s: %w: a greater token is recorded", resource, token, ErrStale)
	}
	return nil
}

// AdvanceFromContext is Advance with the token carried by ctx (see
// NewContext; a scheduler job's context carries its lease's token). It
// returns ErrNoToken when ctx carries none.
func (t *Table) AdvanceFromContext(ctx context.Context, tx Execer, resource string) error {
	token, ok := FromContext(ctx)
	if !ok {
		return fmt.Errorf("fencing: advance %q: %w (wrap the context with fencing.NewContext)", resource, ErrNoToken)
	}
	return t.Advance(ctx, tx, resource, token)
}

// check refuses a Table not made by NewTable and a nil Execer.
func (t *Table) check(x Execer) error {
	if t == nil || t.advance == "" {
		return invalid("table must be created with fencing.NewTable")
	}
	if x == nil {
		return invalid("tx must not be nil")
	}
	return nil
}

func checkResource(resource string) error {
	switch {
	case resource == "":
		return invalid("resource must not be empty")
	case len(resource) > MaxResourceBytes:
		return invalid("resource must be at most %d bytes, got %d", MaxResourceBytes, len(resource))
	case !utf8.ValidString(resource):
		return invalid("resource must be valid UTF-8")
	}
	for i := 0; i < len(resource); i++ {
		if resource[i] == 0 {
			return invalid("resource must not contain NUL bytes, found one at byte %d", i)
		}
	}
	return nil
}

func checkToken(token Token) error {
	switch {
	case token == 0:
		return invalid("token must not be zero (no lease issues token 0)")
	case token > MaxToken:
		return invalid("token %d does not fit the BIGINT token column (max %d)", uint64(token), uint64(MaxToken))
	}
	return nil
}
