package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestBudgetSpendCountsRunsStillGoing: a budget check's spend is the
// rollups' plus what runs not finished spent in their stored steps, once
// (a reply's cost moves from the run to the rollups in one transaction);
// a user's day is the user's runs' own cost; the account's month is every
// agent's.
func TestBudgetSpendCountsRunsStillGoing(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		withClock(s) // 2026-11-21 10:00 UTC
		acct := mustAccount(t, s, "acme")
		a, b := mustAgent(t, s, acct.ID, "a"), mustAgent(t, s, acct.ID, "b")
		limits := domain.BudgetLimits{AgentDaily: 1, AgentMonthly: 1, PerUserDaily: 1, AccountMonthly: 1}
		read := func(agentID, user string) domain.BudgetSpend {
			t.Helper()
			sp, err := s.Analytics().BudgetSpend(ctx, domain.SpendQuery{AccountID: acct.ID, AgentID: agentID, UserID: user, Limits: limits})
			mustOK(t, err)
			return sp
		}
		accept := func(agentID, user string) domain.Run {
			t.Helper()
			r, _, err := s.Runs().AcceptRun(ctx, domain.Run{AccountID: acct.ID, AgentID: agentID, UserID: user, Source: domain.SourceAPI,
				Text: "q", MessageID: "msg_" + user + agentID, Strategy: domain.StrategyEnqueue})
			mustOK(t, err)
			_, _, err = s.Runs().StartRun(ctx, r.ID)
			mustOK(t, err)
			return r
		}
		ann := accept(a.ID, "ann")
		mustOK(t, s.Runs().SaveRunSteps(ctx, ann.ID, []domain.RunStep{{CostMicros: 300}, {CostMicros: 200}}))
		bob := accept(b.ID, "bob")
		mustOK(t, s.Runs().SaveRunSteps(ctx, bob.ID, []domain.RunStep{{CostMicros: 7}}))

		if sp := read(a.ID, "ann"); sp.AgentDay != 500 || sp.AgentMonth != 500 || sp.UserDay != 500 || sp.AccountMonth != 507 {
			t.Errorf("with runs going: %+v, want 500 for a and ann, 507 for the account", sp)
		}
		// Ann's reply costs 900 in all (its steps and its last call).
		_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, domain.ConversationRef{UserID: "ann"},
			domain.Message{UserID: "ann", Text: "q"}, domain.Message{ID: ann.MessageID, RunID: ann.ID, Text: "r", CostMicros: 900})
		mustOK(t, err)
		if sp := read(a.ID, "ann"); sp.AgentDay != 900 || sp.AgentMonth != 900 || sp.UserDay != 900 || sp.AccountMonth != 907 {
			t.Errorf("with ann's reply stored: %+v, want 900 for a and ann, 907 for the account", sp)
		}
		if sp := read(a.ID, "cy"); sp.UserDay != 0 {
			t.Errorf("another user's day: %d", sp.UserDay)
		}
		if sp, err := s.Analytics().BudgetSpend(ctx, domain.SpendQuery{AccountID: acct.ID, AgentID: a.ID, UserID: "ann"}); err != nil ||
			sp.AgentDay != 0 || sp.UserDay != 0 || sp.AccountMonth != 0 {
			t.Errorf("no budget set reads nothing: %+v %v", sp, err)
		}
	})
}

