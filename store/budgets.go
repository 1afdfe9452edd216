package store

import (
	"context"
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/price"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// A budget check compares the database's spend as of the check, the same
// figure on every replica: the hourly rollups, which each stored reply
// adds its cost to (the hours past read once, see pastSpend), plus what
// the runs not finished have spent in their stored steps
// (runs.step_cost_micros, zeroed when their reply's cost reaches the
// rollups in the same transaction). A user's day is read from the user's
// runs of the day (runs.own_cost_micros, from its index alone).

// budgetAlertRow is a row of budget_alerts: one alert sent, keyed by its
// budget, window and percent, so only one transaction ever inserts it.
type budgetAlertRow struct {
	AccountID   ctext     `gorm:"primaryKey;not null"`
	AgentID     ctext     `gorm:"primaryKey;not null"`
	UserID      string    `gorm:"primaryKey;not null"`
	Scope       string    `gorm:"primaryKey;not null"`
	Period      string    `gorm:"primaryKey;not null"`
	WindowStart time.Time `gorm:"primaryKey;not null;autoCreateTime:false"`
	Percent     int       `gorm:"primaryKey;not null;autoIncrement:false"`
	CreatedAt   time.Time `gorm:"not null;autoCreateTime:false"`
}

// TableName names the table.
func (budgetAlertRow) TableName() string { return "budget_alerts" }

// BudgetSpend reads the spend each budget of q that is set counts, now.
func (s Analytics) BudgetSpend(ctx context.Context, q domain.SpendQuery) (domain.BudgetSpend, error) {
	sp, err := s.budgetSpend(s.read(ctx), q)
	return sp, wrap("budget spend", err)
}

func (s Analytics) budgetSpend(db *gorm.DB, q domain.SpendQuery) (domain.BudgetSpend, error) {
	day, nextDay, month, nextMonth := spendWindows(s.now())
	out := domain.BudgetSpend{DayResetsAt: nextDay, MonthResetsAt: nextMonth}
	l := q.Limits
	if l.AgentDaily > 0 || l.AgentMonthly > 0 {
		var err error
		if out.AgentDay, out.AgentMonth, err = s.windowSpend(db, "agent:"+q.AgentID, day, month, "h.agent_id = ?", "agent_id || '' = ?", q.AgentID); err != nil {
			return out, err
		}
	}
	if l.PerUserDaily > 0 && q.UserID != "" {
		err := db.Raw(`SELECT COALESCE(SUM(own_cost_micros), 0) FROM runs WHERE agent_id = ? AND user_id = ? AND created_at >= ?`,
			q.AgentID, q.UserID, day).Scan(&out.UserDay).Error
		if err != nil {
			return out, err
		}
	}
	if l.AccountMonthly > 0 {
		var err error
		_, out.AccountMonth, err = s.windowSpend(db, "account:"+q.AccountID, day, month,
			"h.agent_id IN (SELECT id FROM agents WHERE account_id = ?)", "account_id || '' = ?", q.AccountID)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// windowSpend is the day's and the month's spend of the rollups rollups
// selects and the unfinished runs runs selects, both with arg (key names
// them for pastSpend). A run not finished counts in both windows, whenever
// it began: its steps were paid for by now. The runs are found through
// idx_runs_status, the few not finished: runs names its column inside an
// expression (the column joined with an empty string), so the planner
// chooses no index on that column, which would walk every run of the
// agent or account.
func (s Analytics) windowSpend(db *gorm.DB, key string, day, month time.Time, rollups, runs string, arg any) (int64, int64, error) {
	cutoff := s.now().Truncate(time.Hour).Add(-time.Hour)
	if cutoff.Before(month) {
		cutoff = month
	}
	past, ok := s.past.get(key, cutoff)
	if !ok {
		err := db.Raw(`SELECT `+spendColumns+` FROM agent_hour_stats h WHERE `+rollups+` AND h.hour >= ? AND h.hour < ?`,
			day, arg, month, cutoff).Scan(&past.spendSums).Error
		if err != nil {
			return 0, 0, err
		}
		s.past.put(key, cutoff, past)
	}
	var recent struct{ DayMicros, MonthMicros, Running int64 }
	err := db.Raw(`SELECT `+spendColumns+`, (SELECT COALESCE(SUM(step_cost_micros), 0) FROM runs WHERE `+runs+` AND status IN ?) AS running
		FROM agent_hour_stats h WHERE `+rollups+` AND h.hour >= ?`, day, arg, activeStatuses, arg, cutoff).Scan(&recent).Error
	return past.DayMicros + recent.DayMicros + recent.Running, past.MonthMicros + recent.MonthMicros + recent.Running, err
}

// pastSpend keeps, per agent or account, what the rollups of this month
// hold for the hours before a cutoff, an hour before the current one: a
// reply adds its cost to the hour it is stored in, so those hours no
// longer change, and a budget check reads the database only for the last
// two hours (the month's rows of an agent are up to 744, of an account
// that times its agents). Every process keeps its own and reads the same
// figures: the sums of rows that no longer change.
type pastSpend struct {
	mu   sync.Mutex
	sums map[string]pastSums
}

// pastSums are a key's sums before cutoff.
type pastSums struct {
	cutoff time.Time
	spendSums
}

func newPastSpend() *pastSpend { return &pastSpend{sums: map[string]pastSums{}} }

// get is key's sums before cutoff, if kept.
func (p *pastSpend) get(key string, cutoff time.Time) (pastSums, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sums, ok := p.sums[key]
	return sums, ok && sums.cutoff.Equal(cutoff)
}

// put keeps key's sums before cutoff, in place of older ones.
func (p *pastSpend) put(key string, cutoff time.Time, sums pastSums) {
	sums.cutoff = cutoff
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sums[key] = sums
}

// AccountBudget is account id's monthly budget, in millionths of a US
// dollar, 0 for none.
func (s Analytics) AccountBudget(ctx context.Context, id string) (int64, error) {
	var micros int64
	err := s.read(ctx).Raw(`SELECT monthly_budget_micros FROM accounts WHERE id = ?`, id).Scan(&micros).Error
	return micros, wrap("account budget", err)
}

// alertPercents are the shares of a budget whose passing is reported, and
// the events that report them.
var alertPercents = []struct {
	percent int64
	event   domain.EventType
}{{80, domain.EventBudgetThreshold}, {100, domain.EventBudgetExceeded}}

// AlertSpend reports each budget of q its spend has passed 80% or 100%
// of, now, with budget.threshold or budget.exceeded: once per budget,
// window and percent, whatever the number of runs and replicas that see
// it passed, since the alert's row and its event commit together and only
// one transaction inserts the row. A finished run calls it once its cost
// is stored.
func (s Analytics) AlertSpend(ctx context.Context, q domain.SpendQuery) error {
	// Most replies pass no line: a read says so without the writer.
	if due, err := s.alertsDue(ctx, q); err != nil || !due {
		return wrap("alert spend", err)
	}
	return s.writeEvents(ctx, "alert spend", func(tx *gorm.DB, emit emitFunc) error {
		sp, err := s.budgetSpend(tx, q)
		if err != nil {
			return err
		}
		for _, b := range sp.Budgets(q.Limits, q.UserID) {
			for _, a := range alertPercents {
				if b.SpentMicros*100 < b.LimitMicros*a.percent {
					continue
				}
				if err := s.alertOnce(tx, emit, q, b, a.percent, a.event); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// alertsDue reports whether a budget of q has passed a line whose alert
// was not sent yet, as a read sees it now.
func (s Analytics) alertsDue(ctx context.Context, q domain.SpendQuery) (bool, error) {
	db := s.read(ctx)
	sp, err := s.budgetSpend(db, q)
	if err != nil {
		return false, err
	}
	for _, b := range sp.Budgets(q.Limits, q.UserID) {
		for _, a := range alertPercents {
			if b.SpentMicros*100 < b.LimitMicros*a.percent {
				continue
			}
			var sent int64
			row := alertRow(q, b, a.percent)
			err := db.Model(&budgetAlertRow{}).Where("account_id = ? AND agent_id = ? AND user_id = ? AND scope = ? AND period = ? "+
				"AND window_start = ? AND percent = ?", row.AccountID, row.AgentID, row.UserID, row.Scope, row.Period,
				row.WindowStart, row.Percent).Count(&sent).Error
			if err != nil || sent == 0 {
				return err == nil, err
			}
		}
	}
	return false, nil
}

// alertRow is the row of b's alert at percent.
func alertRow(q domain.SpendQuery, b domain.BudgetState, percent int64) budgetAlertRow {
	row := budgetAlertRow{AccountID: ctext(q.AccountID), UserID: b.UserID, Scope: string(b.Scope), Period: string(b.Period),
		WindowStart: windowStart(b), Percent: int(percent)}
	if b.Scope != domain.ScopeAccount {
		row.AgentID = ctext(q.AgentID)
	}
	return row
}

// alertOnce inserts the row of b's alert at percent and, when this
// transaction inserted it, emits its event.
func (s Analytics) alertOnce(tx *gorm.DB, emit emitFunc, q domain.SpendQuery, b domain.BudgetState, percent int64, typ domain.EventType) error {
	row := alertRow(q, b, percent)
	row.CreatedAt = s.now()
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	// The rows of windows long past keep nothing from being sent again.
	if err := tx.Where("account_id = ? AND window_start < ?", row.AccountID, row.WindowStart.AddDate(0, -2, 0)).
		Delete(&budgetAlertRow{}).Error; err != nil {
		return err
	}
	doc := budgetAlert{Scope: string(b.Scope), Period: string(b.Period), LimitUSD: price.USD(b.LimitMicros),
		SpentUSD: price.USD(b.SpentMicros), Percent: percent, ResetsAt: timestamp(b.ResetsAt)}
	if row.AgentID != "" {
		doc.AgentID = string(row.AgentID)
	}
	doc.UserID = b.UserID
	return emit(domain.Event{AccountID: q.AccountID, AgentID: string(row.AgentID), Type: typ, Data: doc})
}

// windowStart is when b's window began.
func windowStart(b domain.BudgetState) time.Time {
	if b.Period == domain.PeriodDay {
		return b.ResetsAt.AddDate(0, 0, -1)
	}
	return b.ResetsAt.AddDate(0, -1, 0)
}

// budgetAlert is the data of budget.threshold and budget.exceeded.
type budgetAlert struct {
	Scope    string  `json:"scope"`
	AgentID  string  `json:"agentId,omitempty"`
	UserID   string  `json:"userId,omitempty"`
	Period   string  `json:"period"`
	LimitUSD float64 `json:"limitUsd"`
	SpentUSD float64 `json:"spentUsd"`
	Percent  int64   `json:"percent"`
	ResetsAt string  `json:"resetsAt"`
}
