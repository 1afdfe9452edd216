package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// RunJobFunc schedules the job that looks after run runID at at, in tx,
// the transaction that gives the run a new holder: the run and its job
// commit together or not at all, so no run waits without someone to
// resume it, and no job names a run that was never stored. at is when
// the run would be lost should nothing renew its beat (RunBeatTimeout
// after the transaction; at once for a run released). An error fails the
// transaction.
type RunJobFunc func(ctx context.Context, tx *sql.Tx, runID string, at time.Time) error

// WithRunJobs makes the store call fn, inside the transaction, for every
// run that gets a holder: AcceptRun for a run it stores (not for a
// message merged into a queued run, which has its job), ClaimRun for a
// run it takes over (should the new holder be lost too: the job that
// claimed it is still running, and River rescues a running job only
// after its timeout), DecideRun for a run its decision queues again,
// ReleaseRun for a run its stopping holder gives up (due at once: the
// run's other jobs come due only when its last holder would have been
// lost).
// The hook is plain database/sql so that the store knows nothing of the
// job engine behind it (cmd/agentd wires River on PostgreSQL).
func WithRunJobs(fn RunJobFunc) Option {
	return func(s *Store) { s.runJobs = fn }
}

// scheduleRunJob calls the run-jobs hook, if any, for run id due at at,
// in tx (under the context the transaction runs with).
func (s *core) scheduleRunJob(tx *gorm.DB, id string, at time.Time) error {
	if s.runJobs == nil {
		return nil
	}
	sqlTx, err := sqlTxOf(tx)
	if err != nil {
		return err
	}
	if err := s.runJobs(tx.Statement.Context, sqlTx, id, at); err != nil {
		return fmt.Errorf("schedule the job of run %s: %w", id, err)
	}
	return nil
}

// sqlTxOf is the database/sql transaction under the GORM transaction tx:
// a plain *sql.Tx (PostgreSQL) or one of SQLite's stmtPool.
func sqlTxOf(tx *gorm.DB) (*sql.Tx, error) {
	switch p := tx.Statement.ConnPool.(type) {
	case *sql.Tx:
		return p, nil
	case *stmtTx:
		return p.tx, nil
	}
	return nil, fmt.Errorf("no *sql.Tx under the transaction's %T", tx.Statement.ConnPool)
}

// IsPostgres reports whether dsn names a PostgreSQL database (see Open),
// for the callers that pair the store with something of their own per
// database.
func IsPostgres(dsn string) bool { return isPostgres(dsn) }
