package store

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/cronspec"
	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// scheduleRow is a row of schedules. NextRunAt is the next due time (nil
// when disabled or when a one-off's time has passed): the due ones are
// found through its index, and a due time is fired by moving it on under
// the condition that it still holds what was read (claimDue).
type scheduleRow struct {
	ID             ctext      `gorm:"primaryKey;index:idx_schedules_agent_created,priority:3"`
	AccountID      ctext      `gorm:"not null"`
	AgentID        ctext      `gorm:"not null;index:idx_schedules_agent_created,priority:1"`
	Name           string     `gorm:"not null;default:''"`
	Cron           string     `gorm:"not null;default:''"`
	At             *time.Time `gorm:""`
	Timezone       string     `gorm:"not null"`
	InputText      string     `gorm:"type:text;not null"`
	UserID         string     `gorm:"not null"`
	RoomID         string     `gorm:"not null;default:''"`
	TargetPlatform string     `gorm:"not null;default:''"`
	TargetChat     string     `gorm:"not null;default:''"`
	Enabled        bool       `gorm:"not null"`
	Reminder       bool       `gorm:"not null;default:false"`
	NextRunAt      *time.Time `gorm:"index:idx_schedules_due"`
	LastRunAt      *time.Time `gorm:""`
	LastRunID      string     `gorm:"not null;default:''"`
	LastError      string     `gorm:"type:text;not null;default:''"`
	CreatedAt      time.Time  `gorm:"not null;autoCreateTime:false;index:idx_schedules_agent_created,priority:2"`
	UpdatedAt      time.Time  `gorm:"not null;autoUpdateTime:false"`
}

// TableName names the table.
func (scheduleRow) TableName() string { return "schedules" }

// The bounds of a schedule's members, as the contract states them: the
// API's schema refuses the rest first, the schedule_reminder tool's
// arguments reach the store unchecked.
const (
	maxScheduleText = 10000
	maxScheduleName = 100
	maxScheduleUser = 128 // userId and roomId, as a message's
	maxScheduleChat = 64
)

// schedulePlatforms are the platforms a schedule's reply may also go to.
var schedulePlatforms = map[string]bool{"telegram": true, "discord": true}

// CreateSchedule stores sc as a new schedule of its agent, with its next
// due time (none when disabled); an empty UserID is
// domain.DefaultScheduleUser, an empty Timezone UTC. It returns
// ErrNotFound for an agent that is not the account's, an ErrInvalid naming
// the member at fault, and an ErrQuotaExceeded *Error of resource
// "schedule" at domain.ScheduleQuota schedules (one-offs whose time has
// passed aside), or of "reminder" for a reminder past
// domain.ReminderQuota of its user's.
func (s Schedules) CreateSchedule(ctx context.Context, sc domain.Schedule) (domain.Schedule, error) {
	t := s.now()
	sc.ID, sc.CreatedAt, sc.UpdatedAt = newID("sch_", t), t, t
	sc.UserID = cmp.Or(sc.UserID, domain.DefaultScheduleUser)
	sc.Timezone = cmp.Or(sc.Timezone, "UTC")
	sc.At = msTime(sc.At)
	if err := checkAt(sc.At, t); err != nil {
		return domain.Schedule{}, wrap("create schedule", err)
	}
	if err := plan(&sc, t); err != nil {
		return domain.Schedule{}, wrap("create schedule", err)
	}
	err := s.write(ctx, "create schedule", func(tx *gorm.DB) error {
		// The agent's row serializes the counts of its schedules.
		if err := lockOwned(tx, sc.AccountID, sc.AgentID); err != nil {
			return err
		}
		if err := checkQuotas(tx, sc, t); err != nil {
			return err
		}
		row := fromSchedule(sc)
		return tx.Create(&row).Error
	})
	if err != nil {
		return domain.Schedule{}, err
	}
	return sc, nil
}

// GetSchedule is schedule id of the account's agent: ErrNotFound when the
// agent is not the account's, ErrScheduleNotFound when it has no such
// schedule.
func (s Schedules) GetSchedule(ctx context.Context, accountID, agentID, id string) (domain.Schedule, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return domain.Schedule{}, wrap("get schedule", err)
	}
	row, err := findSchedule(db, agentID, id)
	if err != nil {
		return domain.Schedule{}, wrap("get schedule", err)
	}
	return toSchedule(row), nil
}

// findSchedule reads schedule id of agent agentID; ErrScheduleNotFound if
// none.
func findSchedule(db *gorm.DB, agentID, id string) (scheduleRow, error) {
	var row scheduleRow
	err := db.Take(&row, "id = ? AND agent_id = ?", id, agentID).Error
	return row, notFoundAs(err, domain.ErrScheduleNotFound)
}

