package store

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
)

// Spend is read from the hourly rollups, which the transaction of each
// exchange adds its cost to: a window's spend is a few rows per agent and
// hour, whatever the number of messages, and always the database's own as
// of the read (no cache), so every replica reads the same figure.

// spendWindows are the UTC day and month that contain now, as the
// starts of each and of the next.
func spendWindows(now time.Time) (day, nextDay, month, nextMonth time.Time) {
	now = now.UTC()
	day = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	month = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return day, day.AddDate(0, 0, 1), month, month.AddDate(0, 1, 0)
}

// spendColumns sum the cost of the hourly rows of agent_hour_stats h a
// query selects, and the part of it from its first argument (the day's
// start) on: every spend figure, shown or checked against a budget, is
// read with them.
const spendColumns = `COALESCE(SUM(CASE WHEN h.hour >= ? THEN h.cost_micros ELSE 0 END), 0) AS day_micros,
	COALESCE(SUM(h.cost_micros), 0) AS month_micros`

// spendSums are what spendColumns read.
type spendSums struct{ DayMicros, MonthMicros int64 }

// readSpend sums the month's rows where (with args) selects, as of the
// store's clock.
func (s Analytics) readSpend(ctx context.Context, where string, args ...any) (domain.Spend, error) {
	day, nextDay, month, nextMonth := spendWindows(s.now())
	var sums spendSums
	err := s.read(ctx).Raw("SELECT "+spendColumns+" FROM agent_hour_stats h "+where+" AND h.hour >= ?",
		append(append([]any{day}, args...), month)...).Scan(&sums).Error
	return domain.Spend{DayMicros: sums.DayMicros, MonthMicros: sums.MonthMicros, DayResetsAt: nextDay,
		MonthResetsAt: nextMonth}, err
}

// AgentSpend is what agent agentID of account accountID spent today and
// this month (UTC). It returns ErrNotFound for a missing agent or one of
// another account.
func (s Analytics) AgentSpend(ctx context.Context, accountID, agentID string) (domain.Spend, error) {
	if err := ownedAgent(s.read(ctx), accountID, agentID); err != nil {
		return domain.Spend{}, wrap("agent spend", err)
	}
	sp, err := s.readSpend(ctx, "WHERE h.agent_id = ?", agentID)
	return sp, wrap("agent spend", err)
}

// AccountSpend is what the agents of account accountID spent today and
// this month (UTC). An agent deleted takes its rollups, and so its spend,
// with it.
func (s Analytics) AccountSpend(ctx context.Context, accountID string) (domain.Spend, error) {
	sp, err := s.readSpend(ctx, "JOIN agents a ON a.id = h.agent_id WHERE a.account_id = ?", accountID)
	return sp, wrap("account spend", err)
}
