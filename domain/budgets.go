package domain

import (
	"fmt"
	"time"
)

// BudgetScope is whose spend a budget holds: the agent's, one user's of
// the agent, or the whole account's.
type BudgetScope string

// The budget scopes.
const (
	ScopeAgent   BudgetScope = "agent"
	ScopeUser    BudgetScope = "user"
	ScopeAccount BudgetScope = "account"
)

// BudgetPeriod is a budget's window: the UTC calendar day or month.
type BudgetPeriod string

// The budget periods.
const (
	PeriodDay   BudgetPeriod = "day"
	PeriodMonth BudgetPeriod = "month"
)

// Micros is usd in millionths of a US dollar, rounded to the nearest.
func Micros(usd float64) int64 { return int64(usd*1e6 + 0.5) }

// BudgetLimits are the budgets that hold an agent's next run, in
// millionths of a US dollar, 0 for none: the agent's own (settings.budget)
// and its account's monthly one.
type BudgetLimits struct {
	AgentDaily, AgentMonthly, PerUserDaily, AccountMonthly int64
}

// Limits is b in millionths of a US dollar, with the account's monthly
// budget.
func (b Budget) Limits(accountMonthly int64) BudgetLimits {
	micros := func(v *float64) int64 {
		if v == nil {
			return 0
		}
		return Micros(*v)
	}
	return BudgetLimits{AgentDaily: micros(b.Daily), AgentMonthly: micros(b.Monthly),
		PerUserDaily: micros(b.PerUserDaily), AccountMonthly: accountMonthly}
}

// Any reports whether a budget is set.
func (l BudgetLimits) Any() bool {
	return l.AgentDaily > 0 || l.AgentMonthly > 0 || l.PerUserDaily > 0 || l.AccountMonthly > 0
}

// SpendQuery names whose spend a budget check reads: the agent's, the
// user's of it (UserID "" reads none), and the account's.
type SpendQuery struct {
	AccountID, AgentID, UserID string
	Limits                     BudgetLimits
}

// BudgetSpend is what was spent, as of one read, in each window a set
// budget of a SpendQuery counts (0 for a budget not set): finished runs
// and what runs not yet finished have spent so far.
type BudgetSpend struct {
	AgentDay, AgentMonth, UserDay, AccountMonth int64
	DayResetsAt, MonthResetsAt                  time.Time
}

// BudgetState is one budget against its spend: what a refusal and an
// alert report.
type BudgetState struct {
	Scope       BudgetScope
	Period      BudgetPeriod
	UserID      string // the user of a ScopeUser budget
	LimitMicros int64
	SpentMicros int64
	ResetsAt    time.Time
}

// Budgets pairs each budget of l that is set with its spend in s, in the
// order a refusal names the first reached: agent day, agent month, the
// user's day, account month.
func (s BudgetSpend) Budgets(l BudgetLimits, userID string) []BudgetState {
	all := []BudgetState{
		{ScopeAgent, PeriodDay, "", l.AgentDaily, s.AgentDay, s.DayResetsAt},
		{ScopeAgent, PeriodMonth, "", l.AgentMonthly, s.AgentMonth, s.MonthResetsAt},
		{ScopeUser, PeriodDay, userID, l.PerUserDaily, s.UserDay, s.DayResetsAt},
		{ScopeAccount, PeriodMonth, "", l.AccountMonthly, s.AccountMonth, s.MonthResetsAt},
	}
	set := all[:0]
	for _, b := range all {
		if b.LimitMicros > 0 && (b.Scope != ScopeUser || userID != "") {
			set = append(set, b)
		}
	}
	return set
}

// Reached reports whether the budget's spend has come to its limit.
func (b BudgetState) Reached() bool { return b.SpentMicros >= b.LimitMicros }

// BudgetExceededError refuses a run because Budget was reached: a request
// is answered 402 BUDGET_EXCEEDED, a run without one ends failed with it.
type BudgetExceededError struct{ Budget BudgetState }

// BudgetExceededCode is the code of a run a budget refused.
const BudgetExceededCode = "BUDGET_EXCEEDED"

func (e *BudgetExceededError) Error() string {
	b := e.Budget
	return fmt.Sprintf("the %s's %s budget of $%.2f is spent ($%.6f); it resets at %s",
		b.Scope, periodWord(b.Period), float64(b.LimitMicros)/1e6, float64(b.SpentMicros)/1e6, b.ResetsAt.Format(time.RFC3339))
}

func periodWord(p BudgetPeriod) string {
	if p == PeriodDay {
		return "daily"
	}
	return "monthly"
}

// Requested reports whether a run of source s answers a request, which a
// refusal answers (with no run), rather than a platform message, a
// schedule or another agent's ask, whose refused run is stored failed.
func (s RunSource) Requested() bool {
	switch s {
	case SourceAPI, SourceOpenAI, SourceA2A, SourceMCP:
		return true
	}
	return false
}