// TestBudgetAlertsGoOutOncePerWindow: many runs seeing a budget passed at
// once send budget.threshold and budget.exceeded once each; the next
// window sends them again.
func TestBudgetAlertsGoOutOncePerWindow(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "a")
		mustWebhookAll(t, s, acct.ID)
		q := domain.SpendQuery{AccountID: acct.ID, AgentID: a.ID, UserID: "ann",
			Limits: domain.BudgetLimits{AgentDaily: 1_000, PerUserDaily: 100_000}}
		spend := func(micros int64) {
			t.Helper()
			_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, domain.ConversationRef{UserID: "ann"},
				domain.Message{UserID: "ann", Text: "q"}, domain.Message{Text: "r", CostMicros: micros})
			mustOK(t, err)
		}
		alertAll := func() {
			t.Helper()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() { mustOK(t, s.Analytics().AlertSpend(ctx, q)) })
			}
			wg.Wait()
		}
		spend(700) // 70%: nothing
		alertAll()
		if n := countEvents(t, s, acct.ID); n[domain.EventBudgetThreshold]+n[domain.EventBudgetExceeded] != 0 {
			t.Errorf("at 70%%: %v", n)
		}
		spend(150) // 85%
		alertAll()
		spend(200) // 105%
		alertAll()
		if n := countEvents(t, s, acct.ID); n[domain.EventBudgetThreshold] != 1 || n[domain.EventBudgetExceeded] != 1 {
			t.Errorf("past 80%% and 100%%: %v, want one of each", n)
		}
		clock.add(24 * time.Hour) // the next day
		spend(1_000)
		alertAll()
		if n := countEvents(t, s, acct.ID); n[domain.EventBudgetThreshold] != 2 || n[domain.EventBudgetExceeded] != 2 {
			t.Errorf("the next day: %v, want two of each", n)
		}
	})
}

// countEvents counts the account's stored events by type.
func countEvents(t *testing.T, s *Store, accountID string) map[domain.EventType]int {
	t.Helper()
	var rows []eventRow
	mustOK(t, s.w.Where("account_id = ?", accountID).Find(&rows).Error)
	n := map[domain.EventType]int{}
	for _, r := range rows {
		n[domain.EventType(r.Type)]++
	}
	return n
}

// mustWebhookAll gives the account a webhook of every event, so events are
// stored.
func mustWebhookAll(t *testing.T, s *Store, accountID string) {
	t.Helper()
	_, err := s.Webhooks().CreateWebhook(context.Background(), domain.Webhook{AccountID: accountID,
		URL: "https://hooks.example.com/", Events: []string{domain.AllEvents}, Enabled: true})
	mustOK(t, err)
}

// BenchmarkBudgetSpend reads every budget's spend of an agent with a
// month of hourly rollups and 2,000 runs today (a few still going), in
// an account of 20 agents: the reads a budget check makes.
func BenchmarkBudgetSpend(b *testing.B) {
	s := newSQLite(b)
	ctx := context.Background()
	acct := mustAccount(b, s, "acme")
	var agent domain.Agent
	for i := range 20 {
		agent = mustAgent(b, s, acct.ID, fmt.Sprint("a", i))
	}
	now := time.Now().UTC()
	for h := range 30 * 24 { // a month of rollups, one exchange an hour
		at := now.Add(-time.Duration(h) * time.Hour)
		_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, agent.ID, domain.ConversationRef{UserID: "old"},
			domain.Message{UserID: "old", Text: "q", CreatedAt: at}, domain.Message{Text: "r", CreatedAt: at, CostMicros: 10})
		mustOK(b, err)
	}
	for i := range 2000 {
		r, _, err := s.Runs().AcceptRun(ctx, domain.Run{AccountID: acct.ID, AgentID: agent.ID, UserID: fmt.Sprint("u", i%50),
			Source: domain.SourceAPI, Text: "q", MessageID: fmt.Sprint("msg_", i), Strategy: domain.StrategyEnqueue})
		mustOK(b, err)
		if i%100 != 0 {
			_, err = s.Runs().FinishRun(ctx, r.ID, domain.RunCompleted, nil, "", "")
			mustOK(b, err)
		}
	}
	q := domain.SpendQuery{AccountID: acct.ID, AgentID: agent.ID, UserID: "u7",
		Limits: domain.BudgetLimits{AgentDaily: 1e9, AgentMonthly: 1e9, PerUserDaily: 1e9, AccountMonthly: 1e9}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Analytics().BudgetSpend(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}
