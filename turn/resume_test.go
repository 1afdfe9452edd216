package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/turn"
)

// TestResumeFromStoredSteps: a run whose holder was lost during its
// second tool step is resumed from its stored steps: the finished call
// is not run again (the model gets its stored result), the unfinished one
// runs, one provider call finishes the turn, and the reply is stored once.
func TestResumeFromStoredSteps(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	c := newToolCase(t, nil, store.WithClock(clock))
	ctx := context.Background()
	accepted, err := c.svc.Accept(ctx, c.input())
	if err != nil {
		t.Fatal(err)
	}
	run := accepted.Run()
	if _, started, err := c.st.Runs().StartRun(ctx, run.ID); err != nil || !started {
		t.Fatalf("start: %v, %v", started, err)
	}
	sol := domain.ToolCall{ID: "call_sol", Name: "get_price", Arguments: json.RawMessage(`{"symbol":"SOL"}`), OK: true, Result: "sol is 3"}
	steps := []domain.RunStep{
		{Text: "Looking.", TotalTokens: 7, Calls: []domain.StepCall{{ProviderID: "p1", Arguments: `{"symbol":"SOL"}`, Record: sol, Result: "sol is 3", Done: true}}},
		{Calls: []domain.StepCall{{ProviderID: "p2", Arguments: `{"symbol":"ETH"}`,
			Record: domain.ToolCall{ID: "call_eth", Name: "get_price", Arguments: json.RawMessage(`{}`)}}}},
	}
	if err := c.st.Runs().SaveRunSteps(ctx, run.ID, steps); err != nil {
		t.Fatal(err)
	}
	// The holder is gone: nothing beats for longer than the timeout.
	if again, err := c.svc.Resume(ctx, run.ID); err != nil || again <= 0 {
		t.Fatalf("resume of a run whose holder beats: %v, %v", again, err)
	}
	skew.Store(int64(2 * store.RunBeatTimeout))
	c.srv.Respond(llmtest.Reply{Text: "SOL 3, ETH 3.", PromptTokens: 5, CompletionTokens: 3})
	if again, err := c.svc.Resume(ctx, run.ID); err != nil || again != 0 {
		t.Fatalf("resume: %v, %v", again, err)
	}
	if len(c.tools.calls) != 1 || string(c.tools.calls[0].Arguments) != `{"symbol":"ETH"}` || c.tools.calls[0].ID != "call_eth" {
		t.Fatalf("tool calls after resume = %+v; want ETH's alone, under its stored id", c.tools.calls)
	}
	reqs := c.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d provider calls after resume, want 1", len(reqs))
	}
	results := reqs[0].ToolResults()
	if len(results) != 2 || results[0].Content != "sol is 3" || results[1].Content != `{"symbol": "ETH", "price": 3}` {
		t.Errorf("results sent to the model = %+v", results)
	}
	got, err := c.st.Runs().GetRun(ctx, c.agent.AccountID, c.agent.ID, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.RunCompleted || got.Attempts != 2 || got.Reply == nil || got.Reply.Text != "Looking.\n\nSOL 3, ETH 3." {
		t.Fatalf("run after resume = %s, %d attempts, reply %+v", got.Status, got.Attempts, got.Reply)
	}
	if calls := got.Reply.Metadata.ToolCalls; len(calls) != 2 || calls[0].ID != "call_sol" || calls[1].ID != "call_eth" || !calls[1].OK {
		t.Errorf("reply's tool calls = %+v", calls)
	}
	history, err := c.st.Conversations().History(ctx, c.agent.AccountID, c.agent.ID, c.input().Conv, 10)
	if err != nil || len(history) != 2 || history[1].ID != run.MessageID {
		t.Fatalf("history = %+v, %v; want the exchange once, under the run's message id", history, err)
	}
	if again, err := c.svc.Resume(ctx, run.ID); err != nil || again != 0 {
		t.Errorf("resume of an ended run: %v, %v", again, err)
	}
	if len(c.tools.calls) != 1 || c.srv.Count() != 1 {
		t.Error("an ended run was run again")
	}
}

// expiringApproval is a tool case whose get_price waits for a decision
// up to 60 s, with a store clock skew moves, and its run waiting for one
// call of it; the provider answers "No price today." once it goes on.
func expiringApproval(t *testing.T) (*toolCase, *atomic.Int64, *turn.AwaitingDecisionError) {
	t.Helper()
	skew := new(atomic.Int64)
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	c := newToolCase(t, map[string]json.RawMessage{
		"actions":  json.RawMessage(`[{"name":"get_price","description":"d","examples":[],"requiresApproval":true}]`),
		"settings": json.RawMessage(`{"runs":{"approvalTimeout":60}}`)}, store.WithClock(clock))
	c.srv.Respond(llmtest.Reply{Text: "No price today."})
	c.srv.Enqueue(llmtest.Reply{ToolCalls: calls("SOL")})
	_, err := c.svc.Reply(context.Background(), c.input())
	var waiting *turn.AwaitingDecisionError
	if !errors.As(err, &waiting) {
		t.Fatalf("reply: %v, want the run waiting", err)
	}
	return c, skew, waiting
}

