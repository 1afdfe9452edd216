package turn_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
)

// TestExpireApprovalsLeavesLostRuns: ExpireApprovals, the look of a
// database whose job engine resumes lost runs, denies an expired approval
// and goes on with its run, and leaves a lost run to the engine.
func TestExpireApprovalsLeavesLostRuns(t *testing.T) {
	c, skew, waiting := expiringApproval(t)
	ctx := context.Background()
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
