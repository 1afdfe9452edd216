package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/tools"
)

// Schedules keeps the reminders an agent sets itself (schedule_reminder).
type Schedules interface {
	// CreateSchedule stores a schedule: a *domain.Error of CodeInvalid
	// names the member at fault, of CodeQuotaExceeded the bound passed
	// (resource "schedule" for the agent's, "reminder" for the user's).
	CreateSchedule(ctx context.Context, sc domain.Schedule) (domain.Schedule, error)
}

// reminderTool is the built-in tool schedule_reminder as the model sees
// it.
var reminderTool = tools.Tool{Name: "schedule_reminder",
	Description: "Set a reminder for the person you talk with: at the time given you receive the text as their message, in this conversation, and answer it (on a chat platform, in this chat). Give either at or in, at most a year ahead.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"at":{"type":"string","description":"When, as an RFC 3339 time with its offset, e.g. 2026-11-22T09:30:00+01:00."},` +
		`"in":{"type":"string","description":"How long from now: a number and m, h or d, e.g. 90m, 2h, 3d."},` +
		`"text":{"type":"string","description":"What you will be told then, e.g. Remind Ann to call the bank."}},"required":["text"]}`)}

// reminders runs schedule_reminder for the agents of one account.
type reminders struct {
	schedules Schedules
	accountID string
}

// remindersOf is the reminder tool of agent a; nil unless the service has
// Stores.Schedules and the agent's settings.runs.reminders is true.
func (s *Service) remindersOf(a domain.Agent) *reminders {
	var settings struct {
		Runs struct {
			Reminders bool `json:"reminders"`
		} `json:"runs"`
	}
	if s.cfg.Stores.Schedules == nil {
		return nil
	}
	if ok, err := agent.Document(a.Fields).Decode("settings", &settings); !ok || err != nil || !settings.Runs.Reminders {
		return nil
	}
	return &reminders{schedules: s.cfg.Stores.Schedules, accountID: a.AccountID}
}

// reminderPlatforms are the platforms whose chat a reminder is sent to.
var reminderPlatforms = map[string]bool{"telegram": true, "discord": true}

// call makes a one-off schedule of c's turn: its user in its room, sent to
// its platform chat when it has one. The result is {scheduleId, at}, or
// {"error": why} past a bound.
func (r *reminders) call(ctx context.Context, c tools.Call) tools.Result {
	var args struct{ At, In, Text string }
	_ = json.Unmarshal(c.Arguments, &args) // an object, checked by the loop
	at, err := reminderTime(args.At, args.In, time.Now())
	if err != nil {
		return tools.Failure(err.Error())
	}
	if c.Turn.UserID == "" && c.Turn.RoomID == "" {
		return tools.Failure("this conversation names no user or room, so a reminder could not reach it")
	}
	sc := domain.Schedule{AccountID: r.accountID, AgentID: c.Turn.AgentID, Name: reminderTool.Name, At: at,
		Timezone: "UTC", Text: args.Text, UserID: c.Turn.UserID, RoomID: c.Turn.RoomID, Enabled: true, Reminder: true}
	if reminderPlatforms[c.Turn.Platform] && c.Turn.ChatID != "" {
		sc.Target = &domain.ScheduleTarget{Platform: c.Turn.Platform, ChatID: c.Turn.ChatID}
	}
	made, err := r.schedules.CreateSchedule(ctx, sc)
	if err != nil {
		return tools.Failure(reminderRefusal(err))
	}
	return jsonResult(map[string]string{"scheduleId": made.ID, "at": made.At.UTC().Format("2006-01-02T15:04:05.000Z")})
}

// reminderDelay is a delay as decided: a whole number of minutes, hours
// or days (delayUnits).
var (
	reminderDelay = regexp.MustCompile(`^([0-9]{1,6})\s*([mhd])$`)
	delayUnits    = map[string]time.Duration{"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
)

// reminderTime is the time of a reminder given at (RFC 3339) or in (a
// delay from now, "90m", "2h", "3d", or a Go duration such as "1h30m"):
// exactly one of them. Its error is the tool's reason.
func reminderTime(at, in string, now time.Time) (time.Time, error) {
	at, in = strings.TrimSpace(at), strings.TrimSpace(in)
	switch {
	case (at == "") == (in == ""):
		return time.Time{}, errors.New("give either at or in")
	case at != "":
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return time.Time{}, errors.New("at must be an RFC 3339 time with its offset, e.g. 2026-11-22T09:30:00+01:00")
		}
		return t, nil
	}
	var d time.Duration
	if m := reminderDelay.FindStringSubmatch(in); m != nil {
		n, _ := strconv.Atoi(m[1]) // six digits at most
		d = time.Duration(n) * delayUnits[m[2]]
	} else if parsed, err := time.ParseDuration(in); err == nil {
		d = parsed
	}
	if d <= 0 {
		return time.Time{}, errors.New("in must be a positive delay such as 90m, 2h or 3d")
	}
	return now.Add(d), nil
}

// reminderRefusal says why the store refused a reminder, in the model's
// terms.
func reminderRefusal(err error) string {
	var e *domain.Error
	if !errors.As(err, &e) {
		return "the reminder could not be saved"
	}
	switch {
	case e.Code == domain.CodeQuotaExceeded && e.Resource == "reminder":
		return fmt.Sprintf("%d reminders already wait for this user, the most there may be; one must fire or be deleted first", e.Quota)
	case e.Code == domain.CodeQuotaExceeded:
		return fmt.Sprintf("the agent has %d schedules, the most it may have; one must be deleted first", e.Quota)
	case e.Code == domain.CodeInvalid && e.Field != "":
		return e.Field + " " + e.Reason
	}
	return "the reminder could not be saved"
}
