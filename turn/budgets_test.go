package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/turn"
)

// TestRunningRunCountsItsStepsAgainstTheBudget: while a run waits for its
// second provider call, a budget check already counts what its first
// (a tool step) cost; once it finished, its whole cost counts once.
func TestRunningRunCountsItsStepsAgainstTheBudget(t *testing.T) {
	c := newToolCase(t, map[string]json.RawMessage{"modelSettings": json.RawMessage(`{"price":{"input":2,"output":8}}`),
		"settings": json.RawMessage(`{"budget":{"daily":1}}`)})
	c.srv.Enqueue(llmtest.Reply{ToolCalls: calls("SOL"), PromptTokens: 1000, CompletionTokens: 500}) // 6,000 micros
	c.srv.Enqueue(llmtest.Reply{Text: "Done.", PromptTokens: 2000, CompletionTokens: 100, Delay: time.Second})
	q := domain.SpendQuery{AccountID: c.agent.AccountID, AgentID: c.agent.ID, Limits: domain.BudgetLimits{AgentDaily: 1_000_000}}
	daySpend := func() int64 {
		sp, err := c.st.Analytics().BudgetSpend(context.Background(), q)
		testutil.OK(t, err)
		return sp.AgentDay
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.svc.Reply(context.Background(), c.input())
		done <- err
	}()
	testutil.Eventually(t, "the tool step counted", func() error { return testutil.Equal("spent", daySpend(), int64(6_000)) })
	testutil.OK(t, <-done)
	if got := daySpend(); got != 10_800 { // 3,000 in and 600 out in all
		t.Fatalf("spent %d after the run, want 10800", got)
	}
}

// TestSpentBudgetFailsAPlatformRun: a platform message over a spent
// budget makes no reply and a run that failed with BUDGET_EXCEEDED; the
// model is not called.
func TestSpentBudgetFailsAPlatformRun(t *testing.T) {
	model := &scriptedModel{replies: []func() (llm.Reply, error){func() (llm.Reply, error) {
		return llm.Reply{Text: "paid", Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 1000}}, nil
	}}}
	svc, st, agent := newServiceWith(t, turn.Config{Model: model}, map[string]json.RawMessage{
		"modelSettings": json.RawMessage(`{"price":{"input":1,"output":1}}`),
		"settings":      json.RawMessage(`{"budget":{"perUserDaily":0.001}}`)}, nil)
	ctx := context.Background()
	in := turn.Input{AccountID: agent.AccountID, AgentID: agent.ID, Text: "hi", UserID: "telegram:42", Source: domain.SourceTelegram,
		Conv: domain.ConversationRef{UserID: "telegram:42", Platform: "telegram"}}
	if _, err := svc.Reply(ctx, in); err != nil { // USD 0.002: over the user's 0.001
		t.Fatal(err)
	}
	_, err := svc.Reply(ctx, in)
	var over *domain.BudgetExceededError
	if !errors.As(err, &over) || over.Budget.Scope != domain.ScopeUser || over.Budget.SpentMicros != 2_000 {
		t.Fatalf("second message: %v", err)
	}
	runs, _, err := st.Runs().ListRuns(ctx, agent.AccountID, domain.RunQuery{AgentID: agent.ID, Limit: 10})
	testutil.OK(t, err)
	if got := fmt.Sprint(runs[0].Source, " ", runs[0].Status, " ", runs[0].ErrorCode, " ", runs[0].ConversationID != ""); len(runs) != 2 ||
		got != "telegram failed BUDGET_EXCEEDED true" {
		t.Fatalf("%d runs, newest %s", len(runs), got)
	}
	if model.calls != 1 {
		t.Fatalf("the model was called %d times, want 1", model.calls)
	}
}
