package dbtest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartPostgres_CreateInsertSelect(t *testing.T) {
	pg := StartPostgres(t)
	db := pg.DB(t)
	ctx := t.Context()

	_, err := db.ExecContext(ctx, `CREATE TABLE fences (resource text PRIMARY KEY, token bigint NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO fences (resource, token) VALUES ($1, $2)`, "report", int64(42))
	require.NoError(t, err)

	var token int64
	err = db.QueryRowContext(ctx, `SELECT token FROM fences WHERE resource = $1`, "report").Scan(&token)
	require.NoError(t, err)
	assert.Equal(t, int64(42), token)
}

func TestPostgres_Stop_RefusesConnections(t *testing.T) {
	pg := StartPostgres(t)
	db := pg.DB(t)
	require.NoError(t, db.PingContext(t.Context()))

	pg.Stop()
	pg.Stop() // idempotent

	db2 := pg.DB(t)
	assert.Error(t, db2.PingContext(t.Context()), "a stopped server must not accept connections")
}

func TestPostgresBinDir_FindsInitdbAndPostgres(t *testing.T) {
	dir, err := postgresBinDir()
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "initdb"))
	assert.FileExists(t, filepath.Join(dir, "postgres"))
}

func TestVersionOf_OrdersNumerically(t *testing.T) {
	assert.Greater(t, versionOf("/usr/lib/postgresql/15/bin"), versionOf("/usr/lib/postgresql/9.6/bin"))
	assert.Equal(t, float64(-1), versionOf("/usr/lib/postgresql/devel/bin"))
}

func TestCheckDataDirectory_RejectsOtherServer(t *testing.T) {
	pg := StartPostgres(t)
	db := pg.DB(t)

	require.NoError(t, checkDataDirectory(t.Context(), db, filepath.Join(pg.Dir, "data")))
	err := checkDataDirectory(t.Context(), db, filepath.Join(t.TempDir(), "data"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another server")
}
