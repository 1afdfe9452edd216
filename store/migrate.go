package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver migrations use on PostgreSQL
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// migrationFiles are the versioned schema migrations, one folder per
// dialect; goose applies them in version order and records each in its
// version table, so every database says which schema it has.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// Schema versions that databases made by GORM's AutoMigrate (before
// versioned migrations) are adopted at; see adopt.
const (
	firstReleaseVersion  = 1 // the first release: accounts, keys, agents, conversations, messages
	autoMigratedVersion  = 2 // the last AutoMigrate schema: conversations have kind
	migrationTableMarker = "accounts"
)

// Migration is one schema migration and whether the database has it.
type Migration struct {
	Version   int64
	Name      string    // file name, e.g. 00001_initial.sql
	Applied   bool      // recorded in the database's version table
	AppliedAt time.Time // when it was applied; zero when pending
}

// Migrate applies the pending schema migrations of the database named by
// dsn (see Open) and returns those it applied, without opening a Store.
func Migrate(ctx context.Context, dsn string) ([]Migration, error) {
	var applied []Migration
	err := withMigrator(ctx, dsn, func(m *migrator) error {
		var err error
		applied, err = m.up(ctx)
		return err
	})
	return applied, wrap("migrate", err)
}

// MigrationStatus lists every schema migration of the database named by
// dsn, oldest first, each applied or pending.
func MigrationStatus(ctx context.Context, dsn string) ([]Migration, error) {
	var list []Migration
	err := withMigrator(ctx, dsn, func(m *migrator) error {
		var err error
		list, err = m.status(ctx)
		return err
	})
	return list, wrap("migration status", err)
}

// migrate brings the schema of an opening Store up to date.
func (s *core) migrate(ctx context.Context, dsn string) error {
	if s.postgres {
		_, err := Migrate(ctx, dsn)
		return err
	}
	db, err := s.w.DB()
	if err != nil {
		return wrap("migrate", err)
	}
	m, err := newMigrator(db, dsn)
	if err == nil {
		_, err = m.up(ctx)
	}
	return wrap("migrate", err)
}

// withMigrator opens a migrator on the database named by dsn, runs fn and
// closes it. On SQLite the whole of it holds the migration lock (see
// withSQLiteLock).
func withMigrator(ctx context.Context, dsn string, fn func(m *migrator) error) error {
	if isPostgres(dsn) {
		return runMigrator(ctx, dsn, fn)
	}
	return withSQLiteLock(dsn, func() error { return runMigrator(ctx, dsn, fn) })
}

// runMigrator is withMigrator without the SQLite lock.
func runMigrator(ctx context.Context, dsn string, fn func(m *migrator) error) error {
	db, err := openMigrationDB(ctx, dsn)
	if err != nil {
		return err
	}
	m, err := newMigrator(db, dsn)
	if err == nil {
		err = fn(m)
	}
	return errors.Join(err, db.Close())
}

// openMigrationDB opens the database named by dsn for migrations alone. On
// PostgreSQL it is a pool of its own, without the Store's statement
// timeout (a migration filling a large table may take longer than any
// request should) and with room for the connection holding the lock plus
// the one goose migrates on.
func openMigrationDB(ctx context.Context, dsn string) (*sql.DB, error) {
	if isPostgres(dsn) {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(2)
		return db, db.PingContext(ctx)
	}
	gdb, err := openSQLitePool(withParams(dsn, sqliteWriterParams), 1)
	if err != nil {
		return nil, err
	}
	return gdb.DB()
}

// migrator applies the embedded migrations of one dialect to one database.
type migrator struct {
	db       *sql.DB
	postgres bool
	dialect  goose.Dialect
	provider *goose.Provider
}

