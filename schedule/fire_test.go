package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/schedule"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
)

// echo answers every message with its text.
type echo struct{}

func (echo) Generate(_ context.Context, req llm.Request) (llm.Reply, error) {
	return llm.Reply{Text: "re: " + req.Text, Model: req.Model}, nil
}

func (e echo) Stream(ctx context.Context, req llm.Request, onToken func(string) error) (llm.Reply, error) {
	reply, _ := e.Generate(ctx, req)
	return reply, onToken(reply.Text)
}

func (echo) Configured(string, string) error { return nil }

// clock is a settable clock shared by the stores of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// replica is one process of agentd as far as schedules go: its own store
// on the shared database, turn service and firer.
type replica struct {
	st     *store.Store
	turns  *turn.Service
	firer  *schedule.Firer
	cancel func()
	done   chan struct{}
}

// newReplica opens a replica on dsn; c, when not nil, is its store's
// clock.
func newReplica(t *testing.T, dsn string, c *clock) *replica {
	t.Helper()
	var opts []store.Option
	if c != nil {
		opts = append(opts, store.WithClock(c.now))
	}
	st := storetest.Open(t, dsn, opts...)
	turns, err := turn.New(turn.Config{Stores: turn.Stores{Agents: st.Agents(), Conversations: st.Conversations(),
		Analytics: st.Analytics(), Runs: st.Runs(), Budgets: st.Analytics()}, Model: echo{}, Semaphore: limit.NewMemorySemaphore()})
	testutil.OK(t, err)
	t.Cleanup(turns.Close) // before the store closes: the runs it made end first
	firer, err := schedule.New(schedule.Config{Store: st.Schedules(), Turns: turns, Every: 20 * time.Millisecond})
	testutil.OK(t, err)
	return &replica{st: st, turns: turns, firer: firer}
}

// start runs the replica's firer until stop or the end of the test.
func (r *replica) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		r.firer.Run(ctx)
	}()
	t.Cleanup(r.stop)
}

// stop ends the firer's loop and waits for it.
func (r *replica) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

// agent creates an agent in a new account of st.
func agent(t *testing.T, st *store.Store) domain.Agent {
	t.Helper()
	acct := storetest.Account(t, st, "acme")
	name, _ := json.Marshal("Clockwork")
	a, err := st.Agents().CreateAgent(context.Background(), domain.Agent{AccountID: acct.ID,
		Fields: map[string]json.RawMessage{"name": name}}, -1)
	testutil.OK(t, err)
	return a
}

// runsOf are the runs of agent a, newest first.
func runsOf(t *testing.T, st *store.Store, a domain.Agent) []domain.Run {
	t.Helper()
	runs, _, err := st.Runs().ListRuns(context.Background(), a.AccountID, domain.RunQuery{AgentID: a.ID, Limit: 100})
	testutil.OK(t, err)
	return runs
}

// runsMade is a check that agent a has at least want runs (a test then
// checks that no more come).
func runsMade(t *testing.T, st *store.Store, a domain.Agent, want int) func() error {
	return func() error {
		if n := len(runsOf(t, st, a)); n < want {
			return fmt.Errorf("runs %d, want %d", n, want)
		}
		return nil
	}
}