// ListSchedules is a page of the schedules of the account's agent, the
// oldest first, and how many it has; ErrNotFound when the agent is not
// the account's.
func (s Schedules) ListSchedules(ctx context.Context, accountID, agentID string, page, limit int) ([]domain.Schedule, int64, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, 0, wrap("list schedules", err)
	}
	sel := db.Model(&scheduleRow{}).Where("agent_id = ?", agentID).Session(&gorm.Session{})
	var total int64
	if err := sel.Count(&total).Error; err != nil {
		return nil, 0, wrap("list schedules", err)
	}
	page, limit, past := pageBounds(page, limit, total)
	if past {
		return []domain.Schedule{}, total, nil
	}
	var rows []scheduleRow
	if err := sel.Order("created_at, id").Offset((page - 1) * limit).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, wrap("list schedules", err)
	}
	out := make([]domain.Schedule, len(rows))
	for i, r := range rows {
		out[i] = toSchedule(r)
	}
	return out, total, nil
}

// UpdateSchedule applies c to schedule id of the account's agent and
// returns it. The next due time is computed again, from now, when the
// timing changes (cron, at, enabled, or the timezone of a cron schedule),
// so enabling a schedule again fires none of the times it missed; other
// changes keep it. Errors are CreateSchedule's, ErrScheduleNotFound for a
// missing schedule; the quotas apply when the change makes a one-off whose
// time had passed due again.
func (s Schedules) UpdateSchedule(ctx context.Context, accountID, agentID, id string, c domain.ScheduleChanges) (domain.Schedule, error) {
	var out domain.Schedule
	err := s.write(ctx, "update schedule", func(tx *gorm.DB) error {
		// The agent's row first, as a fire and a create take it.
		if err := lockOwned(tx, accountID, agentID); err != nil {
			return err
		}
		row, err := findSchedule(forUpdate(tx), agentID, id)
		if err != nil {
			return err
		}
		t := s.now()
		before := toSchedule(row)
		sc, retimed, err := applyChanges(before, c, t)
		if err != nil {
			return err
		}
		// Checked whole, whatever changed; a due time about to fire is
		// kept unless the timing changed.
		if err := plan(&sc, t); err != nil {
			return err
		}
		if !retimed {
			sc.NextRunAt = before.NextRunAt
		}
		if !counts(before, t) && counts(sc, t) {
			if err := checkQuotas(tx, sc, t); err != nil {
				return err
			}
		}
		sc.UpdatedAt = t
		updated := fromSchedule(sc)
		out = sc
		return tx.Select("*").Omit("id", "account_id", "agent_id", "created_at").Updates(&updated).Error
	})
	return out, err
}

// applyChanges is sc with c applied at now, and whether its timing
// changed; an ErrInvalid refuses cron and at together, or an at that has
// passed or lies too far (plan checks the rest).
func applyChanges(sc domain.Schedule, c domain.ScheduleChanges, now time.Time) (domain.Schedule, bool, error) {
	if c.Cron != nil && c.At != nil {
		return sc, false, fieldError("cron", "exactly one of cron and at must be given")
	}
	retimed := false
	if c.Cron != nil && *c.Cron != sc.Cron { // a one-off switches to the cron
		sc.Cron, sc.At, retimed = *c.Cron, time.Time{}, true
	}
	if c.At != nil {
		at := msTime(*c.At)
		if err := checkAt(at, now); err != nil {
			return sc, false, err
		}
		sc.Cron, sc.At, retimed = "", at, true // a cron schedule switches to the one-off
	}
	if c.Timezone != nil && *c.Timezone != sc.Timezone {
		sc.Timezone = *c.Timezone
		retimed = retimed || sc.Cron != "" // a one-off's at is an instant
	}
	if c.Enabled != nil && *c.Enabled != sc.Enabled {
		sc.Enabled, retimed = *c.Enabled, true
	}
	for _, m := range []struct {
		to   *string
		from *string
	}{{&sc.Name, c.Name}, {&sc.Text, c.Text}, {&sc.UserID, c.UserID}, {&sc.RoomID, c.RoomID}} {
		if m.from != nil {
			*m.to = *m.from
		}
	}
	if c.Target != nil {
		sc.Target = *c.Target
	}
	return sc, retimed, nil
}

// DeleteSchedule deletes schedule id of the account's agent; a run it made
// goes on. ErrNotFound when the agent is not the account's,
// ErrScheduleNotFound when it has no such schedule.
func (s Schedules) DeleteSchedule(ctx context.Context, accountID, agentID, id string) error {
	return s.write(ctx, "delete schedule", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		res := tx.Where("id = ? AND agent_id = ?", id, agentID).Delete(&scheduleRow{})
		if res.Error == nil && res.RowsAffected == 0 {
			return domain.ErrScheduleNotFound
		}
		return res.Error
	})
}

