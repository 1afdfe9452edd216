package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	_ "github.com/jackc/pgx/v5/stdlib" // River's pool, as cmd/agentd opens it
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
)

// testPoll is the engine's poll in tests: a snoozed job comes back at once.
const testPoll = 20 * time.Millisecond

// fixture is a store on a fresh PostgreSQL database whose accepted runs
// get their job from an engine (not started), with River's own pool.
type fixture struct {
	st     *store.Store
	engine *Engine
	pool   *sql.DB
	agent  domain.Agent
	// schedule is the store's run-jobs hook; tests may wrap it.
	schedule store.RunJobFunc
}

// newFixture opens the fixture; the engine is stopped with the test.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	dsn := storetest.PostgresDSN(t)
	pool, err := sql.Open("pgx", dsn)
	testutil.OK(t, err)
	t.Cleanup(func() { _ = pool.Close() })
	driver := riverdatabasesql.New(pool)
	ctx := context.Background()
	_, err = Migrate(ctx, driver, nil)
	testutil.OK(t, err)
	f := &fixture{pool: pool}
	f.engine, err = New(Config{Driver: driver, PollInterval: testPoll})
	testutil.OK(t, err)
	f.schedule = f.engine.ScheduleRun
	f.st = storetest.Open(t, dsn, store.WithRunJobs(func(ctx context.Context, tx *sql.Tx, id string, at time.Time) error {
		return f.schedule(ctx, tx, id, at)
	}))
	acct := storetest.Account(t, f.st, "acme")
	f.agent, err = f.st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Name: "Ada", ModelProvider: "openai",
		Model: "m", Status: domain.StatusActive, Fields: map[string]json.RawMessage{"name": json.RawMessage(`"Ada"`),
			"modelProvider": json.RawMessage(`"openai"`), "model": json.RawMessage(`"m"`)}}, -1)
	testutil.OK(t, err)
	return f
}

// start starts the engine with r, stopped when the test ends.
func (f *fixture) start(t *testing.T, r Resumer) {
	t.Helper()
	testutil.OK(t, f.engine.Start(context.Background(), r))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := f.engine.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

// accept accepts text as a run in its own conversation.
func (f *fixture) accept(text string) (domain.Run, error) {
	r, _, err := f.st.Runs().AcceptRun(context.Background(), domain.Run{AccountID: f.agent.AccountID, AgentID: f.agent.ID,
		UserID: "ann", Source: domain.SourceAPI, Text: text, MessageID: "msg_" + text, Strategy: domain.StrategyEnqueue})
	return r, err
}

// job is what River's table holds of a run's job.
type job struct {
	state       string
	scheduledAt time.Time
	attempt     int
	snoozes     int
}

// jobsOf reads the jobs of run id, oldest first.
func (f *fixture) jobsOf(t *testing.T, id string) []job {
	t.Helper()
	rows, err := f.pool.Query(`SELECT state, scheduled_at, attempt, COALESCE((metadata->>'snoozes')::int, 0)
		FROM river_job WHERE kind = 'run' AND args->>'run_id' = $1 ORDER BY id`, id)
	testutil.OK(t, err)
	defer rows.Close()
	var out []job
	for rows.Next() {
		var j job
		testutil.OK(t, rows.Scan(&j.state, &j.scheduledAt, &j.attempt, &j.snoozes))
		out = append(out, j)
	}
	testutil.OK(t, rows.Err())
	return out
}

// resumer is a scripted Resumer: each call to Resume takes the next
// answer (the last one repeats) and is recorded with its time.
type resumer struct {
	mu      sync.Mutex
	answers []answer
	calls   []call
}

type answer struct {
	again time.Duration
	err   error
}

type call struct {
	id string
	at time.Time
}

func (r *resumer) Resume(_ context.Context, id string) (time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{id, time.Now()})
	a := r.answers[min(len(r.calls), len(r.answers))-1]
	return a.again, a.err
}

// called returns the calls so far.
func (r *resumer) called() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// TestRunJobCommitsWithTheRun: AcceptRun inserts the run's job in its own
// transaction, due when the run would be lost; when that transaction
// rolls back, after the job was inserted, neither the run nor the job
// remains.
func TestRunJobCommitsWithTheRun(t *testing.T) {
	f := newFixture(t)
	run, err := f.accept("kept")
	testutil.OK(t, err)
	jobs := f.jobsOf(t, run.ID)
	if len(jobs) != 1 || jobs[0].state != "scheduled" || !jobs[0].scheduledAt.Equal(run.CreatedAt.Add(store.RunBeatTimeout)) {
		t.Fatalf("the accepted run's jobs: %+v, want one scheduled at %v", jobs, run.CreatedAt.Add(store.RunBeatTimeout))
	}

	var inserted string
	later := errors.New("a failure after the job's insert")
	f.schedule = func(ctx context.Context, tx *sql.Tx, id string, at time.Time) error {
		if err := f.engine.ScheduleRun(ctx, tx, id, at); err != nil {
			return err
		}
		inserted = id
		return later
	}
	if _, err := f.accept("rolled back"); err == nil {
		t.Fatal("an acceptance whose transaction failed succeeded")
	}
	if inserted == "" {
		t.Fatal("the job was not inserted before the failure")
	}
	if jobs := f.jobsOf(t, inserted); len(jobs) != 0 {
		t.Errorf("a rolled-back acceptance left its run's job: %+v", jobs)
	}
	var n int
	testutil.OK(t, f.pool.QueryRow(`SELECT COUNT(*) FROM runs WHERE id = $1`, inserted).Scan(&n))
	if n != 0 {
		t.Errorf("a rolled-back acceptance left its run")
	}
}

