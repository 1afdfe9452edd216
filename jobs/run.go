package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/riverqueue/river"
)

// runTimeout is how long River lets a run's job work before cancelling
// its context. Resume runs a run to its end whatever becomes of its
// context, so the bound is not what ends a run: it is how long the job of
// a process that died while working it stays "running" before River's
// rescuer retries it (and the retry finds the run ended or held). The
// run itself is taken over sooner, by the job scheduled when it was.
const runTimeout = time.Hour

// Resumer takes over the runs whose holder was lost: turn.Service.
type Resumer interface {
	// Resume takes over run runID when whoever held it was lost (no beat
	// for store.RunBeatTimeout) and runs it to its end. It returns how
	// long until the run should be looked at again when its holder is
	// alive, and 0 when the run has ended or there is nothing to do;
	// domain.ErrRunNotFound when there is no such run.
	Resume(ctx context.Context, runID string) (again time.Duration, err error)
}

// runArgs are the arguments of a run's job.
type runArgs struct {
	RunID string `json:"run_id"`
}

// Kind names the job kind in River's tables.
func (runArgs) Kind() string { return "run" }

// ScheduleRun inserts the job of run runID, due at at, in tx: the store's
// transaction that stores the run (a store.RunJobFunc).
func (e *Engine) ScheduleRun(ctx context.Context, tx *sql.Tx, runID string, at time.Time) error {
	if _, err := e.client.InsertTx(ctx, tx, runArgs{RunID: runID}, &river.InsertOpts{ScheduledAt: at}); err != nil {
		return fmt.Errorf("jobs: insert the job of run %s: %w", runID, err)
	}
	return nil
}

// runWorker works the run jobs through the engine's Resumer.
type runWorker struct {
	river.WorkerDefaults[runArgs]
	resumer Resumer // set by Start, before any job is worked
}

// Timeout is runTimeout.
func (w *runWorker) Timeout(*river.Job[runArgs]) time.Duration { return runTimeout }

// Work asks the resumer to take the run over. A run held alive elsewhere
// snoozes the job until its holder's beat could have gone stale; a snooze
// costs River no attempt. A run that is gone (deleted with its agent or
// conversation, or past retention) leaves nothing to do.
func (w *runWorker) Work(ctx context.Context, job *river.Job[runArgs]) error {
	again, err := w.resumer.Resume(ctx, job.Args.RunID)
	switch {
	case errors.Is(err, domain.ErrRunNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("resume run %s: %w", job.Args.RunID, err) // River retries it
	case again > 0:
		return river.JobSnooze(again)
	}
	return nil
}