// checkAt refuses a one-off's time that has passed or lies more than a
// year ahead of now (zero: none given).
func checkAt(at, now time.Time) error {
	switch {
	case at.IsZero():
		return nil
	case !at.After(now):
		return fieldError("at", "must be in the future")
	case at.After(now.AddDate(1, 0, 0)):
		return fieldError("at", "must be at most a year ahead")
	}
	return nil
}

// checkSchedule refuses what no schedule may hold, naming the member at
// fault.
func checkSchedule(sc domain.Schedule) error {
	switch {
	case (sc.Cron == "") == sc.At.IsZero():
		return fieldError("cron", "exactly one of cron and at must be given")
	case strings.TrimSpace(sc.Text) == "" || utf8.RuneCountInString(sc.Text) > maxScheduleText:
		return fieldError("text", fmt.Sprintf("must be 1 to %d characters", maxScheduleText))
	case utf8.RuneCountInString(sc.Name) > maxScheduleName:
		return fieldError("name", fmt.Sprintf("must be at most %d characters", maxScheduleName))
	case !validLength(sc.UserID, 1, maxScheduleUser) || !domain.CleanText(sc.UserID):
		return fieldError("userId", fmt.Sprintf("must be 1 to %d printable characters", maxScheduleUser))
	case sc.RoomID != "" && (!validLength(sc.RoomID, 1, maxScheduleUser) || !domain.CleanText(sc.RoomID)):
		return fieldError("roomId", fmt.Sprintf("must be 1 to %d printable characters", maxScheduleUser))
	case sc.Target != nil && !schedulePlatforms[sc.Target.Platform]:
		return fieldError("target.platform", "must be one of: telegram, discord")
	case sc.Target != nil && (!validLength(sc.Target.ChatID, 1, maxScheduleChat) || !domain.CleanText(sc.Target.ChatID)):
		return fieldError("target.chatId", fmt.Sprintf("must be 1 to %d printable characters", maxScheduleChat))
	}
	return nil
}

// plan checks sc and sets its next due time as of now: a cron schedule's
// first due time after now, a one-off's time while it lies ahead; none
// while disabled.
func plan(sc *domain.Schedule, now time.Time) error {
	if err := checkSchedule(*sc); err != nil {
		return err
	}
	loc, err := cronspec.Zone(sc.Timezone)
	if err != nil {
		return fieldError("timezone", err.Error())
	}
	next := time.Time{}
	if sc.Cron != "" {
		spec, err := cronspec.Parse(sc.Cron)
		if err != nil {
			return fieldError("cron", err.Error())
		}
		if next = spec.Next(now, loc); next.IsZero() {
			return fieldError("cron", "never matches a day")
		}
	} else if sc.At.After(now) {
		next = sc.At
	}
	sc.NextRunAt = time.Time{}
	if sc.Enabled {
		sc.NextRunAt = msTime(next)
	}
	return nil
}

// counts reports whether sc counts toward the agent's quota at now: a cron
// schedule does, a one-off until its time.
func counts(sc domain.Schedule, now time.Time) bool { return sc.Cron != "" || sc.At.After(now) }

// counted selects the schedules of agentID that count toward its quota at
// now (counts).
func counted(tx *gorm.DB, agentID string, now time.Time) *gorm.DB {
	return tx.Model(&scheduleRow{}).Where("agent_id = ? AND (cron <> '' OR at > ?)", agentID, now)
}

// checkQuotas refuses sc, about to count toward its agent's quota, when
// the agent has domain.ScheduleQuota schedules that count, or for a
// reminder when its user has domain.ReminderQuota reminders waiting.
func checkQuotas(tx *gorm.DB, sc domain.Schedule, now time.Time) error {
	var used int64
	if err := counted(tx, sc.AgentID, now).Where("id <> ?", sc.ID).Count(&used).Error; err != nil {
		return err
	}
	if used >= domain.ScheduleQuota {
		return quotaError("schedule", domain.ScheduleQuota, int(used))
	}
	if !sc.Reminder {
		return nil
	}
	var pending int64
	if err := counted(tx, sc.AgentID, now).Where("id <> ? AND reminder = ? AND user_id = ?", sc.ID, true, sc.UserID).
		Count(&pending).Error; err != nil {
		return err
	}
	if pending >= domain.ReminderQuota {
		return quotaError("reminder", domain.ReminderQuota, int(pending))
	}
	return nil
}

// dueLimit bounds the schedules one look fires: the next look, seconds
// later, takes the rest.
const dueLimit = 100

// DueSchedules are up to dueLimit schedules whose next due time has come,
// the most overdue first.
func (s Schedules) DueSchedules(ctx context.Context) ([]domain.Schedule, error) {
	var rows []scheduleRow
	err := s.read(ctx).Where("next_run_at <= ?", s.now()).Order("next_run_at, id").Limit(dueLimit).Find(&rows).Error
	if err != nil {
		return nil, wrap("due schedules", err)
	}
	out := make([]domain.Schedule, len(rows))
	for i, r := range rows {
		out[i] = toSchedule(r)
	}
	return out, nil
}

