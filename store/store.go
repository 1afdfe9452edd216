package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/secretbox"
	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/otel/attribute"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
)

// sqliteWriterParams are the connection parameters of the SQLite writer:
// WAL so readers never block it, a busy timeout for other processes (the
// agentd CLI), BEGIN IMMEDIATE so read-then-write transactions never fail
// with "database is locked", and enforced foreign keys.
const sqliteWriterParams = "_journal_mode=WAL&_busy_timeout=5000&_txlock=immediate&_foreign_keys=1"

// sqliteReaderParams are the parameters of the SQLite read pool. The journal
// mode is persistent (set by the writer); query_only guards against a write
// reaching a reader by mistake.
const sqliteReaderParams = "_busy_timeout=5000&_txlock=deferred&_foreign_keys=1&_query_only=1"

// migrateLockKey is the PostgreSQL advisory lock that serializes schema
// migrations of replicas starting together.
const migrateLockKey = 0x61676e7464 // "agntd"

// core is the database and what every face of the Store shares.
type core struct {
	w        *gorm.DB // writes and transactions
	r        *gorm.DB // plain reads; the same as w unless SQLite on a file
	postgres bool
	now      func() time.Time // current time, UTC, millisecond precision
	uses     *useRecorder     // API key uses, written in the background
	group    *groupCommit     // the turns' writes on SQLite; nil on PostgreSQL
	pool     Pool             // PostgreSQL's pool
	box      *secretbox.Box   // encrypts settings.secrets; nil stores them plain
	wake     chan struct{}    // signalled when deliveries were queued
	auth     *authCache       // what Authenticate read, for AuthCacheTTL
	tracing  bool             // statements are spans (WithTracing)
	// traceSystem is the db.system.name of the statements' spans.
	traceSystem attribute.KeyValue
	getDoc      *sql.Stmt   // GetAgentDocument's read, prepared on r
	starts      *pageStarts // where ListAgents' pages start
	runJobs     RunJobFunc  // schedules a stored run's job (WithRunJobs); nil for none
	past        *pastSpend  // the rollups' sums of hours that no longer change, for budget checks
}

// Open opens the database named by dsn and migrates its schema. A dsn that
// starts with postgres:// or postgresql:// is PostgreSQL; anything else is a
// SQLite file path or "file:" URI. An empty dsn is ErrInvalid.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, wrap("open", invalidf("empty database name"))
	}
	s := &Store{&core{now: now, wake: make(chan struct{}, 1), auth: newAuthCache(), starts: newPageStarts(), pool: DefaultPool, past: newPastSpend()}}
	for _, opt := range opts {
		opt(s)
	}
	var err error
	if isPostgres(dsn) {
		err = s.openPostgres(ctx, dsn)
	} else {
		err = s.openSQLite(ctx, dsn)
	}
	if err != nil {
		return nil, err
	}
	if err := s.prepareReads(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.uses = newUseRecorder(s.w)
	if !s.postgres {
		s.group = newGroupCommit(s.w)
	}
	return s, nil
}

// isPostgres reports whether dsn names a PostgreSQL database.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// now is the default clock: UTC, truncated to the millisecond so that what
// is stored reads back equal.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// gormConfig is the GORM configuration shared by every connection pool.
func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:                 logger.Discard,
		NowFunc:                now,
		TranslateError:         true,
		SkipDefaultTransaction: true,
	}
}

