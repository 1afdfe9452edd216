package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/turn"
)

// reminderCall is a model's reply asking for schedule_reminder with args.
func reminderCall(args string) func() (llm.Reply, error) {
	return func() (llm.Reply, error) {
		return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "p1", Name: "schedule_reminder", Arguments: args}}}, nil
	}
}

// newReminderService is a Service whose agent may set reminders (or not),
// the reminders kept in its store.
func newReminderService(t *testing.T, model turn.Model, on bool) (*turn.Service, *store.Store, domain.Agent) {
	t.Helper()
	settings, _ := json.Marshal(map[string]any{"runs": map[string]any{"reminders": on}})
	return newServiceWith(t, turn.Config{Model: model}, map[string]json.RawMessage{"settings": settings}, nil,
		func(st *store.Store, cfg *turn.Config) { cfg.Stores.Schedules = st.Schedules() })
}

// TestReminderFromAPlatformChat: the model's schedule_reminder makes a
// one-off schedule in the turn's conversation (its user, its room) sent
// to the chat the turn came from, and answers {scheduleId, at}; an agent
// without settings.runs.reminders is not offered the tool.
func TestReminderFromAPlatformChat(t *testing.T) {
	ctx := context.Background()
	model := &scriptedModel{replies: []func() (llm.Reply, error){
		reminderCall(`{"in":"2h","text":"Remind Ann to call the bank."}`),
		func() (llm.Reply, error) { return llm.Reply{Text: "I will remind you."}, nil },
	}}
	svc, st, a := newReminderService(t, model, true)
	before := time.Now()
	res, err := svc.Reply(ctx, turn.Input{AccountID: a.AccountID, AgentID: a.ID, Text: "remind me in 2 hours to call the bank",
		UserID: "telegram:42", Conv: domain.ConversationRef{RoomID: "telegram:-100", UserID: "telegram:42", Platform: "telegram"},
		Platform: "telegram", ChatID: "-100"})
	if err != nil {
		t.Fatal(err)
	}
	calls := res.Metadata.ToolCalls
	if len(calls) != 1 || !calls[0].OK {
		t.Fatalf("tool calls %+v", calls)
	}
	var out struct{ ScheduleID, At string }
	if err := json.Unmarshal([]byte(calls[0].Result), &out); err != nil || !strings.HasPrefix(out.ScheduleID, "sch_") {
		t.Fatalf("result %s: %v", calls[0].Result, err)
	}
	sc, err := st.Schedules().GetSchedule(ctx, a.AccountID, a.ID, out.ScheduleID)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Reminder || sc.UserID != "telegram:42" || sc.RoomID != "telegram:-100" || sc.Text != "Remind Ann to call the bank." ||
		sc.Target == nil || *sc.Target != (domain.ScheduleTarget{Platform: "telegram", ChatID: "-100"}) || sc.Cron != "" {
		t.Fatalf("reminder %+v", sc)
	}
	if at := sc.At; at.Before(before.Add(2*time.Hour).Truncate(time.Millisecond)) || at.After(time.Now().Add(2*time.Hour)) ||
		out.At != at.UTC().Format("2006-01-02T15:04:05.000Z") || !sc.NextRunAt.Equal(at) {
		t.Fatalf("at %s (result %s), asked two hours after %s", at, out.At, before)
	}

	listing, err := svc.ListTools(ctx, a.AccountID, a.ID)
	if err != nil || !offers(listing, "schedule_reminder") {
		t.Fatalf("tools of an agent with reminders: %+v %v", listing, err)
	}
	off, _, b := newReminderService(t, model, false)
	if listing, err := off.ListTools(ctx, b.AccountID, b.ID); err != nil || offers(listing, "schedule_reminder") {
		t.Fatalf("tools of an agent without reminders: %+v %v", listing, err)
	}
}

// offers reports whether listing offers the tool name.
func offers(listing turn.ToolListing, name string) bool {
	for _, tl := range listing.Tools[:listing.Offered] {
		if tl.Name == name && tl.Source == turn.SourceBuiltin {
			return true
		}
	}
	return false
}

// TestReminderRefusals: past a bound, or with arguments that name no time,
// the tool answers {"error": why} and makes nothing; an API conversation
// has no chat to send to.
func TestReminderRefusals(t *testing.T) {
	ctx := context.Background()
	for args, want := range map[string]string{
		`{"text":"x"}`: "either at or in",
		`{"in":"2h","at":"2030-01-01T00:00:00Z","text":"x"}`: "either at or in",
		`{"in":"soon","text":"x"}`:                           "positive delay",
		`{"in":"0m","text":"x"}`:                             "positive delay",
		`{"at":"tomorrow","text":"x"}`:                       "RFC 3339",
		`{"at":"2020-01-01T00:00:00Z","text":"x"}`:           "at must be in the future",
		`{"in":"400d","text":"x"}`:                           "at most a year ahead",
		`{"in":"1h","text":""}`:                              "text must be",
	} {
		model := &scriptedModel{replies: []func() (llm.Reply, error){reminderCall(args),
			func() (llm.Reply, error) { return llm.Reply{Text: "ok"}, nil }}}
		svc, _, a := newReminderService(t, model, true)
		res, err := svc.Reply(ctx, turn.Input{AccountID: a.AccountID, AgentID: a.ID, Text: "remind me", UserID: "ann",
			Conv: domain.ConversationRef{UserID: "ann"}})
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Metadata.ToolCalls; len(c) != 1 || c[0].OK || !strings.Contains(c[0].Result, want) {
			t.Errorf("%s: %+v, want an error saying %q", args, c, want)
		}
	}

	// Ann's reminders: ten wait, the eleventh is refused; an API message
	// sets one without a chat.
	model := &scriptedModel{replies: []func() (llm.Reply, error){reminderCall(`{"in":"90m","text":"stretch"}`),
		func() (llm.Reply, error) { return llm.Reply{Text: "ok"}, nil }}}
	svc, st, a := newReminderService(t, model, true)
	remind := func() domain.ToolCall {
		t.Helper()
		model.mu.Lock()
		model.calls = 0
		model.mu.Unlock()
		res, err := svc.Reply(ctx, turn.Input{AccountID: a.AccountID, AgentID: a.ID, Text: "remind me", UserID: "ann",
			Conv: domain.ConversationRef{UserID: "ann"}})
		if err != nil || len(res.Metadata.ToolCalls) != 1 {
			t.Fatalf("reply %+v: %v", res, err)
		}
		return res.Metadata.ToolCalls[0]
	}
	for range domain.ReminderQuota {
		if c := remind(); !c.OK {
			t.Fatalf("reminder refused: %s", c.Result)
		}
	}
	if c := remind(); c.OK || !strings.Contains(c.Result, "10 reminders already wait for this user") {
		t.Fatalf("eleventh reminder: %+v", c)
	}
	list, _, err := st.Schedules().ListSchedules(ctx, a.AccountID, a.ID, 1, 20)
	if err != nil || len(list) != domain.ReminderQuota || list[0].Target != nil || list[0].UserID != "ann" {
		t.Fatalf("reminders %d %+v: %v", len(list), list, err)
	}
}
