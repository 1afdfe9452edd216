package turn

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/tools"
)

// DefaultApprovalTimeout is how long a call waits for its decision when
// settings.runs.approvalTimeout sets nothing.
const DefaultApprovalTimeout = 24 * time.Hour

// Runs waiting for decisions: what the turn asks of the store.
type decisions interface {
	// AwaitDecision moves a running run to requires_action until
	// expiresAt, with its steps.
	AwaitDecision(ctx context.Context, id string, steps []domain.RunStep, expiresAt time.Time) (domain.Run, error)
	// DecideRun records decisions on the calls a run waits for, queueing
	// it again when none is left.
	DecideRun(ctx context.Context, accountID, agentID, id string, decisions []domain.Decision, all bool) (domain.Run, error)
	// ExpiredRuns are runs waiting past their expiry.
	ExpiredRuns(ctx context.Context, limit int) ([]domain.Run, error)
}

// AwaitingDecisionError ends a turn whose run waits for a person's
// decision on some of its tool calls: the run goes on once they are
// decided (or expire), on whichever process.
type AwaitingDecisionError struct{ Run domain.Run }

func (e *AwaitingDecisionError) Error() string {
	return "turn: the run " + e.Run.ID + " waits for a decision on its tool calls"
}

// errAwaiting ends the tool loop of a step whose calls wait for decisions.
var errAwaiting = errors.New("turn: calls wait for decisions")

// approvalPolicy is the settings that make an agent's calls wait.
type approvalPolicy struct {
	actions map[string]bool // action names with requiresApproval
	// servers: an MCP server's "always", or the names of its tools that
	// wait; absent (or "never") waits for nothing.
	servers map[string]serverApproval
}

type serverApproval struct {
	always bool
	tools  []string
}

// approvalPolicyOf reads the agent's actions[].requiresApproval and
// settings.mcp.servers.<name>.requireApproval.
func approvalPolicyOf(a domain.Agent) approvalPolicy {
	p := approvalPolicy{actions: map[string]bool{}, servers: map[string]serverApproval{}}
	var acts []struct {
		Name             string `json:"name"`
		RequiresApproval bool   `json:"requiresApproval"`
	}
	if ok, err := a.Fields.Decode("actions", &acts); ok && err == nil {
		for _, act := range acts {
			p.actions[act.Name] = act.RequiresApproval
		}
	}
	var settings struct {
		MCP struct {
			Servers map[string]struct {
				RequireApproval json.RawMessage `json:"requireApproval"`
			} `json:"servers"`
		} `json:"mcp"`
	}
	if ok, err := agent.Document(a.Fields).Decode("settings", &settings); ok && err == nil {
		for name, srv := range settings.MCP.Servers {
			var mode string
			var names []string
			switch {
			case json.Unmarshal(srv.RequireApproval, &mode) == nil:
				p.servers[name] = serverApproval{always: mode == "always"}
			case json.Unmarshal(srv.RequireApproval, &names) == nil:
				p.servers[name] = serverApproval{tools: names}
			}
		}
	}
	return p
}

// waits reports whether a call of tool t waits for a decision. The tools
// the turn runs itself (memory, ask_agent) never wait.
func (p approvalPolicy) waits(t tools.Tool) bool {
	switch t.Source {
	case tools.SourceAction:
		return p.actions[t.Name]
	case tools.SourceMCP:
		srv := p.servers[t.Server]
		return srv.always || slices.Contains(srv.tools, t.Original)
	}
	return false
}

// approvalTimeout is the agent's settings.runs.approvalTimeout, else the
// default.
func approvalTimeout(a domain.Agent) time.Duration {
	var settings struct {
		Runs struct {
			ApprovalTimeout int `json:"approvalTimeout"`
		} `json:"runs"`
	}
	if ok, err := agent.Document(a.Fields).Decode("settings", &settings); ok && err == nil && settings.Runs.ApprovalTimeout > 0 {
		return time.Duration(settings.Runs.ApprovalTimeout) * time.Second
	}
	return DefaultApprovalTimeout
}

// deniedResult is what the model gets for a denied call.
func deniedResult(reason string) string {
	if reason == "" {
		reason = "no reason given"
	}
	b, _ := json.Marshal(map[string]string{"error": "denied", "reason": reason}) // strings only
	return string(b)
}

// approvalOf is the record's form of a decision.
func approvalOf(d domain.Decision) *domain.Approval {
	return &domain.Approval{Approved: d.Approve, By: d.By, ByName: d.ByName, Reason: d.Reason, DecidedAt: d.DecidedAt}
}

// pause stores t's run waiting for the decisions its last step needs and
// ends the turn with *AwaitingDecisionError: nothing is held while it
// waits, however long.
func (s *Service) pause(ctx context.Context, t *Turn) error {
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	// The steps go with the wait in one write, so the waiting calls are
	// stored even if a step's own write failed.
	run, err := s.cfg.Stores.Runs.AwaitDecision(writeCtx, t.runID, t.tools.log.all(), time.Now().Add(approvalTimeout(t.agent)))
	if err != nil {
		return err
	}
	t.setRun(run)
	t.ended.Store(true) // the run goes on elsewhere, later: Release must not end it
	s.board.runEnded(t.lane())
	return &AwaitingDecisionError{Run: run}
}

// Decide records decisions on the calls run id of the account's agent
// waits for (all of them, as the API must; a platform's button decides
// one) and, once none is left waiting, goes on with the run here.
func (s *Service) Decide(ctx context.Context, accountID, agentID, id string, decisions []domain.Decision, all bool) (domain.Run, error) {
	run, err := s.cfg.Stores.Runs.DecideRun(ctx, accountID, agentID, id, decisions, all)
	if err != nil {
		return domain.Run{}, err
	}
	if run.Status == domain.RunQueued {
		s.goOnLater(ctx, run)
	}
	return run, nil
}

// expire denies, as expired, the calls of the runs waiting past their
// expiry, and goes on with each.
func (s *Service) expire(ctx context.Context) {
	runs, err := s.cfg.Stores.Runs.ExpiredRuns(ctx, lostRunsPerLook)
	if err != nil && ctx.Err() == nil {
		s.cfg.Logger.WarnContext(ctx, "looking for expired approvals", "error", err)
	}
	for _, r := range runs {
		var ds []domain.Decision
		now := time.Now()
		for _, c := range r.Waiting() {
			ds = append(ds, domain.Decision{CallID: c.ID, Reason: "expired", By: "expiry", DecidedAt: now})
		}
		if _, err := s.Decide(ctx, r.AccountID, r.AgentID, r.ID, ds, true); err != nil {
			s.cfg.Logger.WarnContext(ctx, "expiring approvals", "run", r.ID, "error", err)
		}
	}
}

// goOnLater goes on with run r here, without its caller.
func (s *Service) goOnLater(ctx context.Context, r domain.Run) {
	ctx = context.WithoutCancel(ctx)
	s.bg.Go(func() { s.goOn(ctx, r) })
}