// TestOneOffFiresOnce: a one-off a few seconds ahead fires within the
// promised 10 seconds, as one run of source schedule whose reply is
// stored in the schedule's conversation; the schedule then has no next
// due time, stays listed, and names its run.
func TestOneOffFiresOnce(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		r := newReplica(t, dsn, nil)
		a := agent(t, r.st)
		at := time.Now().Add(2 * time.Second)
		sc, err := r.st.Schedules().CreateSchedule(ctx, domain.Schedule{AccountID: a.AccountID, AgentID: a.ID, At: at,
			Text: "Remind me of the standup.", UserID: "ann", Enabled: true})
		testutil.OK(t, err)
		r.start(t)
		testutil.Within(t, "the one-off's run", time.Until(at)+10*time.Second, runsMade(t, r.st, a, 1))
		fired := time.Now()
		if fired.Before(at) {
			t.Fatalf("fired at %s, before its time %s", fired, at)
		}
		var run domain.Run
		testutil.Eventually(t, "the run completed", func() error {
			run = runsOf(t, r.st, a)[0]
			return testutil.Equal("status", run.Status, domain.RunCompleted)
		})
		if run.Source != domain.SourceSchedule || run.ScheduleID != sc.ID || run.UserID != "ann" || run.Reply == nil ||
			run.Reply.Text != "re: Remind me of the standup." || run.ConversationID == "" {
			t.Fatalf("run %+v", run)
		}
		conv, err := r.st.Conversations().GetConversation(ctx, a.AccountID, a.ID, run.ConversationID)
		testutil.OK(t, err)
		if conv.UserID != "ann" || conv.MessageCount != 2 {
			t.Fatalf("conversation %+v", conv)
		}
		time.Sleep(100 * time.Millisecond) // five more looks
		if runs := runsOf(t, r.st, a); len(runs) != 1 {
			t.Fatalf("%d runs", len(runs))
		}
		got, err := r.st.Schedules().GetSchedule(ctx, a.AccountID, a.ID, sc.ID)
		testutil.OK(t, err)
		if !got.NextRunAt.IsZero() || got.LastRunID != run.ID || got.LastRunAt.IsZero() || got.LastError != "" {
			t.Fatalf("fired one-off %+v", got)
		}
	})
}

// TestReplicasFireEachDueTimeOnce: a minutely cron on three replicas
// (three stores, turn services and firing loops on one database, looking
// every 20 ms at once) over three minutes gives exactly three runs. The
// stores share a clock the test moves a minute at a time, so three
// minutes pass in a second while the loops run concurrently.
func TestReplicasFireEachDueTimeOnce(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c := &clock{t: time.Date(2026, 11, 21, 10, 0, 30, 0, time.UTC)}
		replicas := []*replica{newReplica(t, dsn, c), newReplica(t, dsn, c), newReplica(t, dsn, c)}
		st := replicas[0].st
		a := agent(t, st)
		sc, err := st.Schedules().CreateSchedule(ctx, domain.Schedule{AccountID: a.AccountID, AgentID: a.ID,
			Cron: "* * * * *", Text: "tick", Enabled: true})
		testutil.OK(t, err)
		for _, r := range replicas {
			r.start(t)
		}
		for minute := 1; minute <= 3; minute++ {
			c.add(time.Minute)
			testutil.Eventually(t, fmt.Sprintf("minute %d's run", minute), runsMade(t, st, a, minute))
			time.Sleep(100 * time.Millisecond) // every replica looks again, several times
			if runs := runsOf(t, st, a); len(runs) != minute {
				t.Fatalf("minute %d: %d runs", minute, len(runs))
			}
		}
		for _, r := range replicas {
			r.stop()
		}
		due := map[time.Time]bool{}
		for _, run := range runsOf(t, st, a) {
			if run.ScheduleID != sc.ID || run.Source != domain.SourceSchedule {
				t.Errorf("run %+v", run)
			}
			due[run.CreatedAt.Truncate(time.Minute)] = true
		}
		if len(due) != 3 {
			t.Errorf("runs made in minutes %v, want one in each of three", due)
		}
	})
}

// TestDowntimeFiresOnce: a schedule that missed several due times while
// no process ran fires once when one starts, then keeps its rhythm.
func TestDowntimeFiresOnce(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c := &clock{t: time.Date(2026, 11, 21, 10, 0, 30, 0, time.UTC)}
		r := newReplica(t, dsn, c)
		a := agent(t, r.st)
		sc, err := r.st.Schedules().CreateSchedule(ctx, domain.Schedule{AccountID: a.AccountID, AgentID: a.ID,
			Cron: "*/5 * * * *", Text: "tick", Enabled: true})
		testutil.OK(t, err)
		c.add(23 * time.Minute) // down over 10:05, 10:10, 10:15 and 10:20
		for range 3 {
			r.firer.FireDue(ctx)
		}
		if runs := runsOf(t, r.st, a); len(runs) != 1 {
			t.Fatalf("%d runs after the downtime", len(runs))
		}
		got, err := r.st.Schedules().GetSchedule(ctx, a.AccountID, a.ID, sc.ID)
		testutil.OK(t, err)
		if want := time.Date(2026, 11, 21, 10, 25, 0, 0, time.UTC); !got.NextRunAt.Equal(want) {
			t.Fatalf("next due %s, want %s", got.NextRunAt, want)
		}
		c.add(2 * time.Minute)
		r.firer.FireDue(ctx)
		if runs := runsOf(t, r.st, a); len(runs) != 2 {
			t.Fatalf("%d runs after the next due time", len(runs))
		}
	})
}

