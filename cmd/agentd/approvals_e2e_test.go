package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/connect/discord/discordtest"
	"github.com/agentd/agentd/connect/telegram/telegramtest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/bwmarrin/discordgo"
	"github.com/go-telegram/bot/models"
)

// TestTelegramApprovals: an action that requires approval makes the run
// of a Telegram message wait, with nothing sent to the chat. Each admin
// the bot can reach in private gets the call with Approve and Deny
// buttons: one named by username, who wrote to the bot first, and one by
// id, who never did. Another user's press decides nothing; the admin's
// approval runs the call, edits the message with the outcome, and the
// reply reaches the chat that asked, its run naming who approved; a
// second press is answered "already decided" and changes nothing.
func TestTelegramApprovals(t *testing.T) {
	const token = "4646:e2e"
	e := startTelegramAgent(t, token, 4646, "guard_bot", "Guard", map[string]any{"adminUsers": []string{"@Boss", "777"}})
	tg := e.tg
	handler := e.priceAction(t, true)
	boss := models.User{ID: 555, FirstName: "Bea", Username: "boss"}
	tg.Queue(token, models.Update{Message: &models.Message{ID: 1, Text: "/help", From: &boss,
		Chat:     models.Chat{ID: 555, Type: models.ChatTypePrivate},
		Entities: []models.MessageEntity{{Type: models.MessageEntityTypeBotCommand, Length: 5}}}})
	testutil.Eventually(t, "the help in the admin's chat", func() error { return testutil.Equal("messages sent", len(tg.Sent(token)), 1) })

	e.askPrice()
	tg.Queue(token, models.Update{Message: &models.Message{ID: 3, Text: "SOL price?",
		Chat: models.Chat{ID: 99, Type: models.ChatTypePrivate}, From: &models.User{ID: 99, FirstName: "Ann"}}})
	var asks map[string]telegramtest.Sent // by chat
	testutil.Eventually(t, "the approval messages", func() error {
		asks = map[string]telegramtest.Sent{}
		for _, m := range tg.Sent(token) {
			if len(m.Buttons) > 0 {
				asks[m.ChatID] = m
			}
		}
		return testutil.Equal("admins asked", len(asks), 2)
	})
	run, call := e.waitingRun(t)
	for chat, ask := range asks {
		want := []telegramtest.Button{{Text: "Approve", Data: "approve:" + call}, {Text: "Deny", Data: "deny:" + call}}
		if !slices.Equal(ask.Buttons, want) || !strings.Contains(ask.Text, "get_price") || !strings.Contains(ask.Text, `{"input":"SOL"}`) {
			t.Errorf("approval message in chat %s: %+v; want the call and buttons %v", chat, ask, want)
		}
	}
	if _, ok := asks["555"]; !ok {
		t.Fatalf("no approval message for the admin named by username: %v", asks)
	}
	sentTo := func(chat string) (out []telegramtest.Sent) {
		for _, m := range tg.Sent(token) {
			if m.ChatID == chat {
				out = append(out, m)
			}
		}
		return out
	}
	answered := func(query, notice string) {
		t.Helper()
		testutil.Eventually(t, "the press answered "+notice, func() error {
			if got := tg.Answers(token); !slices.Contains(got, telegramtest.Answer{QueryID: query, Text: notice}) {
				return fmt.Errorf("answers %v", got)
			}
			return nil
		})
	}

	answered(tg.Press(token, models.User{ID: 66, FirstName: "Eve", Username: "eve"}, asks["555"], "approve:"+call), "not allowed")
	if still := e.run(t, run); still["status"] != "requires_action" || len(handler.got()) != 0 || len(sentTo("99")) != 0 {
		t.Fatalf("after another user's press: run %v, %d handler calls, %d messages to the chat", still["status"], len(handler.got()), len(sentTo("99")))
	}

	answered(tg.Press(token, boss, asks["555"], "approve:"+call), "Approved")
	testutil.Eventually(t, "the reply in the chat", func() error { return testutil.Equal("messages to the chat", len(sentTo("99")), 1) })
	if reply := sentTo("99")[0]; reply.Text != "SOL is at 142." || reply.ReplyTo != 3 {
		t.Errorf("reply %+v", reply)
	}
	if got := handler.got(); len(got) != 1 {
		t.Errorf("the handler got %d calls, want the approved one", len(got))
	}
	edited := sentTo("555")[1]
	if want := asks["555"].Text + "\n\nApproved by @boss"; !edited.Edited || edited.Text != want || len(edited.Buttons) != 0 {
		t.Errorf("the approval message after the press: %+v; want %q without buttons", edited, want)
	}
	checkApproval(t, e.run(t, run), "telegram:555", "boss")

	answered(tg.Press(token, models.User{ID: 777, FirstName: "Sam"}, asks["777"], "deny:"+call), "already decided")
	if late := sentTo("777")[0]; late.Edited || len(handler.got()) != 1 {
		t.Errorf("a late press changed something: %+v, %d handler calls", late, len(handler.got()))
	}
	e.in.stop(t)
}

