package turn

import (
	"cmp"
	"context"
	"errors"

	"github.com/agentd/agentd/domain"
)

// Budgets is what a turn reads and reports of the spend its agent's
// budgets hold (see domain.BudgetLimits): always the database's figures as
// of the read, so every replica checks the same spend.
type Budgets interface {
	// AccountBudget is the account's monthly budget, 0 for none.
	AccountBudget(ctx context.Context, accountID string) (int64, error)
	// BudgetSpend is the spend each budget of q that is set counts.
	BudgetSpend(ctx context.Context, q domain.SpendQuery) (domain.BudgetSpend, error)
	// AlertSpend reports, once per window, each budget of q whose spend
	// has passed 80% and 100%.
	AlertSpend(ctx context.Context, q domain.SpendQuery) error
}

// spendQuery is what holds t's run: its agent's budgets, the speaker's
// daily one and the account's monthly one, read once per turn.
func (s *Service) spendQuery(ctx context.Context, t *Turn) (domain.SpendQuery, error) {
	if t.limits == nil {
		monthly, err := s.cfg.Stores.Budgets.AccountBudget(ctx, t.agent.AccountID)
		if err != nil {
			return domain.SpendQuery{}, err
		}
		limits := t.agent.Budget().Limits(monthly)
		t.limits = &limits
	}
	return domain.SpendQuery{AccountID: t.agent.AccountID, AgentID: t.agent.ID, UserID: t.in.UserID, Limits: *t.limits}, nil
}

// checkBudget refuses t's run with *domain.BudgetExceededError when a
// budget that holds it is reached, the first of them in the order
// domain.BudgetSpend.Budgets gives: the spend compared is what finished
// runs and the runs still going have spent, as of now. A run that starts
// finishes even if it crosses the line, so the overshoot is at most what
// the runs going at once cost.
func (s *Service) checkBudget(ctx context.Context, t *Turn) error {
	q, err := s.spendQuery(ctx, t)
	if err != nil || !q.Limits.Any() {
		return err
	}
	spent, err := s.cfg.Stores.Budgets.BudgetSpend(ctx, q)
	if err != nil {
		return err
	}
	t.checked = &spent
	for _, b := range spent.Budgets(q.Limits, q.UserID) {
		if b.Reached() {
			return &domain.BudgetExceededError{Budget: b}
		}
	}
	return nil
}

// refuseRun stores the run of t, which no request waits for (a platform
// message, a schedule, another agent's ask), as failed with the budget
// over's code, so its caller's history and webhooks show why nothing was
// answered; it returns over, or why the run could not be stored (a
// schedule's due time another process fired: domain.ErrScheduleTaken).
func (s *Service) refuseRun(ctx context.Context, t *Turn, over *domain.BudgetExceededError) error {
	convID, err := s.cfg.Stores.Conversations.OpenConversation(ctx, t.agent.AccountID, t.agent.ID, t.in.Conv)
	if err != nil {
		return err
	}
	t.convID = convID
	_, err = s.cfg.Stores.Runs.RefuseRun(ctx, t.newRun(), domain.BudgetExceededCode, over.Error())
	return cmp.Or(err, error(over))
}

// alertSpend reports the budgets of t's agent whose spend t's stored
// reply, which cost cost, took past 80% or 100%; a failure is logged, the
// reply stands.
func (s *Service) alertSpend(ctx context.Context, t *Turn, cost int64) {
	q, err := s.spendQuery(ctx, t)
	if err == nil && q.Limits.Any() && !farFromLimits(t.checked, q, cost) {
		err = s.cfg.Stores.Budgets.AlertSpend(ctx, q)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		s.cfg.Logger.WarnContext(ctx, "budget alerts not checked", "agent", t.agent.ID, "error", err)
	}
}

// farFromLimits reports whether every budget of q stays under half its
// limit with cost added to what was spent when the run was checked
// (checked; nil for a run checked by another process): its alerts cannot
// be due, and are not read for. Half leaves room for what runs going at
// the same time spent since, which the next run's reply reads.
func farFromLimits(checked *domain.BudgetSpend, q domain.SpendQuery, cost int64) bool {
	if checked == nil {
		return false
	}
	for _, b := range checked.Budgets(q.Limits, q.UserID) {
		if (b.SpentMicros+cost)*2 >= b.LimitMicros {
			return false
		}
	}
	return true
}