// openPostgres opens the store's pool on PostgreSQL. Statements are
// prepared by pgx, once per connection, in its own cache (its default
// query mode), never by GORM. GORM's PrepareStmt mode prepares a query first met outside a
// transaction on the pool, which waits for a free connection, and makes
// every transaction that meets the same query meanwhile wait for that
// preparation while holding its connection: once the pool's connections
// were all held so, nothing moved again (64 messages at once did it; see
// TestPostgresReadNeverStallsTheTransactions). A stmtPool, as SQLite's
// pools use (see usePreparedStatements), prepares on the pool too.
func (s *core) openPostgres(ctx context.Context, dsn string) error {
	db, err := gorm.Open(postgres.Open(withStatementTimeout(dsn, s.pool.StatementTimeout)), gormConfig())
	if err != nil {
		return wrap("open postgres", err)
	}
	if err := s.traceDB(db, true); err != nil {
		return wrap("open postgres", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return wrap("open postgres", err)
	}
	sqlDB.SetMaxOpenConns(s.pool.MaxOpen)
	sqlDB.SetMaxIdleConns(s.pool.MaxIdle)
	sqlDB.SetConnMaxLifetime(s.pool.MaxLifetime)
	sqlDB.SetConnMaxIdleTime(s.pool.MaxIdleTime)
	s.w, s.r, s.postgres = db, db, true
	if err := s.migrate(ctx, dsn); err != nil {
		_ = s.Close()
		return err
	}
	return nil
}

func (s *core) openSQLite(ctx context.Context, dsn string) error {
	err := withSQLiteLock(dsn, func() error {
		w, err := openSQLitePool(withParams(dsn, sqliteWriterParams), 1)
		if err != nil {
			return wrap("open sqlite writer", err)
		}
		s.w, s.r = w, w
		if err := s.traceDB(w, false); err != nil {
			return wrap("open sqlite writer", err)
		}
		return s.migrate(ctx, dsn)
	})
	if err != nil {
		_ = s.Close()
		return err
	}
	if isMemory(dsn) {
		return nil // a second pool would see another, empty database
	}
	r, err := openSQLitePool(withParams(dsn, sqliteReaderParams), max(4, runtime.NumCPU()))
	if err != nil {
		_ = s.Close()
		return wrap("open sqlite reader", err)
	}
	s.r = r
	if err := s.traceDB(r, false); err != nil {
		_ = s.Close()
		return wrap("open sqlite reader", err)
	}
	return nil
}

// openSQLitePool opens a SQLite pool of at most conns connections that are
// never closed for idleness.
func openSQLitePool(dsn string, conns int) (*gorm.DB, error) {
	db, err := gorm.Open(sqlite.Open(dsn), gormConfig())
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	sqlDB.SetConnMaxLifetime(0)
	sqlDB.SetConnMaxIdleTime(0)
	return db, usePreparedStatements(db)
}

// withParams appends query parameters to a SQLite dsn. Parameters already in
// dsn come first and therefore win.
func withParams(dsn, params string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// isMemory reports whether dsn is an in-memory SQLite database.
func isMemory(dsn string) bool {
	return strings.HasPrefix(dsn, ":memory:") || strings.HasPrefix(dsn, "file::memory:") ||
		strings.Contains(dsn, "mode=memory")
}

// models lists every table, parents first. The migrations in migrations/
// create them; TestMigrationsMatchModels checks they match these models.
func models() []any {
	core := []any{&accountRow{}, &keyRow{}, &agentRow{}, &conversationRow{}, &conversationUserRow{}, &messageRow{}}
	return slices.Concat(core, analyticsModels(), connectionModels(), []any{&replicaRow{}}, webhookModels(), searchModels(), []any{&a2aTaskRow{}, &idempotencyKeyRow{}}, streamModels(), []any{&runRow{}, &scheduleRow{}, &budgetAlertRow{}, &responseRow{}})
}

// Close closes every connection pool.
func (s *core) Close() error {
	if s.uses != nil {
		s.uses.close()
	}
	if s.group != nil {
		s.group.close()
	}
	var errs []error
	if s.getDoc != nil {
		errs = append(errs, s.getDoc.Close())
	}
	if s.r != nil && s.r != s.w {
		errs = append(errs, closeDB(s.r))
	}
	if s.w != nil {
		errs = append(errs, closeDB(s.w))
	}
	return wrap("close", errors.Join(errs...))
}

func closeDB(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	var stmtErr error
	if p, ok := db.ConnPool.(*stmtPool); ok {
		stmtErr = p.close()
	}
	return errors.Join(stmtErr, sqlDB.Close())
}

// Ping checks that the database answers, on every pool.
func (s *core) Ping(ctx context.Context) error {
	for _, db := range []*gorm.DB{s.r, s.w} {
		sqlDB, err := db.DB()
		if err != nil {
			return wrap("ping", err)
		}
		if err := sqlDB.PingContext(ctx); err != nil {
			return wrap("ping", err)
		}
	}
	return nil
}

// read returns the pool for plain reads, bound to ctx. On SQLite a read
// that starts runs to its end, whatever becomes of ctx: the driver steps
// every row of a cancellable query on a goroutine of its own (a fifth of
// the time of a page of 100 agents), and agentd's reads are bounded (by
// index and limit), so one whose caller left ends soon anyway. A read
// whose caller has gone already does not start.
func (s *core) read(ctx context.Context) *gorm.DB {
	return s.r.WithContext(s.readContext(ctx))
}

// readContext is the context a plain read runs under (see read), for the
// reads made on the read pool without GORM (readRows).
func (s *core) readContext(ctx context.Context) context.Context {
	if !s.postgres && ctx.Err() == nil {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// write runs fn in one transaction on the writer and translates its error.
func (s *core) write(ctx context.Context, op string, fn func(tx *gorm.DB) error) error {
	return wrap(op, s.w.WithContext(ctx).Transaction(fn))
}

// writeGrouped is write for the writes that come many at once (the
// exchanges of turns, creates and updates of agents): on SQLite they share
// transactions (groupCommit), so that one commit, and one wait for the
// disk, serves many; on PostgreSQL each has its own. A write that fails
// costs its batch a second run, one transaction each: writes that often
// fail stay out.
func (s *core) writeGrouped(ctx context.Context, op string, fn func(tx *gorm.DB) error) error {
	if s.group == nil {
		return s.write(ctx, op, fn)
	}
	return wrap(op, s.group.write(ctx, fn))
}

// idEntropy makes ULIDs from crypto/rand, monotonic within a millisecond so
// that ids made in sequence in one process sort in that order; the first id
// of each millisecond has 80 fresh random bits, the next ones add a random
// 32-bit increment. idMu guards it.
var (
	idMu      sync.Mutex
	idEntropy = ulid.Monotonic(rand.Reader, 0)
)

// NewMessageID returns a new message id made at t, for a reply whose id is
// known before it is stored (a stream's). It reads nothing: it is a method
// so that a turn, which never imports store, makes its reply ids from the
// same monotonic source as the store's own.
func (s Conversations) NewMessageID(t time.Time) string { return newID("msg_", t) }

// newID returns prefix + a lowercase ULID of t: time-sortable and unguessable.
func newID(prefix string, t time.Time) string {
	ms := idTime(t)
	idMu.Lock()
	id, err := ulid.New(ms, idEntropy)
	idMu.Unlock()
	if err != nil { // the millisecond's increments overflowed: start afresh
		id = ulid.MustNew(ms, rand.Reader)
	}
	return prefix + strings.ToLower(id.String())
}

// idTime is t as the milliseconds a ULID carries, clamped to the ones it
// can: an imported time may lie before 1970, where ulid.New fails.
func idTime(t time.Time) uint64 {
	ms := t.UnixMilli()
	if ms < 0 {
		return 0
	}
	return min(uint64(ms), ulid.MaxTime())
}

// utc normalizes a time read from the database.
func utc(t time.Time) time.Time { return t.UTC() }

// utcPtr normalizes an optional time read from the database.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// msPtr truncates an optional caller-supplied time to stored precision.
func msPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Millisecond)
	return &u
}

// forUpdate is tx reading rows it will change: PostgreSQL locks them until
// the commit (SQLite's immediate transactions exclude every other writer
// already).
func forUpdate(tx *gorm.DB) *gorm.DB { return tx.Clauses(clause.Locking{Strength: "UPDATE"}) }

// WithClock makes the store read the time from clock (its result made UTC
// and cut to the millisecond as the default clock's): tests move it to see
// what time changes, such as a run's holder taken for lost.
func WithClock(clock func() time.Time) Option {
	return func(s *Store) { s.now = func() time.Time { return clock().UTC().Truncate(time.Millisecond) } }
}
