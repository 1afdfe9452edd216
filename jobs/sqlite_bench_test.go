package jobs

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/turn"
	_ "github.com/mattn/go-sqlite3" // River's own SQLite pool
	"github.com/riverqueue/river/riverdriver/riversqlite"
)

// BenchmarkRiverOnSQLite measures what River on the SQLite driver costs
// the store's single writer, the measurement docs/architecture.md's
// choice rests on (bench/results/latest.md has the figures): a turn (a
// Send Message without HTTP and with a provider that answers at once:
// accept, start, exchange and finish, through turn.Service) and a Create
// Agent, at 1 and 16 goroutines, each
//
//   - off: no River;
//   - insert: a River client running on the same file (its own pool of
//     one connection, as the driver advises), every accepted run's job
//     inserted in the accept transaction, due later (not worked);
//   - work: the same, the jobs due at once, so River fetches, works and
//     completes each one meanwhile, its worker writing once (as Resume's
//     claim of an ended run does): the steady state, where the jobs of
//     the runs accepted a beat timeout ago come due as fast as runs come.
//
// Besides ns/op it reports failed operations, River's logged errors
// ("database is locked" among them) and, working, the jobs due but not
// yet completed at the end (River falling behind). Run it a few times,
// A/B:
//
//	go test -run '^$' -bench RiverOnSQLite -benchtime 3s -count 3 ./jobs
func BenchmarkRiverOnSQLite(b *testing.B) {
	for _, work := range []string{"turn", "create"} {
		for _, river := range []string{"off", "insert", "work"} {
			for _, conns := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/river=%s/conns=%d", work, river, conns), func(b *testing.B) {
					benchSQLite(b, work, river, conns)
				})
			}
		}
	}
}

