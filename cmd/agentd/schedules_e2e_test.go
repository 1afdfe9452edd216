package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/go-telegram/bot/models"
)

// TestTelegramReminder: in a Telegram chat the model sets a reminder a
// few seconds ahead (schedule_reminder); at its time the agent answers
// the reminder's text as the user's message, in the same conversation,
// and the reply reaches that chat within the promised 10 seconds,
// quoting nothing. The reminder is a one-off schedule of that user and
// chat, fired once by a run of source schedule.
func TestTelegramReminder(t *testing.T) {
	const token = "5151:e2e"
	e := startTelegramAgentWith(t, token, 5151, "remind_bot", "Minder", map[string]any{"runs": map[string]any{"reminders": true}})
	tg := e.tg
	at := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	args, _ := json.Marshal(map[string]string{"at": at.Format(time.RFC3339), "text": "Remind Ann to call the bank."})
	e.openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "schedule_reminder", Arguments: string(args)}}},
		llmtest.Reply{Text: "I will remind you."}, llmtest.Reply{Text: "Ann, time to call the bank!"})
	tg.Queue(token, models.Update{Message: &models.Message{ID: 7, Text: "remind me in 3 seconds to call the bank",
		Chat: models.Chat{ID: 99, Type: models.ChatTypePrivate}, From: &models.User{ID: 99, FirstName: "Ann"}}})
	testutil.Eventually(t, "the answer", func() error { return testutil.Equal("messages sent", len(tg.Sent(token)), 1) })
	if sent := tg.Sent(token)[0]; sent.Text != "I will remind you." || sent.ReplyTo != 7 {
		t.Fatalf("answer %+v", sent)
	}
	testutil.Within(t, "the reminder in the chat", time.Until(at)+10*time.Second, func() error {
		return testutil.Equal("messages sent", len(tg.Sent(token)), 2)
	})
	if sent := tg.Sent(token)[1]; sent.Text != "Ann, time to call the bank!" || sent.ChatID != "99" || sent.ReplyTo != 0 {
		t.Fatalf("reminder %+v", sent)
	}
	reqs := e.openai.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d provider calls", len(reqs))
	}
	// The reminder's run is a turn of the same conversation: its history
	// holds the exchange that set it.
	if _, msgs := reqs[2].Conversation(); len(msgs) < 3 || msgs[len(msgs)-1] != (llmtest.Message{Role: "user", Content: "Remind Ann to call the bank."}) ||
		msgs[0].Content != "remind me in 3 seconds to call the bank" {
		t.Errorf("the reminder's provider call: %+v", msgs)
	}

	items := e.c.do("GET", "/v1/agents/"+e.id+"/schedules", e.key, nil).data(t)["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("schedules %v", items)
	}
	sc := items[0].(map[string]any)
	target, _ := sc["target"].(map[string]any)
	if sc["userId"] != "telegram:99" || sc["cron"] != nil || sc["nextRunAt"] != nil || sc["lastError"] != nil ||
		target["platform"] != "telegram" || target["chatId"] != "99" {
		t.Fatalf("reminder %v", sc)
	}
	run := e.run(t, sc["lastRunId"].(string))
	if run["source"] != "schedule" || run["scheduleId"] != sc["id"] || run["userId"] != "telegram:99" || run["status"] != "completed" {
		t.Fatalf("the reminder's run %v", run)
	}
	e.in.stop(t)
}

// TestDiscordScheduleTarget: a one-off made through the API with a Discord
// channel as its target sends its reply to that channel, referencing no
// message, and keeps no error.
func TestDiscordScheduleTarget(t *testing.T) {
	const token = "e2e.discord.schedule"
	e := startDiscordAgent(t, token, "Herald", map[string]any{})
	e.openai.Respond(llmtest.Reply{Text: "Good morning, lobby."})
	at := time.Now().Add(2 * time.Second)
	r := e.c.do("POST", "/v1/agents/"+e.id+"/schedules", e.key, map[string]any{"at": at.UTC().Format(time.RFC3339Nano),
		"text": "Greet the lobby.", "target": map[string]any{"platform": "discord", "chatId": "500"}})
	expect(t, "create the schedule", r, 201, "")
	id := r.data(t)["id"].(string)
	var sent []string
	testutil.Within(t, "the reply in the channel", time.Until(at)+10*time.Second, func() error {
		sent = sent[:0]
		for _, s := range e.dc.Sent(token) {
			if s.ChannelID == "500" && s.ReplyTo == "" {
				sent = append(sent, s.Content)
			}
		}
		return testutil.Equal("messages in the channel", len(sent), 1)
	})
	if sent[0] != "Good morning, lobby." {
		t.Errorf("sent %q", sent[0])
	}
	sc := e.c.do("GET", "/v1/agents/"+e.id+"/schedules/"+id, e.key, nil).data(t)
	if sc["lastRunId"] == nil || sc["lastError"] != nil || sc["nextRunAt"] != nil {
		t.Errorf("schedule after its fire %v", sc)
	}
	e.in.stop(t)
}
