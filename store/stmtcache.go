package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"gorm.io/gorm"
)

// maxCachedStmts bounds the statements a stmtPool keeps prepared: every
// query is one of a few dozen shapes, but one whose shape varies (an IN
// list's length) must not grow the cache without end.
const maxCachedStmts = 512

// stmtPool is the connection pool GORM runs its statements on: each query
// is prepared once on the database and reused, in transactions too.
//
// GORM's own PrepareStmt mode prepares a query first seen in a
// transaction on that transaction, and database/sql cannot reuse a
// statement of a finished transaction: every later transaction prepared
// the query again (a fifth of a Create's CPU on SQLite). Statements
// prepared here belong to the database, so a transaction's
// Tx.StmtContext finds them prepared on its connection and reuses them.
type stmtPool struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

var (
	_ gorm.ConnPool         = (*stmtPool)(nil)
	_ gorm.ConnPoolBeginner = (*stmtPool)(nil)
	_ gorm.GetDBConnector   = (*stmtPool)(nil)
	_ gorm.ConnPool         = (*stmtTx)(nil)
	_ gorm.TxCommitter      = (*stmtTx)(nil)
)

// usePreparedStatements makes db run its statements through a stmtPool.
func usePreparedStatements(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	p := &stmtPool{db: sqlDB, stmts: map[string]*sql.Stmt{}}
	db.ConnPool = p
	db.Statement.ConnPool = p
	return nil
}

// cached returns the statement of query, nil when it is not prepared.
func (p *stmtPool) cached(query string) *sql.Stmt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stmts[query]
}

// stmt returns query prepared on the database, or nil when the cache is
// full (the query then runs unprepared). It holds no lock while preparing:
// preparing waits for a free connection, and SQLite's writer has one,
// which a transaction looking up its own statements may hold.
func (p *stmtPool) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	p.mu.Lock()
	st, ok := p.stmts[query]
	full := len(p.stmts) >= maxCachedStmts
	p.mu.Unlock()
	if ok || full {
		return st, nil
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prior, ok := p.stmts[query]; ok {
		return prior, st.Close()
	}
	p.stmts[query] = st
	return st, nil
}

// prepareAll prepares the queries a finished transaction ran unprepared.
func (p *stmtPool) prepareAll(queries []string) {
	for _, q := range queries {
		_, _ = p.stmt(context.Background(), q) // a query that fails to prepare runs unprepared
	}
}

// GetDBConn returns the database, for gorm.DB.DB.
func (p *stmtPool) GetDBConn() (*sql.DB, error) { return p.db, nil }

// PrepareContext prepares query on the database.
func (p *stmtPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.db.PrepareContext(ctx, query)
}

// ExecContext runs query through its prepared statement.
func (p *stmtPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := p.stmt(ctx, query)
	if err != nil || st == nil {
		return p.db.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

// QueryContext runs query through its prepared statement.
func (p *stmtPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.stmt(ctx, query)
	if err != nil || st == nil {
		return p.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs query through its prepared statement.
func (p *stmtPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := p.stmt(ctx, query)
	if err != nil || st == nil {
		return p.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// BeginTx starts a transaction whose statements are the pool's.
func (p *stmtPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &stmtTx{p: p, tx: tx}, nil
}

// close closes every cached statement.
func (p *stmtPool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for q, st := range p.stmts {
		errs = append(errs, st.Close())
		delete(p.stmts, q)
	}
	return errors.Join(errs...)
}

// stmtTx is a transaction of a stmtPool. A query not prepared yet runs
// unprepared in the transaction and is prepared on the database once the
// transaction ends and its connection is free (waiting for it inside
// would deadlock SQLite's one writer connection).
type stmtTx struct {
	p       *stmtPool
	tx      *sql.Tx
	pending []string
}

// stmt returns the pool's statement of query bound to the transaction, or
// nil after noting query to prepare when the transaction ends.
func (t *stmtTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := t.p.cached(query); st != nil {
		return t.tx.StmtContext(ctx, st)
	}
	t.pending = append(t.pending, query)
	return nil
}

// PrepareContext prepares query on the transaction.
func (t *stmtTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.tx.PrepareContext(ctx, query)
}

// ExecContext runs query through the pool's statement, in the transaction.
func (t *stmtTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

// QueryContext runs query through the pool's statement, in the transaction.
func (t *stmtTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext runs query through the pool's statement, in the
// transaction.
func (t *stmtTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

// Commit commits the transaction, then prepares its new queries.
func (t *stmtTx) Commit() error {
	err := t.tx.Commit()
	t.p.prepareAll(t.pending)
	return err
}

// Rollback rolls the transaction back, then prepares its new queries.
func (t *stmtTx) Rollback() error {
	err := t.tx.Rollback()
	t.p.prepareAll(t.pending)
	return err
}

// readRows runs query on the read pool through the pool's prepared
// statement of it (a stmtPool's on SQLite, GORM's PrepareStmt cache on
// PostgreSQL) without GORM's callbacks, for a hot read that scans its
// rows itself. ctx should be a readContext. Its placeholders are $1, $2…,
// which both SQLite and PostgreSQL read.
func (s *core) readRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.r.ConnPool.QueryContext(ctx, query, args...)
}

// readRow is readRows for a query of one row.
func (s *core) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	return s.r.ConnPool.QueryRowContext(ctx, query, args...)
}
