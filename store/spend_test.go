package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestSpendWindows: an agent's and an account's spend count the costs of
// the current UTC day and month from the rollups, as the store's clock
// says, each with when it resets; another account's agent is not found.
func TestSpendWindows(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s) // 2026-11-21 10:00 UTC
		acct := mustAccount(t, s, "acme")
		a, b := mustAgent(t, s, acct.ID, "a"), mustAgent(t, s, acct.ID, "b")
		other := mustAccount(t, s, "other")
		spend := func(agentID string, at time.Time, micros int64) {
			t.Helper()
			_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, agentID, domain.ConversationRef{UserID: "ann"},
				domain.Message{UserID: "ann", Text: "q", CreatedAt: at}, domain.Message{Text: "r", CreatedAt: at, CostMicros: micros})
			mustOK(t, err)
		}
		spend(a.ID, time.Date(2026, 10, 31, 23, 59, 0, 0, time.UTC), 1_000_000) // last month
		spend(a.ID, time.Date(2026, 11, 20, 23, 30, 0, 0, time.UTC), 20_000)    // yesterday
		spend(a.ID, time.Date(2026, 11, 21, 0, 10, 0, 0, time.UTC), 3_000)      // today
		spend(a.ID, time.Date(2026, 11, 21, 9, 59, 0, 0, time.UTC), 400)
		spend(b.ID, time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC), 5)

		got, err := s.Analytics().AgentSpend(ctx, acct.ID, a.ID)
		mustOK(t, err)
		want := domain.Spend{DayMicros: 3_400, MonthMicros: 23_400, DayResetsAt: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
			MonthResetsAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		if !got.DayResetsAt.Equal(want.DayResetsAt) || !got.MonthResetsAt.Equal(want.MonthResetsAt) ||
			got.DayMicros != want.DayMicros || got.MonthMicros != want.MonthMicros {
			t.Errorf("agent spend = %+v, want %+v", got, want)
		}
		got, err = s.Analytics().AccountSpend(ctx, acct.ID)
		mustOK(t, err)
		if got.DayMicros != 3_405 || got.MonthMicros != 23_405 {
			t.Errorf("account spend = %+v, want 3405 today, 23405 this month", got)
		}
		if _, err := s.Analytics().AgentSpend(ctx, other.ID, a.ID); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another account's agent: %v", err)
		}

		clock.add(14 * time.Hour) // 2026-11-22 00:00: a new day, the same month
		got, err = s.Analytics().AgentSpend(ctx, acct.ID, a.ID)
		mustOK(t, err)
		if got.DayMicros != 0 || got.MonthMicros != 23_400 {
			t.Errorf("the next day: %+v, want 0 today, 23400 this month", got)
		}
	})
}

// TestRunCostGathersTheRunsItCaused: a run keeps its own tokens, and its
// cost adds that of the runs it caused (a child's reply stored before or
// after its parent's), up the chain.
func TestRunCostGathersTheRunsItCaused(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		caller, asked := mustAgent(t, s, acct.ID, "caller"), mustAgent(t, s, acct.ID, "asked")
		accept := func(a domain.Agent, text, parent string) domain.Run {
			t.Helper()
			r, _, err := s.Runs().AcceptRun(ctx, domain.Run{AccountID: acct.ID, AgentID: a.ID, Source: domain.SourceAPI,
				Text: text, MessageID: "msg_" + text, Strategy: domain.StrategyEnqueue, ParentRunID: parent})
			mustOK(t, err)
			return r
		}
		reply := func(r domain.Run, in, out int, micros int64) {
			t.Helper()
			_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, r.AgentID, domain.ConversationRef{},
				domain.Message{Text: r.Text, PromptTokens: in},
				domain.Message{ID: r.MessageID, RunID: r.ID, Text: "r", PromptTokens: in, CompletionTokens: out, CostMicros: micros})
			mustOK(t, err)
		}
		top := accept(caller, "top", "")
		mid := accept(asked, "mid", top.ID)
		leaf := accept(asked, "leaf", mid.ID)
		reply(leaf, 10, 1, 7)
		reply(top, 1000, 100, 300) // before mid's: the order does not matter
		reply(mid, 200, 20, 50)
		for _, c := range []struct {
			run     domain.Run
			in, out int
			micros  int64
		}{{top, 1000, 100, 357}, {mid, 200, 20, 57}, {leaf, 10, 1, 7}} {
			got, err := s.Runs().GetRun(ctx, acct.ID, c.run.AgentID, c.run.ID)
			mustOK(t, err)
			if got.InputTokens != c.in || got.OutputTokens != c.out || got.CostMicros != c.micros {
				t.Errorf("run %s: %d in, %d out, %d micros; want %d, %d, %d", c.run.Text, got.InputTokens, got.OutputTokens,
					got.CostMicros, c.in, c.out, c.micros)
			}
		}
	})
}
