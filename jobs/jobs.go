package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
)

// runWorkers bounds the runs one process resumes at once. A resumed run
// mostly waits (for its conversation, a slot, the provider), so the bound
// is generous; a snoozing job holds none.
const runWorkers = 100

// DefaultPollInterval is how often the engine looks for due jobs unless
// Config says otherwise. The database/sql driver has no LISTEN, so
// polling is how jobs are found; a run's job is due a beat timeout after
// its run got a holder, which a second more does not change.
const DefaultPollInterval = time.Second

// stopAbandon bounds the wait for the jobs' goroutines once Stop's
// context ended and their contexts were cancelled.
const stopAbandon = 5 * time.Second

// migrateLockKey is the PostgreSQL advisory lock that keeps replicas
// starting together from applying River's migrations at once (River's
// migrator takes none); the store's migrations have a key of their own.
const migrateLockKey = 0x61676e7472 // "agntr"

// Config configures an Engine.
type Config struct {
	// Driver is River's driver over a database/sql pool of its own (River
	// polls and completes jobs on it); jobs are inserted in the store's
	// transactions, not on it.
	Driver riverdriver.Driver[*sql.Tx]
	// Logger receives River's logs; nil discards them.
	Logger *slog.Logger
	// PollInterval is how often due jobs are looked for
	// (DefaultPollInterval when 0).
	PollInterval time.Duration
}

// Engine is the River client of the process: it schedules jobs in the
// store's transactions from New on, and works them from Start to Stop.
type Engine struct {
	client *river.Client[*sql.Tx]
	runs   *runWorker
}

// New returns an engine over cfg.Driver, whose schema Migrate brought up
// to date. It schedules jobs at once and works them from Start on.
func New(cfg Config) (*Engine, error) {
	if cfg.Driver == nil {
		return nil, errors.New("jobs: no driver")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{runs: &runWorker{}}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, e.runs); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	poll := cfg.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	client, err := river.NewClient(cfg.Driver, &river.Config{
		Logger:            logger,
		Workers:           workers,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: runWorkers}},
		FetchPollInterval: poll,
		// River refuses a cooldown between fetches longer than the poll.
		FetchCooldown: min(poll, river.FetchCooldownDefault),
		// No LISTEN on database/sql: say so, rather than have River try.
		PollOnly: true,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: new river client: %w", err)
	}
	e.client = client
	return e, nil
}

// Start works the jobs until Stop, resuming runs through r. The engine's
// work outlives ctx: only Stop ends it.
func (e *Engine) Start(ctx context.Context, r Resumer) error {
	if r == nil {
		return errors.New("jobs: no resumer")
	}
	e.runs.resumer = r // read by the workers, which Start below begins
	if err := e.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for those in progress until ctx
// ends; then it cancels their contexts and waits a little more. A run's
// job left behind is not lost: the run's beat stops with the process,
// and the job that looks after the run next takes it over elsewhere.
func (e *Engine) Stop(ctx context.Context) error {
	err := e.client.Stop(ctx)
	if err == nil || ctx.Err() == nil {
		return wrapStop(err)
	}
	hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopAbandon)
	defer cancel()
	return wrapStop(errors.Join(err, e.client.StopAndCancel(hard)))
}

// wrapStop names the engine in a failed stop.
func wrapStop(err error) error {
	if err != nil {
		return fmt.Errorf("jobs: stop: %w", err)
	}
	return nil
}

// Migrate applies River's pending migrations over driver and returns
// their names. On PostgreSQL it holds an advisory lock, in a transaction
// of its own while the migrations run on other connections of the pool
// (which must allow two), so that replicas starting together migrate one
// after the other.
func Migrate(ctx context.Context, driver riverdriver.Driver[*sql.Tx], logger *slog.Logger) ([]string, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("jobs: migrator: %w", err)
	}
	if driver.DatabaseName() == riverdriver.DatabaseNamePostgres {
		lock, err := driver.GetExecutor().Begin(ctx)
		if err != nil {
			return nil, fmt.Errorf("jobs: migrate: %w", err)
		}
		// The lock is the transaction's: rolling it back releases it.
		defer func() { _ = lock.Rollback(context.WithoutCancel(ctx)) }()
		if _, err := lock.PGAdvisoryXactLock(ctx, migrateLockKey); err != nil {
			return nil, fmt.Errorf("jobs: migrate: lock: %w", err)
		}
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("jobs: migrate: %w", err)
	}
	applied := make([]string, len(res.Versions))
	for i, v := range res.Versions {
		applied[i] = fmt.Sprintf("river %03d_%s", v.Version, v.Name)
	}
	return applied, nil
}