// benchSQLite runs one point of BenchmarkRiverOnSQLite.
func benchSQLite(b *testing.B, work, river string, conns int) {
	ctx := context.Background()
	dsn := filepath.Join(b.TempDir(), "agentd.db")
	var opts []store.Option
	logs := &errorLogs{}
	var engine *Engine
	var pool *sql.DB
	if river != "off" {
		engine, pool = sqliteEngine(b, dsn, logs)
		due := func(at time.Time) time.Time { return at }
		if river == "work" {
			due = func(time.Time) time.Time { return time.Time{} } // at once
		}
		opts = append(opts, store.WithRunJobs(func(ctx context.Context, tx *sql.Tx, id string, at time.Time) error {
			return engine.ScheduleRun(ctx, tx, id, due(at))
		}))
	}
	st, err := store.Open(ctx, dsn, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if engine != nil {
		if err := engine.Start(ctx, claimer{st.Runs()}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = engine.Stop(context.Background()) })
	}
	acct, err := st.Accounts().CreateAccount(ctx, domain.Account{Name: "bench", Tier: domain.TierEnterprise})
	if err != nil {
		b.Fatal(err)
	}
	op := benchOp(b, st, acct.ID, work, conns)
	var failed atomic.Int64
	do := func(g int) {
		if err := op(g); err != nil && failed.Add(1) == 1 {
			b.Logf("first failure: %v", err)
		}
	}
	b.ResetTimer()
	if conns == 1 {
		for b.Loop() {
			do(0)
		}
	} else {
		var next atomic.Int64
		b.SetParallelism(max(1, conns/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			g := int(next.Add(1)-1) % conns
			for pb.Next() {
				do(g)
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(failed.Load()), "failed")
	b.ReportMetric(float64(logs.n.Load()), "river-errors")
	b.ReportMetric(float64(logs.locked.Load()), "locked")
	if river == "work" {
		var backlog int
		if err := pool.QueryRow("SELECT COUNT(*) FROM river_job WHERE state IN ('available', 'running')").Scan(&backlog); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(backlog), "backlog")
	}
}

// sqliteEngine opens River on the SQLite file dsn as the driver advises
// (a pool of one connection), with the store writer's parameters, and
// migrates it; it returns the engine and its pool.
func sqliteEngine(b *testing.B, dsn string, logs *errorLogs) (*Engine, *sql.DB) {
	pool, err := sql.Open("sqlite3", dsn+"?"+riverSQLiteParams)
	if err != nil {
		b.Fatal(err)
	}
	pool.SetMaxOpenConns(1)
	b.Cleanup(func() { _ = pool.Close() })
	driver := riversqlite.New(pool)
	if _, err := Migrate(context.Background(), driver, nil); err != nil {
		b.Fatal(err)
	}
	e, err := New(Config{Driver: driver, Logger: slog.New(logs)})
	if err != nil {
		b.Fatal(err)
	}
	return e, pool
}

// benchOp returns the operation of goroutine g: a turn of its own agent,
// or a Create Agent.
func benchOp(b *testing.B, st *store.Store, accountID, work string, conns int) func(g int) error {
	ctx := context.Background()
	if work == "create" {
		var n atomic.Int64
		return func(int) error {
			name := fmt.Sprintf("agent-%d", n.Add(1))
			_, err := st.Agents().CreateAgent(ctx, benchAgent(accountID, name), -1)
			return err
		}
	}
	turns, err := turn.New(turn.Config{
		Stores: turn.Stores{Agents: st.Agents(), Conversations: st.Conversations(), Analytics: st.Analytics(), Runs: st.Runs(), Budgets: st.Analytics()},
		Model:  instantModel{}, Semaphore: limit.NewMemorySemaphore(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(turns.Close)
	agents := make([]string, conns)
	for i := range agents {
		a, err := st.Agents().CreateAgent(ctx, benchAgent(accountID, fmt.Sprintf("turner-%d", i)), -1)
		if err != nil {
			b.Fatal(err)
		}
		agents[i] = a.ID
	}
	return func(g int) error {
		_, err := turns.Reply(ctx, turn.Input{AccountID: accountID, AgentID: agents[g], Text: "hello", UserID: "bench",
			Conv: domain.ConversationRef{UserID: "bench", Platform: "api"}, Slot: turn.SlotWait, Source: domain.SourceAPI})
		return err
	}
}

// benchAgent is an active OpenAI agent called name.
func benchAgent(accountID, name string) domain.Agent {
	return domain.Agent{AccountID: accountID, Name: name, ModelProvider: "openai", Model: "gpt-4o-mini",
		Status: domain.StatusActive, Fields: map[string]json.RawMessage{"name": json.RawMessage(`"` + name + `"`),
			"modelProvider": json.RawMessage(`"openai"`), "model": json.RawMessage(`"gpt-4o-mini"`)}}
}

// instantModel answers every call at once: the measurement is of the
// database, which a provider's latency would only dilute.
type instantModel struct{}

func (instantModel) Generate(context.Context, llm.Request) (llm.Reply, error) {
	return llm.Reply{Text: "a short reply", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 3}}, nil
}

func (m instantModel) Stream(ctx context.Context, req llm.Request, onToken func(string) error) (llm.Reply, error) {
	r, _ := m.Generate(ctx, req)
	return r, onToken(r.Text)
}

func (instantModel) Configured(string, string) error { return nil }

// claimer stands in for turn.Service's Resume in the measurement: one
// write on the store's writer per job, as claiming an ended run costs.
type claimer struct{ runs store.Runs }

func (c claimer) Resume(ctx context.Context, id string) (time.Duration, error) {
	return 0, c.runs.BeatRun(ctx, id)
}

// errorLogs counts River's logged warnings and errors, and those that
// say the database was locked.
type errorLogs struct{ n, locked atomic.Int64 }

func (l *errorLogs) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelWarn }

func (l *errorLogs) Handle(_ context.Context, r slog.Record) error {
	l.n.Add(1)
	text := r.Message
	r.Attrs(func(a slog.Attr) bool { text += " " + a.Value.String(); return true })
	if strings.Contains(text, "locked") || strings.Contains(text, "SQLITE_BUSY") {
		l.locked.Add(1)
	}
	return nil
}

func (l *errorLogs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLogs) WithGroup(string) slog.Handler      { return l }

// TestRiverOnSQLiteKill is the crash half of the measurement (run it with
// AGENTD_MEASURE_RIVER_SQLITE=1; SQLite does not run River, so CI does
// not): a process accepting runs from 8 goroutines, with River working
// their jobs on the same file, is killed with SIGKILL mid-work. Reopened,
// the file must be intact, every run must have its one job and every job
// its run, and a new engine must work what was left.
func TestRiverOnSQLiteKill(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(t, dir)
		return
	}
	if os.Getenv("AGENTD_MEASURE_RIVER_SQLITE") == "" {
		t.Skip("a measurement of River on SQLite, which agentd does not run: set AGENTD_MEASURE_RIVER_SQLITE=1")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRiverOnSQLiteKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	testutil.OK(t, err)
	cmd.Stderr = os.Stderr
	testutil.OK(t, cmd.Start())
	ready := bufio.NewScanner(out)
	if !ready.Scan() || ready.Text() != "ready" {
		_ = cmd.Process.Kill()
		t.Fatalf("the child did not start: %q", ready.Text())
	}
	time.Sleep(2 * time.Second)
	testutil.OK(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	dsn := filepath.Join(dir, "agentd.db")
	pool, err := sql.Open("sqlite3", dsn+"?"+riverSQLiteParams)
	testutil.OK(t, err)
	pool.SetMaxOpenConns(1)
	defer pool.Close()
	var check string
	testutil.OK(t, pool.QueryRow("PRAGMA integrity_check").Scan(&check))
	if check != "ok" {
		t.Errorf("integrity check: %s", check)
	}
	var runs, orphanRuns, orphanJobs int
	testutil.OK(t, pool.QueryRow("SELECT COUNT(*) FROM runs").Scan(&runs))
	testutil.OK(t, pool.QueryRow(`SELECT COUNT(*) FROM runs WHERE (SELECT COUNT(*) FROM river_job
		WHERE json_extract(args, '$.run_id') = runs.id) != 1`).Scan(&orphanRuns))
	testutil.OK(t, pool.QueryRow(`SELECT COUNT(*) FROM river_job
		WHERE NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = json_extract(river_job.args, '$.run_id'))`).Scan(&orphanJobs))
	states := jobStates(t, pool)
	t.Logf("after SIGKILL: %d runs, jobs by state %v", runs, states)
	if runs == 0 || orphanRuns != 0 || orphanJobs != 0 {
		t.Errorf("%d runs: %d without exactly one job, %d jobs without a run", runs, orphanRuns, orphanJobs)
	}

	st, err := store.Open(context.Background(), dsn)
	testutil.OK(t, err)
	defer st.Close()
	engine, err := New(Config{Driver: riversqlite.New(pool), PollInterval: 100 * time.Millisecond})
	testutil.OK(t, err)
	testutil.OK(t, engine.Start(context.Background(), claimer{st.Runs()}))
	defer func() { _ = engine.Stop(context.Background()) }()
	left := states["available"] + states["scheduled"]
	testutil.Eventually(t, "the reopened engine works the jobs left available", func() error {
		now := jobStates(t, pool)
		return testutil.Equal("completed", now["completed"], states["completed"]+left)
	})
	t.Logf("reopened: jobs by state %v (River rescues a job left running after its timeout, %v)", jobStates(t, pool), runTimeout)
}

// killChildEnv names the directory of the killed child's database.
const killChildEnv = "AGENTD_RIVER_SQLITE_KILL_DIR"

// riverSQLiteParams are the parameters of River's SQLite pool: the store
// writer's (BEGIN IMMEDIATE, a busy timeout).
const riverSQLiteParams = "_journal_mode=WAL&_busy_timeout=5000&_txlock=immediate&_foreign_keys=1"

// killChild is the process TestRiverOnSQLiteKill kills: it accepts runs
// from 8 goroutines, their jobs due at once and worked by a slow claimer,
// until it dies.
func killChild(t *testing.T, dir string) {
	dsn := filepath.Join(dir, "agentd.db")
	pool, err := sql.Open("sqlite3", dsn+"?"+riverSQLiteParams)
	testutil.OK(t, err)
	pool.SetMaxOpenConns(1)
	driver := riversqlite.New(pool)
	_, err = Migrate(context.Background(), driver, nil)
	testutil.OK(t, err)
	engine, err := New(Config{Driver: driver, PollInterval: 100 * time.Millisecond})
	testutil.OK(t, err)
	st, err := store.Open(context.Background(), dsn, store.WithRunJobs(func(ctx context.Context, tx *sql.Tx, id string, _ time.Time) error {
		return engine.ScheduleRun(ctx, tx, id, time.Time{})
	}))
	testutil.OK(t, err)
	testutil.OK(t, engine.Start(context.Background(), slowClaimer{claimer{st.Runs()}}))
	ctx := context.Background()
	acct, err := st.Accounts().CreateAccount(ctx, domain.Account{Name: "kill", Tier: domain.TierEnterprise})
	testutil.OK(t, err)
	a, err := st.Agents().CreateAgent(ctx, benchAgent(acct.ID, "victim"), -1)
	testutil.OK(t, err)
	fmt.Println("ready")
	for g := range 8 {
		go func() {
			for i := 0; ; i++ {
				_, _, err := st.Runs().AcceptRun(ctx, domain.Run{AccountID: acct.ID, AgentID: a.ID,
					Source: domain.SourceAPI, Text: "hi", MessageID: fmt.Sprintf("msg_%d_%d", g, i), Strategy: domain.StrategyEnqueue})
				if err != nil {
					fmt.Fprintln(os.Stderr, "accept:", err)
				}
			}
		}()
	}
	select {} // until killed
}

// slowClaimer is a claimer whose work lasts a while, so that the kill
// finds jobs running.
type slowClaimer struct{ claimer }

func (c slowClaimer) Resume(ctx context.Context, id string) (time.Duration, error) {
	time.Sleep(50 * time.Millisecond)
	return c.claimer.Resume(ctx, id)
}

// jobStates counts River's jobs by state.
func jobStates(t *testing.T, pool *sql.DB) map[string]int {
	t.Helper()
	rows, err := pool.Query("SELECT state, COUNT(*) FROM river_job GROUP BY state")
	testutil.OK(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		testutil.OK(t, rows.Scan(&s, &n))
		out[s] = n
	}
	testutil.OK(t, rows.Err())
	return out
}