// TestRunJobResumesAndSnoozes: a due run job calls Resume with its run;
// while Resume says the run is held elsewhere the job snoozes that long
// (without spending an attempt) and asks again; once Resume says there is
// nothing more to do the job completes.
func TestRunJobResumesAndSnoozes(t *testing.T) {
	f := newFixture(t)
	const again = 300 * time.Millisecond
	r := &resumer{answers: []answer{{again: again}, {again: again}, {}}}
	f.schedule = func(ctx context.Context, tx *sql.Tx, id string, _ time.Time) error {
		return f.engine.ScheduleRun(ctx, tx, id, time.Time{}) // due at once: the beat is taken for stale
	}
	run, err := f.accept("lost")
	testutil.OK(t, err)
	f.start(t, r)
	testutil.Eventually(t, "the run's job completed", func() error {
		jobs := f.jobsOf(t, run.ID)
		if len(jobs) != 1 {
			return fmt.Errorf("jobs %+v", jobs)
		}
		return testutil.Equal("state", jobs[0].state, "completed")
	})
	calls := r.called()
	if len(calls) != 3 {
		t.Fatalf("Resume called %d times, want 3 (twice held, then done)", len(calls))
	}
	for i, c := range calls {
		if c.id != run.ID {
			t.Errorf("call %d resumed %s, want %s", i, c.id, run.ID)
		}
		if i > 0 && c.at.Sub(calls[i-1].at) < again {
			t.Errorf("call %d came %v after the one before, sooner than the snooze of %v", i, c.at.Sub(calls[i-1].at), again)
		}
	}
	if jobs := f.jobsOf(t, run.ID); jobs[0].attempt != 1 || jobs[0].snoozes != 2 {
		t.Errorf("the job ended at attempt %d after %d snoozes, want attempt 1 after 2", jobs[0].attempt, jobs[0].snoozes)
	}
}

// TestRunJobFailures: a Resume that fails leaves the job to River's
// retries; a run that is gone completes its job.
func TestRunJobFailures(t *testing.T) {
	f := newFixture(t)
	r := &resumer{answers: []answer{{err: errors.New("database away")}}}
	f.schedule = func(ctx context.Context, tx *sql.Tx, id string, _ time.Time) error {
		return f.engine.ScheduleRun(ctx, tx, id, time.Time{}) // due at once
	}
	failing, err := f.accept("failing")
	testutil.OK(t, err)
	f.start(t, r)
	testutil.Eventually(t, "the failed job is to be retried", func() error {
		jobs := f.jobsOf(t, failing.ID)
		if len(jobs) != 1 {
			return fmt.Errorf("jobs %+v", jobs)
		}
		return testutil.Equal("state", jobs[0].state, "retryable")
	})
	r.mu.Lock()
	r.answers = []answer{{err: fmt.Errorf("turn: %w", domain.ErrRunNotFound)}}
	r.mu.Unlock()
	gone, err := f.accept("gone")
	testutil.OK(t, err)
	testutil.Eventually(t, "the job of a run that is gone completed", func() error {
		jobs := f.jobsOf(t, gone.ID)
		if len(jobs) != 1 {
			return fmt.Errorf("jobs %+v", jobs)
		}
		return testutil.Equal("state", jobs[0].state, "completed")
	})
}

// TestStopWaitsForRunsInProgress: Stop lets a run's job in progress end
// before it returns, and works no job after.
func TestStopWaitsForRunsInProgress(t *testing.T) {
	f := newFixture(t)
	entered, release := make(chan struct{}), make(chan struct{})
	blocking := resumerFunc(func(ctx context.Context, id string) (time.Duration, error) {
		close(entered)
		<-release
		return 0, nil
	})
	f.schedule = func(ctx context.Context, tx *sql.Tx, id string, _ time.Time) error {
		return f.engine.ScheduleRun(ctx, tx, id, time.Time{}) // due at once
	}
	run, err := f.accept("long")
	testutil.OK(t, err)
	testutil.OK(t, f.engine.Start(context.Background(), blocking))
	<-entered
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopped <- f.engine.Stop(ctx)
	}()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a run's job was in progress", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	testutil.OK(t, <-stopped)
	if jobs := f.jobsOf(t, run.ID); len(jobs) != 1 || jobs[0].state != "completed" {
		t.Errorf("the job in progress at Stop: %+v, want completed", jobs)
	}
}

// resumerFunc is a Resumer of one function.
type resumerFunc func(ctx context.Context, id string) (time.Duration, error)

func (f resumerFunc) Resume(ctx context.Context, id string) (time.Duration, error) { return f(ctx, id) }

// TestMigrateTogether: replicas starting together migrate River's schema
// one after the other, and a second migration finds nothing to do.
func TestMigrateTogether(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			pool, err := sql.Open("pgx", dsn)
			if err == nil {
				_, err = Migrate(context.Background(), riverdatabasesql.New(pool), nil)
				err = errors.Join(err, pool.Close())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migration %d: %v", i, err)
		}
	}
}
