package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/turn"
)

// TestExpireApprovalsLeavesLostRuns: ExpireApprovals, the look of a
// database whose job engine resumes lost runs, denies an expired approval
// and goes on with its run, and leaves a lost run to the engine.
func TestExpireApprovalsLeavesLostRuns(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	c := newToolCase(t, map[string]json.RawMessage{
		"actions":  json.RawMessage(`[{"name":"get_price","description":"d","examples":[],"requiresApproval":true}]`),
		"settings": json.RawMessage(`{"runs":{"approvalTimeout":60}}`)}, store.WithClock(clock))
	ctx := context.Background()
	c.srv.Respond(llmtest.Reply{Text: "No price today."})
	c.srv.Enqueue(llmtest.Reply{ToolCalls: calls("SOL")})
	_, err := c.svc.Reply(ctx, c.input())
	var waiting *turn.AwaitingDecisionError
	if !errors.As(err, &waiting) {
		t.Fatalf("reply: %v, want the run waiting", err)
	}
	lost, _, err := c.st.Runs().AcceptRun(ctx, domain.Run{AccountID: c.agent.AccountID, AgentID: c.agent.ID,
		Source: domain.SourceAPI, Text: "anyone?", MessageID: "msg_lost", Strategy: domain.StrategyEnqueue})
	testutil.OK(t, err)
	skew.Store(int64(61 * time.Second)) // the approval expired, and the queued run's holder is lost
	looking, stop := context.WithCancel(ctx)
	defer stop()
	go c.svc.ExpireApprovals(looking, 10*time.Millisecond)
	testutil.Eventually(t, "the run whose approval expired completed", func() error {
		run, err := c.st.Runs().GetRun(ctx, c.agent.AccountID, c.agent.ID, waiting.Run.ID)
		if err != nil {
			return err
		}
		return testutil.Equal("status", run.Status, domain.RunCompleted)
	})
	stop()
	c.svc.Close()
	status, err := c.st.Runs().RunStatus(ctx, lost.ID)
	testutil.OK(t, err)
	if status != domain.RunQueued {
		t.Errorf("the lost run is %s: ExpireApprovals resumed it", status)
	}
}