// SkipSchedule passes over due time due of schedule id without a run, with
// reason as its last error, and moves it on to its next due time after
// now. ErrScheduleTaken when the due time was fired, skipped or changed
// meanwhile.
func (s Schedules) SkipSchedule(ctx context.Context, id string, due time.Time, reason string) error {
	return s.write(ctx, "skip schedule", func(tx *gorm.DB) error {
		return s.claimDue(tx, id, due, map[string]any{"last_error": reason})
	})
}

// NoteScheduleError records reason as the last error of schedule id when
// its last run is still runID: a later due time's outcome is not
// overwritten.
func (s Schedules) NoteScheduleError(ctx context.Context, id, runID, reason string) error {
	return s.write(ctx, "note schedule error", func(tx *gorm.DB) error {
		return noteScheduleError(tx, id, runID, reason)
	})
}

// noteRunFailed records on the schedule that made run row, while it is
// that schedule's last, why the run failed.
func noteRunFailed(tx *gorm.DB, row runRow) error {
	if row.ScheduleID == "" || row.Status != string(domain.RunFailed) {
		return nil
	}
	return noteScheduleError(tx, row.ScheduleID, string(row.ID), fmt.Sprintf("the run failed (%s): %s", row.ErrorCode, row.ErrorMessage))
}

func noteScheduleError(tx *gorm.DB, id, runID, reason string) error {
	return tx.Model(&scheduleRow{}).Where("id = ? AND last_run_id = ?", id, runID).Update("last_error", reason).Error
}

// claimDue takes due time due of schedule id for the caller, in tx, with
// the changes set: it moves the schedule to its first due time after now
// (none for a one-off), so a due time missed through downtime is fired
// once, not once per time missed, and the schedule keeps its rhythm.
// ErrScheduleTaken when the schedule no longer holds due: another process
// took it first (the row lock makes the second wait and see it moved), or
// it changed or went.
func (s *core) claimDue(tx *gorm.DB, id string, due time.Time, set map[string]any) error {
	var row scheduleRow
	if err := forUpdate(tx).Take(&row, "id = ?", id).Error; err != nil {
		return notFoundAs(err, domain.ErrScheduleTaken)
	}
	if row.NextRunAt == nil || !row.NextRunAt.Equal(due) {
		return domain.ErrScheduleTaken
	}
	var next *time.Time
	if row.Cron != "" {
		sc := toSchedule(row)
		if err := plan(&sc, s.now()); err != nil {
			return fmt.Errorf("schedule %s: %w", id, err)
		}
		next = timePtr(sc.NextRunAt)
	}
	set["next_run_at"] = next
	return tx.Model(&scheduleRow{}).Where("id = ?", id).Updates(set).Error
}

func fromSchedule(sc domain.Schedule) scheduleRow {
	row := scheduleRow{ID: ctext(sc.ID), AccountID: ctext(sc.AccountID), AgentID: ctext(sc.AgentID), Name: sc.Name,
		Cron: sc.Cron, At: timePtr(sc.At), Timezone: sc.Timezone, InputText: sc.Text, UserID: sc.UserID, RoomID: sc.RoomID,
		Enabled: sc.Enabled, Reminder: sc.Reminder, NextRunAt: timePtr(sc.NextRunAt), LastRunAt: timePtr(sc.LastRunAt),
		LastRunID: sc.LastRunID, LastError: sc.LastError, CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
	if sc.Target != nil {
		row.TargetPlatform, row.TargetChat = sc.Target.Platform, sc.Target.ChatID
	}
	return row
}

func toSchedule(r scheduleRow) domain.Schedule {
	sc := domain.Schedule{ID: string(r.ID), AccountID: string(r.AccountID), AgentID: string(r.AgentID), Name: r.Name,
		Cron: r.Cron, At: timeOf(r.At), Timezone: r.Timezone, Text: r.InputText, UserID: r.UserID, RoomID: r.RoomID,
		Enabled: r.Enabled, Reminder: r.Reminder, NextRunAt: timeOf(r.NextRunAt), LastRunAt: timeOf(r.LastRunAt),
		LastRunID: r.LastRunID, LastError: r.LastError, CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt)}
	if r.TargetPlatform != "" {
		sc.Target = &domain.ScheduleTarget{Platform: r.TargetPlatform, ChatID: r.TargetChat}
	}
	return sc
}

// timePtr is t for a nullable column: nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// timeOf is a nullable column's time, zero for NULL.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// msTime is t at the stored precision, in UTC.
func msTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}
