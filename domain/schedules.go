package domain

import "time"

// The bounds of schedules.
const (
	// ScheduleQuota is how many schedules an agent may have, the one-offs
	// that fired aside (reminders included).
	ScheduleQuota = 100
	// ReminderQuota is how many reminders of an agent may wait to fire for
	// one user.
	ReminderQuota = 10
	// ScheduleHorizon is how far ahead a one-off may be set.
	ScheduleHorizon = 366 * 24 * time.Hour
	// DefaultScheduleUser is who a schedule's message is from when it
	// names nobody.
	DefaultScheduleUser = "schedule"
)

// Schedule is a message an agent receives on a clock: at each due time of
// Cron (read in Timezone), or once At, as if UserID had sent it in RoomID.
type Schedule struct {
	ID        string // "sch_" + lowercase ULID
	AccountID string
	AgentID   string
	Name      string
	// Cron is the five-field expression or descriptor; "" for a one-off,
	// which has At instead.
	Cron     string
	At       time.Time
	Timezone string // an IANA name
	Text     string
	UserID   string
	RoomID   string // "" for the direct conversation with UserID
	// Target, when set, is a platform chat the reply also goes to.
	Target  *ScheduleTarget
	Enabled bool
	// Reminder marks a one-off an agent set itself (schedule_reminder):
	// ReminderQuota of them may wait per user.
	Reminder bool
	// NextRunAt is the next due time; zero when disabled or when a
	// one-off's time has passed.
	NextRunAt time.Time
	// LastRunAt is when the last run was made, LastRunID that run;
	// LastError why the last due time made no run, the run failed, or its
	// reply did not reach Target ("" when it went well).
	LastRunAt            time.Time
	LastRunID, LastError string
	CreatedAt, UpdatedAt time.Time
}

// Conversation is the conversation a schedule's runs are in.
func (s Schedule) Conversation() ConversationRef {
	ref := ConversationRef{RoomID: s.RoomID, UserID: s.UserID, Platform: PlatformAPI}
	if s.Target != nil {
		ref.Platform = s.Target.Platform
	}
	return ref
}

// ScheduleTarget is a platform chat: a Telegram chat or a Discord channel.
type ScheduleTarget struct {
	Platform string `json:"platform"` // "telegram" or "discord"
	ChatID   string `json:"chatId"`
}

// ScheduleChanges are the members an update replaces; nil leaves one as
// it is. Target and the clearable strings take a pointer to their zero
// value to clear them. Setting At on a cron schedule, or Cron on a
// one-off, switches it.
type ScheduleChanges struct {
	Name, Cron, Timezone, Text, UserID, RoomID *string
	At                                         *time.Time
	Target                                     **ScheduleTarget
	Enabled                                    *bool
}

// ErrScheduleNotFound is the not-found of a schedule.
var ErrScheduleNotFound = &Error{Code: CodeNotFound, Resource: "schedule"}

// ErrScheduleTaken refuses to fire a schedule whose due time was fired
// (or skipped) by someone else, or changed, since it was read.
var ErrScheduleTaken = &Error{Code: CodeConflict, Resource: "schedule"}