// TestApprovalExpires: a call that waits for a decision past
// settings.runs.approvalTimeout is denied as expired by the process
// looking for lost runs, and the run goes on without running it; going on
// after the wait is not a new attempt.
func TestApprovalExpires(t *testing.T) {
	c, skew, waiting := expiringApproval(t)
	ctx := context.Background()
	action := waiting.Run.RequiredAction()
	if action == nil || len(action.ToolCalls) != 1 || time.Until(action.ExpiresAt) > time.Minute || len(c.tools.calls) != 0 {
		t.Fatalf("waiting run = %+v; %d tool calls", waiting.Run, len(c.tools.calls))
	}
	skew.Store(int64(61 * time.Second))
	looking, stop := context.WithCancel(ctx)
	defer stop()
	go c.svc.ResumeLost(looking, 10*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	var run domain.Run
	var err error
	for run.Status != domain.RunCompleted {
		if time.Now().After(deadline) {
			t.Fatalf("run = %+v, want it completed after its approval expired", run)
		}
		time.Sleep(10 * time.Millisecond)
		if run, err = c.st.Runs().GetRun(ctx, c.agent.AccountID, c.agent.ID, waiting.Run.ID); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	c.svc.Close()
	if len(c.tools.calls) != 0 || run.Attempts != 1 {
		t.Errorf("%d tool calls, %d attempts; want none and 1", len(c.tools.calls), run.Attempts)
	}
	calls := run.Reply.Metadata.ToolCalls
	if len(calls) != 1 || calls[0].OK || calls[0].Approval == nil || calls[0].Approval.By != "expiry" || calls[0].Approval.Reason != "expired" {
		t.Fatalf("tool calls = %+v", calls)
	}
	if got := c.srv.Last(t).ToolResults(); len(got) != 1 || got[0].Content != `{"error":"denied","reason":"expired"}` {
		t.Errorf("the model got %+v", got)
	}
}

// TestHandOver: a process that stops hands its running run over without
// ending it: the turn ends with ErrHandedOver, the run stays running and
// is lost at once, and another process resumes it from its stored step,
// the finished call not run again.
func TestHandOver(t *testing.T) {
	c := newToolCase(t, nil)
	ctx := context.Background()
	c.srv.Respond(llmtest.Reply{Text: "SOL is 3.", Delay: 3 * time.Second})
	c.srv.Enqueue(llmtest.Reply{ToolCalls: calls("SOL")})
	ended := make(chan error, 1)
	go func() {
		_, err := c.svc.Reply(ctx, c.input())
		ended <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for c.srv.Count() < 2 { // the tool ran; the last call is in flight
		if time.Now().After(deadline) {
			t.Fatal("the turn never reached its second provider call")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.svc.HandOver()
	if err := <-ended; !errors.Is(err, turn.ErrHandedOver) {
		t.Fatalf("turn ended with %v, want ErrHandedOver", err)
	}
	lost, err := c.st.Runs().LostRuns(ctx, 10)
	if err != nil || len(lost) != 1 {
		t.Fatalf("lost runs after the hand-over: %v, %v", lost, err)
	}
	// Another process: a second service over the same store.
	other, err := turn.New(turn.Config{Stores: turn.Stores{Agents: c.st.Agents(), Conversations: c.st.Conversations(),
		Analytics: c.st.Analytics(), Runs: c.st.Runs(), Budgets: c.st.Analytics()}, Model: c.model, Tools: fakeBox{c.tools}, Semaphore: limit.NewMemorySemaphore()})
	if err != nil {
		t.Fatal(err)
	}
	c.srv.Respond(llmtest.Reply{Text: "SOL is 3."})
	if _, err := other.Resume(ctx, lost[0]); err != nil {
		t.Fatal(err)
	}
	run, err := c.st.Runs().GetRun(ctx, c.agent.AccountID, c.agent.ID, lost[0])
	if err != nil || run.Status != domain.RunCompleted || run.Reply == nil || run.Reply.Text != "SOL is 3." || run.Attempts != 2 {
		t.Fatalf("run after the hand-over = %+v, %v", run, err)
	}
	if len(c.tools.calls) != 1 {
		t.Errorf("the tool ran %d times, want once", len(c.tools.calls))
	}
}
