package fencing

import (
	"fmt"
	"strings"
)

// Dialect is the SQL dialect of the database that keeps the fence table.
// The dialects differ in their placeholders ($1 for PostgreSQL, ? for
// SQLite) and in how a missing column is added (see Table.Migrate); both
// need INSERT ... ON CONFLICT ... DO UPDATE ... WHERE (PostgreSQL 9.5+,
// SQLite 3.24+).
type Dialect int

// The supported dialects. The zero Dialect is not one of them.
const (
	// Postgres is PostgreSQL (for example through github.com/jackc/pgx/v5/stdlib).
	Postgres Dialect = iota + 1
	// SQLite is SQLite (for example through modernc.org/sqlite).
	SQLite
)

// String returns "postgres" or "sqlite".
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case SQLite:
		return "sqlite"
	default:
		return fmt.Sprintf("dialect(%d)", int(d))
	}
}

// placeholders returns the dialect's first n positional parameters.
func (d Dialect) placeholders(n int) ([]string, error) {
	if d != Postgres && d != SQLite {
		return nil, invalid("unknown dialect %s: use fencing.Postgres or fencing.SQLite", d)
	}
	ps := make([]string, n)
	for i := range ps {
		if d == Postgres {
			ps[i] = fmt.Sprintf("$%d", i+1)
		} else {
			ps[i] = "?"
		}
	}
	return ps, nil
}

// MaxIdentifierBytes is the longest table or schema name accepted, in bytes:
// PostgreSQL's limit (longer names would be truncated silently).
const MaxIdentifierBytes = 63

// quoteTableName checks name against the table-name rules and returns it
// double-quoted, part by part, ready to be placed in a statement.
//
// A name is one identifier, or two joined by a dot (schema.table). Each
// identifier is a lower-case ASCII letter or underscore followed by up to 62
// lower-case ASCII letters, digits or underscores. Upper case is refused
// because the emitted name is quoted: "Fences" and Fences name different
// tables in PostgreSQL, and a mixed-case name here would not match the
// unquoted name in the user's own migrations. Quoting keeps reserved words
// (user, order) usable. Nothing else ever reaches the statement text.
func quoteTableName(name string) (string, error) {
	if name == "" {
		return "", invalid("table name must not be empty")
	}
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", invalid("table name %q must be table or schema.table, got %d dot-separated parts", name, len(parts))
	}
	quoted := make([]string, len(parts))
	for i, p := range parts {
		if err := checkIdentifier(p); err != nil {
			return "", invalid("table name %q: %s", name, err)
		}
		quoted[i] = `"` + p + `"`
	}
	return strings.Join(quoted, "."), nil
}

// checkIdentifier returns a description of the rule id breaks, or nil.
func checkIdentifier(id string) error {
	if id == "" {
		return fmt.Errorf("empty identifier")
	}
	if len(id) > MaxIdentifierBytes {
		return fmt.Errorf("identifier %q must be at most %d bytes, got %d", shorten(id), MaxIdentifierBytes, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return fmt.Errorf("identifier %q must match [a-z_][a-z0-9_]*, found %q at byte %d", shorten(id), c, i)
		}
	}
	return nil
}

// shorten cuts s for an error message.
func shorten(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