// TestDiscordApprovals is TestTelegramApprovals on Discord: the admin,
// named by username, wrote to the bot in a DM first; a mention in a
// guild channel makes the run wait; the buttons come as message
// components in the admin's DM and the presses as interactions, answered
// through their callback (an update of the message for the decision, a
// message to the presser alone otherwise).
func TestDiscordApprovals(t *testing.T) {
	const token = "e2e.discord.approvals"
	e := startDiscordAgent(t, token, "Warden", map[string]any{"channels": []string{"lobby"}, "adminUsers": []string{"boss"}})
	dc := e.dc
	handler := e.priceAction(t, true)
	boss := discordgo.User{ID: "555", Username: "boss"}
	e.openai.Respond(llmtest.Reply{Text: "Noted."})
	dc.Dispatch(token, &discordgo.Message{ChannelID: "800", Content: "hello", Author: &boss})
	testutil.Eventually(t, "the answer in the admin's DM", func() error { return testutil.Equal("messages sent", len(dc.Sent(token)), 1) })

	e.askPrice()
	m := &discordgo.Message{ChannelID: "500", GuildID: "77", Content: "<@4242> SOL price?", Author: &discordgo.User{ID: "99", Username: "ann"}}
	m.Mentions = dc.Mentions(m.Content)
	dc.Dispatch(token, m)
	var ask discordtest.Sent
	testutil.Eventually(t, "the approval message", func() error {
		for _, s := range dc.Sent(token) {
			if len(s.Buttons) > 0 {
				ask = s
				return nil
			}
		}
		return fmt.Errorf("sent %+v", dc.Sent(token))
	})
	run, call := e.waitingRun(t)
	want := []discordtest.Button{{Label: "Approve", CustomID: "approve:" + call, Style: discordgo.SuccessButton},
		{Label: "Deny", CustomID: "deny:" + call, Style: discordgo.DangerButton}}
	if ask.ChannelID != dc.DM(token, "555") || !slices.Equal(ask.Buttons, want) || !strings.Contains(ask.Content, `{"input":"SOL"}`) {
		t.Errorf("approval message %+v; want it in the admin's DM (%q) with buttons %v", ask, dc.DM(token, "555"), want)
	}
	inLobby := func() (out []discordtest.Sent) {
		for _, s := range dc.Sent(token) {
			if s.ChannelID == "500" {
				out = append(out, s)
			}
		}
		return out
	}
	responded := func(id string, kind discordgo.InteractionResponseType, content string) {
		t.Helper()
		testutil.Eventually(t, "the interaction answered", func() error {
			for _, r := range dc.Responses(token) {
				if r.InteractionID == id {
					if r.Type != kind || r.Content != content || r.Ephemeral != (kind != discordgo.InteractionResponseUpdateMessage) {
						return fmt.Errorf("response %+v; want type %d with %q", r, kind, content)
					}
					return nil
				}
			}
			return fmt.Errorf("responses %+v", dc.Responses(token))
		})
	}

	responded(dc.Press(token, discordgo.User{ID: "66", Username: "eve"}, ask, "approve:"+call), discordgo.InteractionResponseChannelMessageWithSource, "not allowed")
	if still := e.run(t, run); still["status"] != "requires_action" || len(handler.got()) != 0 || len(inLobby()) != 0 {
		t.Fatalf("after another user's press: run %v, %d handler calls, %d messages in the channel", still["status"], len(handler.got()), len(inLobby()))
	}

	outcome := ask.Content + "\n\nApproved by @boss"
	responded(dc.Press(token, boss, ask, "approve:"+call), discordgo.InteractionResponseUpdateMessage, outcome)
	testutil.Eventually(t, "the reply in the channel", func() error { return testutil.Equal("messages in the channel", len(inLobby()), 1) })
	if reply := inLobby()[0]; reply.Content != "SOL is at 142." || reply.ReplyTo != m.ID {
		t.Errorf("reply %+v", reply)
	}
	if got := handler.got(); len(got) != 1 {
		t.Errorf("the handler got %d calls, want the approved one", len(got))
	}
	for _, s := range dc.Sent(token) {
		if s.ID == ask.ID && (!s.Updated || s.Content != outcome || len(s.Buttons) != 0) {
			t.Errorf("the approval message after the press: %+v; want %q without buttons", s, outcome)
		}
	}
	checkApproval(t, e.run(t, run), "discord:555", "boss")

	responded(dc.Press(token, boss, ask, "deny:"+call), discordgo.InteractionResponseChannelMessageWithSource, "already decided")
	if len(handler.got()) != 1 || len(inLobby()) != 1 {
		t.Errorf("a late press changed something: %d handler calls, %d messages in the channel", len(handler.got()), len(inLobby()))
	}
	e.in.stop(t)
}

// waitingRun returns the agent's one run waiting for a decision and the
// id of the one call it waits for.
func (e *platformE2E) waitingRun(t *testing.T) (run, call string) {
	t.Helper()
	runs := e.c.do("GET", "/v1/agents/"+e.id+"/runs?status=requires_action", e.key, nil).data(t)["items"].([]any)
	if len(runs) != 1 {
		t.Fatalf("waiting runs %v; want one", runs)
	}
	r := runs[0].(map[string]any)
	calls, _ := r["requiredAction"].(map[string]any)["toolCalls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("run %v; want one call waiting", r)
	}
	return r["id"].(string), calls[0].(map[string]any)["id"].(string)
}

// run is the agent's run id as Get Run shows it.
func (e *platformE2E) run(t *testing.T, id string) map[string]any {
	t.Helper()
	return e.c.do("GET", "/v1/agents/"+e.id+"/runs/"+id, e.key, nil).data(t)
}

// checkApproval checks that run completed with its one call approved by
// by, named name.
func checkApproval(t *testing.T, run map[string]any, by, name string) {
	t.Helper()
	reply, _ := run["reply"].(map[string]any)
	meta, _ := reply["metadata"].(map[string]any)
	calls, _ := meta["toolCalls"].([]any)
	if run["status"] != "completed" || len(calls) != 1 {
		t.Fatalf("run %v; want it completed with one call", run)
	}
	approval, _ := calls[0].(map[string]any)["approval"].(map[string]any)
	if approval["approved"] != true || approval["by"] != by || approval["byName"] != name {
		t.Errorf("approval %v; want approved by %s (%s)", approval, by, name)
	}
}