// TestUnavailableAgentFiresNothing: an inactive agent's due time, or an
// agent's in error during its cool-down, makes no run; the schedule's
// last error names the status and it moves on to its next due time.
func TestUnavailableAgentFiresNothing(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c := &clock{t: time.Date(2026, 11, 21, 10, 0, 30, 0, time.UTC)}
		r := newReplica(t, dsn, c)
		a := agent(t, r.st)
		sc, err := r.st.Schedules().CreateSchedule(ctx, domain.Schedule{AccountID: a.AccountID, AgentID: a.ID,
			Cron: "@hourly", Text: "tick", Enabled: true})
		testutil.OK(t, err)
		inactive := domain.StatusInactive
		_, _, err = r.st.Agents().UpdateAgent(ctx, a.AccountID, a.ID, nil, &inactive, domain.AnyVersion)
		testutil.OK(t, err)
		c.add(time.Hour)
		r.firer.FireDue(ctx)
		got, err := r.st.Schedules().GetSchedule(ctx, a.AccountID, a.ID, sc.ID)
		testutil.OK(t, err)
		if !strings.Contains(got.LastError, "inactive") || got.LastRunID != "" || !got.NextRunAt.Equal(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)) {
			t.Fatalf("inactive agent's schedule %+v", got)
		}

		active := domain.StatusActive
		_, _, err = r.st.Agents().UpdateAgent(ctx, a.AccountID, a.ID, nil, &active, domain.AnyVersion)
		testutil.OK(t, err)
		_, err = r.st.Agents().MarkAgentError(ctx, a.AccountID, a.ID, "the provider is down", time.Now().Add(time.Hour))
		testutil.OK(t, err)
		c.add(time.Hour)
		r.firer.FireDue(ctx)
		got, err = r.st.Schedules().GetSchedule(ctx, a.AccountID, a.ID, sc.ID)
		testutil.OK(t, err)
		if !strings.Contains(got.LastError, "error: the provider is down") || got.LastRunID != "" {
			t.Fatalf("erring agent's schedule %+v", got)
		}
		if runs := runsOf(t, r.st, a); len(runs) != 0 {
			t.Fatalf("%d runs", len(runs))
		}
	})
}

// holders names the replica running every agent's bot.
type holders struct{ owner string }

func (h holders) ConnectionHolder(context.Context, string, string) (string, error) {
	return h.owner, nil
}

// chats is the bots of the replica owner: each delivery is kept, and
// answered with err.
type chats struct {
	owner string
	err   error
	mu    sync.Mutex
	sent  []string // "platform chat run"
}

func (c *chats) Owner() string { return c.owner }

func (c *chats) DeliverRun(_, platform, chat string, run domain.Run, done func(error)) {
	c.mu.Lock()
	c.sent = append(c.sent, platform+" "+chat+" "+run.ID)
	c.mu.Unlock()
	done(c.err)
}

func (c *chats) deliveries() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sent...)
}

