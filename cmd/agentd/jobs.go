package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentd/agentd/jobs"
	"github.com/agentd/agentd/store"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver of River's pool
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
)

// jobsPoolConns bounds River's own PostgreSQL pool: its fetches,
// completions, leader election and maintenance, and while migrating, the
// connection that holds the migration lock beside the one that migrates.
// Jobs are inserted in the store's transactions, on the store's pool.
const jobsPoolConns = 4

// jobsStopTimeout is how long the runs a replica took over get to end
// when it stops, after the HTTP requests did; a run left then is taken
// over by another replica once its beat is stale.
const jobsStopTimeout = 10 * time.Second

// engine is the job engine of serve and what closes it; nil on SQLite,
// whose runs the turn service's sweeper looks after (see
// docs/architecture.md, "The job engine").
type engine struct {
	*jobs.Engine
	pool *sql.DB
}

// openJobs opens River's pool on the PostgreSQL database dsn, applies
// River's migrations and returns the engine, not started; nil for a
// SQLite database.
func openJobs(ctx context.Context, dsn string, logger *slog.Logger) (*engine, error) {
	if !store.IsPostgres(dsn) {
		return nil, nil
	}
	pool, driver, err := openJobsPool(dsn)
	if err != nil {
		return nil, err
	}
	if _, err := jobs.Migrate(ctx, driver, logger); err != nil {
		return nil, errors.Join(err, pool.Close())
	}
	e, err := jobs.New(jobs.Config{Driver: driver, Logger: logger})
	if err != nil {
		return nil, errors.Join(err, pool.Close())
	}
	return &engine{Engine: e, pool: pool}, nil
}

// openJobsPool opens River's pool on the PostgreSQL database dsn and its
// driver.
func openJobsPool(dsn string) (*sql.DB, *riverdatabasesql.Driver, error) {
	pool, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open the job engine's pool: %w", err)
	}
	pool.SetMaxOpenConns(jobsPoolConns)
	return pool, riverdatabasesql.New(pool), nil
}

// storeOption is the store's hook that schedules each accepted run's
// job; none without an engine.
func (e *engine) storeOption() []store.Option {
	if e == nil {
		return nil
	}
	return []store.Option{store.WithRunJobs(e.ScheduleRun)}
}

// start works the jobs, resuming runs through r; the returned stop waits
// up to jobsStopTimeout for the runs in progress. Without an engine both
// do nothing.
func (e *engine) start(ctx context.Context, r jobs.Resumer, logger *slog.Logger) (stop func(), err error) {
	if e == nil {
		return func() {}, nil
	}
	if err := e.Start(ctx, r); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jobsStopTimeout)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			logger.Warn("the job engine stopped with runs in progress", "error", err)
		}
	}, nil
}

// close closes River's pool, once the engine stopped (or never started).
func (e *engine) close(logger *slog.Logger) {
	if e == nil {
		return
	}
	if err := e.pool.Close(); err != nil {
		logger.Error("closing the job engine's pool", "error", err)
	}
}

// migrateJobs applies River's pending migrations on the PostgreSQL
// database dsn, for agentd migrate up; nothing on SQLite.
func migrateJobs(ctx context.Context, dsn string) (applied []string, err error) {
	if !store.IsPostgres(dsn) {
		return nil, nil
	}
	pool, driver, err := openJobsPool(dsn)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, pool.Close()) }()
	return jobs.Migrate(ctx, driver, nil)
}