// newMigrator returns the migrator of db, the database named by dsn.
func newMigrator(db *sql.DB, dsn string) (*migrator, error) {
	postgres := isPostgres(dsn)
	dialect, dir := goose.DialectSQLite3, "migrations/sqlite"
	if postgres {
		dialect, dir = goose.DialectPostgres, "migrations/postgres"
	}
	fsys, err := fs.Sub(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(dialect, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return &migrator{db: db, postgres: postgres, dialect: dialect, provider: p}, nil
}

// up adopts a database made by AutoMigrate and applies what is pending.
func (m *migrator) up(ctx context.Context) ([]Migration, error) {
	var applied []Migration
	err := m.locked(ctx, func() error {
		results, err := m.provider.Up(ctx)
		for _, r := range results {
			applied = append(applied, Migration{Version: r.Source.Version, Name: path.Base(r.Source.Path), Applied: true})
		}
		return err
	})
	return applied, err
}

// status lists every migration, applied or pending. It adopts too: goose
// creates its version table on first use, after which an AutoMigrate
// database could no longer be recognised.
func (m *migrator) status(ctx context.Context) ([]Migration, error) {
	var list []Migration
	err := m.locked(ctx, func() error {
		st, err := m.provider.Status(ctx)
		for _, s := range st {
			list = append(list, Migration{Version: s.Source.Version, Name: path.Base(s.Source.Path),
				Applied: s.State == goose.StateApplied, AppliedAt: s.AppliedAt})
		}
		return err
	})
	return list, err
}

// locked adopts the database if needed and runs fn, holding a lock so that
// replicas or processes starting together migrate one after the other (the
// later ones find nothing pending): on PostgreSQL a session advisory lock
// (goose's own session locker would not cover adopt, which must be in the
// same lock); on SQLite the caller holds withSQLiteLock already.
func (m *migrator) locked(ctx context.Context, fn func() error) error {
	if !m.postgres {
		if err := m.adopt(ctx); err != nil {
			return err
		}
		return fn()
	}
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return err
	}
	// Closing the migration pool closes conn, which releases the lock
	// should the unlock below fail.
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	err = m.adopt(ctx)
	if err == nil {
		err = fn()
	}
	_, unlockErr := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey)
	return errors.Join(err, unlockErr)
}

// adopt records the migrations a database made by GORM's AutoMigrate
// already has, so that goose applies only the rest: such a database has
// accounts but no goose version table. Conversations with a kind column
// mean the last AutoMigrate schema (version 2: AutoMigrate kept every
// database at the models of its release, and this was its last), else the
// first release's (version 1).
func (m *migrator) adopt(ctx context.Context) error {
	versions, err := database.NewStore(m.dialect, goose.DefaultTablename)
	if err != nil {
		return err
	}
	tracked, err := m.hasColumn(ctx, goose.DefaultTablename, "version_id")
	if err != nil || tracked {
		return err
	}
	existing, err := m.hasColumn(ctx, migrationTableMarker, "id")
	if err != nil || !existing {
		return err
	}
	version := int64(firstReleaseVersion)
	if current, err := m.hasColumn(ctx, "conversations", "kind"); err != nil {
		return err
	} else if current {
		version = autoMigratedVersion
	}
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	err = versions.CreateVersionTable(ctx, tx)
	// goose's own first row is version 0, the empty database.
	for v := int64(0); err == nil && v <= version; v++ {
		err = versions.Insert(ctx, tx, database.InsertRequest{Version: v})
	}
	if err != nil {
		return fmt.Errorf("adopt schema at version %d: %w", version, errors.Join(err, tx.Rollback()))
	}
	return tx.Commit()
}

// hasColumn reports whether table exists with column.
func (m *migrator) hasColumn(ctx context.Context, table, column string) (bool, error) {
	q := "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?"
	if m.postgres {
		q = `SELECT COUNT(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`
	}
	var n int
	if err := m.db.QueryRowContext(ctx, q, table, column).Scan(&n); err != nil {
		return false, fmt.Errorf("inspect %s.%s: %w", table, column, err)
	}
	return n > 0, nil
}

// sqliteLockPath is the lock file of the SQLite database named by dsn:
// its path with "-migrate" appended (beside its -wal and -shm files), or
// "" for an in-memory database, which no other process can open.
func sqliteLockPath(dsn string) string {
	if isMemory(dsn) {
		return ""
	}
	p, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	return p + "-migrate"
}

// withSQLiteLock runs fn holding an flock of a file beside the SQLite
// database named by dsn. Opening the writer and migrating run inside it:
// goose's transactions per migration would not keep a second process from
// applying the same migration again, and the writer's first connection to
// a fresh file switches it to WAL, which SQLite refuses at once (without
// waiting out the busy timeout) to a second connection switching it too.
func withSQLiteLock(dsn string, fn func() error) error {
	unlock, err := lockFile(sqliteLockPath(dsn))
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// lockFile takes an exclusive flock of path, creating it, and returns its
// release; path "" locks nothing. It is a file of its own, not the
// database: closing a descriptor of the database would drop the fcntl
// locks SQLite holds on it in this process.
func lockFile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open migration lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}