// TestTargetsFireWhereTheBotRuns: a schedule with a target is fired by the
// replica running the agent's bot, which sends the reply; the others pass
// it by. When no replica runs the bot, any fires it and the schedule's
// last error says the reply was not sent, as it says why a delivery
// failed.
func TestTargetsFireWhereTheBotRuns(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 30, 0, time.UTC)}
	dsn := storetest.SQLiteDSN(t)
	here := newReplica(t, dsn, c)
	a := agent(t, here.st)
	sc, err := here.st.Schedules().CreateSchedule(ctx, domain.Schedule{AccountID: a.AccountID, AgentID: a.ID,
		Cron: "@hourly", Text: "digest", Enabled: true, Target: &domain.ScheduleTarget{Platform: "telegram", ChatID: "-100"}})
	testutil.OK(t, err)
	bots := &chats{owner: "replica-a", err: errors.New("the bot was blocked")}
	fireAs := func(holder string, chats schedule.Chats) {
		t.Helper()
		f, err := schedule.New(schedule.Config{Store: here.st.Schedules(), Turns: here.turns, Holders: holders{holder}, Chats: chats})
		testutil.OK(t, err)
		f.FireDue(ctx)
	}
	get := func() domain.Schedule {
		t.Helper()
		got, err := here.st.Schedules().GetSchedule(ctx, a.AccountID, a.ID, sc.ID)
		testutil.OK(t, err)
		return got
	}

	c.add(time.Hour) // 11:00:30, due since 11:00
	fireAs("replica-b", bots)
	fireAs("replica-a", nil) // a replica that runs no bots
	if got := get(); len(runsOf(t, here.st, a)) != 0 || !got.NextRunAt.Equal(sc.NextRunAt) {
		t.Fatalf("fired away from the bot: %+v", got)
	}
	fireAs("replica-a", bots)
	runs := runsOf(t, here.st, a)
	if len(runs) != 1 || !slices.Equal(bots.deliveries(), []string{"telegram -100 " + runs[0].ID}) {
		t.Fatalf("runs %d, deliveries %v", len(runs), bots.deliveries())
	}
	if got := get(); got.LastError != "the reply was not sent to telegram chat -100: the bot was blocked" {
		t.Fatalf("last error %q", got.LastError)
	}

	c.add(time.Hour)
	fireAs("", bots)
	runs = runsOf(t, here.st, a)
	if len(runs) != 2 || len(bots.deliveries()) != 1 {
		t.Fatalf("runs %d, deliveries %v", len(runs), bots.deliveries())
	}
	if got := get(); got.LastRunID != runs[0].ID || got.LastError != "the reply was not sent to telegram chat -100: the agent's telegram bot is not connected" {
		t.Fatalf("fired with no bot running: %+v", got)
	}
}

// TestSpentBudgetFailsTheScheduledRun: a due time whose agent spent its
// daily budget makes a run that fails with BUDGET_EXCEEDED, and the
// schedule moves on to its next due time, naming the run and why.
func TestSpentBudgetFailsTheScheduledRun(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		c := &clock{t: time.Date(2026, 11, 21, 10, 0, 30, 0, time.UTC)}
		r := newReplica(t, dsn, c)
		acct := storetest.Account(t, r.st, "acme")
		a, err := r.st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: map[string]json.RawMessage{
			"name": json.RawMessage(`"Thrifty"`), "settings": json.RawMessage(`{"budget":{"daily":0.001}}`)}}, -1)
		testutil.OK(t, err)
		_, _, err = r.st.Conversations().SaveExchange(ctx, a.AccountID, a.ID, domain.ConversationRef{UserID: "ann"},
			domain.Message{UserID: "ann", Text: "q", CreatedAt: c.now()}, domain.Message{Text: "r", CreatedAt: c.now(), CostMicros: 1_500})
		testutil.OK(t, err)
		sc, err := r.st.Schedules().CreateSchedule(ctx, domain.Schedule{AccountID: a.AccountID, AgentID: a.ID,
			Cron: "@hourly", Text: "tick", Enabled: true})
		testutil.OK(t, err)
		c.add(time.Hour)
		r.firer.FireDue(ctx)
		runs := runsOf(t, r.st, a)
		if len(runs) != 1 || runs[0].Status != domain.RunFailed || runs[0].ErrorCode != domain.BudgetExceededCode ||
			runs[0].Source != domain.SourceSchedule || runs[0].ScheduleID != sc.ID {
			t.Fatalf("runs %+v", runs)
		}
		got, err := r.st.Schedules().GetSchedule(ctx, a.AccountID, a.ID, sc.ID)
		testutil.OK(t, err)
		if got.LastRunID != runs[0].ID || !strings.Contains(got.LastError, domain.BudgetExceededCode) ||
			!got.NextRunAt.Equal(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)) {
			t.Fatalf("schedule %+v", got)
		}
	})
}
