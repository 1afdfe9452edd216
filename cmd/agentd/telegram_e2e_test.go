package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/connect/telegram/telegramtest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/go-telegram/bot/models"
)

// TestTelegramEndToEnd runs `agentd serve` against a Telegram test server
// and a provider test server: an agent given a bot token connects, its
// state shows in the API, and a private message goes through the same turn
// as Send Message (provider, history, metrics) and back to the chat.
func TestTelegramEndToEnd(t *testing.T) {
	const token = "4242:e2e"
	e := startTelegramAgent(t, token, 4242, "e2e_bot", "Teller", nil)
	tg, openai, c, key, id, in := e.tg, e.openai, e.c, e.key, e.id, e.in
	openai.Respond(llmtest.Reply{Text: "Hi from Telegram.", PromptTokens: 7, CompletionTokens: 5})
	testutil.Eventually(t, "the bot's account", func() error {
		cn := e.connection()
		if account, _ := cn["account"].(map[string]any); account["username"] != "e2e_bot" || account["id"] != "4242" {
			return fmt.Errorf("connection %v", cn)
		}
		return nil
	})
	conn := e.connection

	tg.Queue(token, models.Update{Message: &models.Message{ID: 7, Text: "Hello bot",
		Chat: models.Chat{ID: 99, Type: models.ChatTypePrivate}, From: &models.User{ID: 99, FirstName: "Ann"}}})
	testutil.Eventually(t, "the reply in the chat", func() error { return testutil.Equal("messages sent", len(tg.Sent(token)), 1) })
	if sent := tg.Sent(token)[0]; sent.Text != "Hi from Telegram." || sent.ChatID != "99" || sent.ReplyTo != 7 {
		t.Errorf("sent %+v", sent)
	}
	if n := openai.Count(); n != 1 {
		t.Errorf("provider called %d times", n)
	}
	checkTurnRecorded(t, c, key, id, platformTurn{platform: "telegram", kind: "direct", userID: "telegram:99",
		speaker: "telegram:99", text: "Hello bot", reply: "Hi from Telegram."})
	testutil.Eventually(t, "counters", func() error {
		if cn := conn(); cn["messagesIn"] != 1.0 || cn["messagesOut"] != 1.0 || cn["lastEventAt"] == nil {
			return fmt.Errorf("connection %v", cn)
		}
		return nil
	})

	// Inactive stops polling within 5 s and says so.
	expect(t, "deactivate", c.do("PATCH", "/v1/agents/"+id, key, map[string]any{"status": "inactive"}), 200, "")
	testutil.Within(t, "disconnected", 5*time.Second, func() error {
		if cn := conn(); cn["state"] != "disconnected" || tg.Polling(token) != 0 {
			return fmt.Errorf("connection %v, %d pollers", cn, tg.Polling(token))
		}
		return nil
	})
	in.stop(t)
}

// platformE2E is `agentd serve` with one agent on a platform test server,
// answering through a provider test server.
type platformE2E struct {
	openai  *llmtest.Server
	in      *instance
	c       *client
	key, id string
}

// startPlatformAgent boots serve with env (the platform test server's URL)
// and a provider test server, creates the agent name on platform with
// settings, and waits until its connection is connected.
func startPlatformAgent(t *testing.T, env map[string]string, platform, name string, settings map[string]any) *platformE2E {
	t.Helper()
	e := &platformE2E{openai: llmtest.NewOpenAI(t)}
	// Private networks allowed: the tests' action handlers are on loopback.
	env["OPENAI_API_KEY"], env["OPENAI_BASE_URL"], env["AGENTD_ALLOW_PRIVATE_NETWORKS"] = "sk-test", e.openai.URL, "true"
	e.in, e.key = bootUnlimited(t, env)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	e.c = &client{t: t, base: e.in.base, http: &http.Client{Transport: transport, Timeout: 20 * time.Second}, contract: loadContract(t)}
	r := e.c.do("POST", "/v1/agents", e.key, map[string]any{"name": name, "clients": []string{platform}, "settings": settings})
	expect(t, "create", r, 201, "")
	e.id = r.data(t)["id"].(string)
	testutil.Eventually(t, "connected", func() error {
		if cn := e.connection(); cn["state"] != "connected" {
			return fmt.Errorf("connection %v", cn)
		}
		return nil
	})
	return e
}

// connection is the agent's one platform connection as the API shows it.
func (e *platformE2E) connection() map[string]any {
	return e.c.do("GET", "/v1/agents/"+e.id+"/connections", e.key, nil).data(e.c.t)["items"].([]any)[0].(map[string]any)
}

// telegramE2E is `agentd serve` with one agent on a Telegram test server.
type telegramE2E struct {
	tg *telegramtest.Server
	*platformE2E
}

// startTelegramAgent boots serve against a Telegram test server, creates
// the agent name with the token of bot botID and settings.telegram, and
// waits until it is connected.
func startTelegramAgent(t *testing.T, token string, botID int64, bot, name string, telegram map[string]any) *telegramE2E {
	t.Helper()
	settings := map[string]any{}
	if telegram != nil {
		settings["telegram"] = telegram
	}
	return startTelegramAgentWith(t, token, botID, bot, name, settings)
}

// startTelegramAgentWith is startTelegramAgent with the agent's settings
// (its bot token added to their secrets).
func startTelegramAgentWith(t *testing.T, token string, botID int64, bot, name string, settings map[string]any) *telegramE2E {
	t.Helper()
	tg := telegramtest.New(t)
	tg.AddBot(token, botID, bot)
	settings["secrets"] = map[string]string{"TELEGRAM_BOT_TOKEN": token}
	return &telegramE2E{tg: tg, platformE2E: startPlatformAgent(t, map[string]string{"TELEGRAM_API_URL": tg.URL}, "telegram", name, settings)}
}

// actionHandler is an action handler test server that answers every call
// with a price and keeps the bodies it got.
type actionHandler struct {
	*httptest.Server
	mu    sync.Mutex
	calls []map[string]any
}

func newActionHandler(t *testing.T) *actionHandler {
	h := &actionHandler{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		h.mu.Lock()
		h.calls = append(h.calls, body)
		h.mu.Unlock()
		_, _ = io.WriteString(w, `{"price":142}`)
	}))
	t.Cleanup(h.Close)
	return h
}

// got is the bodies of the calls so far, oldest first.
func (h *actionHandler) got() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// priceAction gives the agent the action get_price behind a new handler,
// requiring approval when approval is set.
func (e *platformE2E) priceAction(t *testing.T, approval bool) *actionHandler {
	t.Helper()
	handler := newActionHandler(t)
	expect(t, "add the action", e.c.do("PATCH", "/v1/agents/"+e.id, e.key, map[string]any{"actions": []any{map[string]any{
		"name": "get_price", "description": "Price of a token", "examples": []string{}, "handler": handler.URL,
		"requiresApproval": approval}}}), 200, "")
	return handler
}

// askPrice has the model ask for get_price on the next message, then
// answer with the price.
func (e *platformE2E) askPrice() {
	e.openai.Respond(llmtest.Reply{Text: "SOL is at 142."})
	e.openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "get_price", Arguments: `{"input":"SOL"}`}}})
}

// bootUnlimited starts serve with env on a fresh SQLite database whose one
// account is enterprise with limits that never bind, and returns its key:
// the tests poll the API while platforms connect, which a standard
// account's 60 requests a minute would refuse.
func bootUnlimited(t *testing.T, env map[string]string) (*instance, string) {
	t.Helper()
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "e2e", "--tier", "enterprise", "--rpm", "1000000", "--endpoint-multiplier", "10000")
	key := keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "e2e").stdout)
	return boot(t, env, "--addr", "127.0.0.1:0", "--db", db), key
}

// platformTurn is what one platform message answered by an agent leaves
// in the API.
type platformTurn struct {
	platform       string
	kind           string // of the conversation: "room" or "direct"
	roomID, userID string // the conversation's; "" for the one its kind lacks
	speaker        string // who wrote the message
	text, reply    string
}

// checkTurnRecorded checks that the turn want went through history and
// metrics like a Send Message: it is the agent's only conversation on its
// platform, holding the message and the reply, and the agent's metrics
// count one message in one conversation.
func checkTurnRecorded(t *testing.T, c *client, key, agentID string, want platformTurn) {
	t.Helper()
	convs := c.do("GET", "/v1/agents/"+agentID+"/conversations?platform="+want.platform, key, nil).data(t)["items"].([]any)
	if len(convs) != 1 {
		t.Fatalf("%s conversations: %v; want one", want.platform, convs)
	}
	conv := convs[0].(map[string]any)
	roomID, _ := conv["roomId"].(string)
	userID, _ := conv["userId"].(string)
	if conv["kind"] != want.kind || conv["platform"] != want.platform || roomID != want.roomID || userID != want.userID || conv["messageCount"] != 2.0 {
		t.Errorf("conversation %v; want %+v with 2 messages", conv, want)
	}
	var got []string
	for _, m := range c.do("GET", "/v1/agents/"+agentID+"/conversations/"+conv["id"].(string)+"/messages", key, nil).data(t)["items"].([]any) {
		m := m.(map[string]any)
		got = append(got, fmt.Sprintf("%v %v %v", m["role"], m["userId"], m["text"]))
	}
	if wantMsgs := []string{"user " + want.speaker + " " + want.text, "agent " + want.speaker + " " + want.reply}; !slices.Equal(got, wantMsgs) {
		t.Errorf("messages %q; want %q", got, wantMsgs)
	}
	metrics := c.do("GET", "/v1/agents/"+agentID, key, nil).data(t)["metrics"].(map[string]any)
	if metrics["totalMessages"] != 1.0 || metrics["totalConversations"] != 1.0 {
		t.Errorf("metrics: %v; want one message in one conversation", metrics)
	}
	checkRuns(t, c, key, agentID, want.platform, 1)
}

// checkRuns checks that GET /v1/runs shows n runs of the agent, each
// completed and made by source: the way its message came in.
func checkRuns(t *testing.T, c *client, key, agentID, source string, n int) {
	t.Helper()
	r := c.do("GET", "/v1/runs?agentId="+agentID, key, nil)
	expect(t, "runs", r, 200, "")
	var got []string
	for _, it := range r.data(t)["items"].([]any) {
		run := it.(map[string]any)
		got = append(got, fmt.Sprint(run["source"], " ", run["status"]))
	}
	if want := slices.Repeat([]string{source + " completed"}, n); !slices.Equal(got, want) {
		t.Errorf("runs %q; want %q", got, want)
	}
}

// TestTelegramAgentRecoversAfterCooldown: an agent reached only through a
// platform, put in error by its provider, answers again once its cool-down
// has passed, and is active again, as an agent talked to through the API
// is. The platform path used to refuse any agent not active, so such an
// agent stayed silent in error for good.
func TestTelegramAgentRecoversAfterCooldown(t *testing.T) {
	const token = "4343:e2e"
	e := startTelegramAgent(t, token, 4343, "recover_bot", "Phoenix", nil)
	tg, c, key, id := e.tg, e.c, e.key, e.id
	e.openai.Respond(llmtest.Reply{Text: "Back again."})
	e.openai.Enqueue(llmtest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	say := func(msgID int, text string) {
		tg.Queue(token, models.Update{Message: &models.Message{ID: msgID, Text: text,
			Chat: models.Chat{ID: 77, Type: models.ChatTypePrivate}, From: &models.User{ID: 77, FirstName: "Eve"}}})
	}
	status := func() any { return c.do("GET", "/v1/agents/"+id, key, nil).data(t)["status"] }

	say(1, "Are you there?")
	testutil.Eventually(t, "the agent in error", func() error {
		if s := status(); s != "error" {
			return fmt.Errorf("status %v", s)
		}
		return nil
	})
	failedAt := time.Now()
	if n := len(tg.Sent(token)); n != 0 {
		t.Fatalf("%d messages sent for a failed turn", n)
	}
	// The provider asked for one second: past it, the next message is tried.
	time.Sleep(time.Until(failedAt.Add(1100 * time.Millisecond)))
	say(2, "Now?")
	testutil.Eventually(t, "the reply after the cool-down", func() error { return testutil.Equal("messages sent", len(tg.Sent(token)), 1) })
	if sent := tg.Sent(token)[0]; sent.Text != "Back again." || sent.ReplyTo != 2 {
		t.Errorf("sent %+v", sent)
	}
	if s := status(); s != "active" {
		t.Errorf("status after the reply: %v, want active", s)
	}
	e.in.stop(t)
}

// TestTelegramAgentUsesATool: a Telegram message whose answer needs a
// tool calls the agent's action handler, told it comes from Telegram, and
// the chat gets the answer made from its result; the history shows the
// call.
func TestTelegramAgentUsesATool(t *testing.T) {
	const token = "4444:e2e"
	e := startTelegramAgent(t, token, 4444, "tool_bot", "Toolie", nil)
	handler := e.priceAction(t, false)
	e.askPrice()
	e.tg.Queue(token, models.Update{Message: &models.Message{ID: 3, Text: "SOL price?",
		Chat: models.Chat{ID: 55, Type: models.ChatTypePrivate}, From: &models.User{ID: 55, FirstName: "Sol"}}})
	testutil.Eventually(t, "the reply in the chat", func() error { return testutil.Equal("messages sent", len(e.tg.Sent(token)), 1) })
	if sent := e.tg.Sent(token)[0]; sent.Text != "SOL is at 142." {
		t.Errorf("sent %+v", sent)
	}
	calls := handler.got()
	if len(calls) != 1 {
		t.Fatalf("the handler got %d calls", len(calls))
	}
	if data := calls[0]["data"].(map[string]any); data["platform"] != "telegram" || data["userId"] != "telegram:55" {
		t.Errorf("call data = %v", data)
	}
	convs := e.c.do("GET", "/v1/agents/"+e.id+"/conversations?platform=telegram", e.key, nil).data(t)["items"].([]any)
	msgs := e.c.do("GET", "/v1/agents/"+e.id+"/conversations/"+convs[0].(map[string]any)["id"].(string)+"/messages", e.key, nil).data(t)["items"].([]any)
	reply := msgs[len(msgs)-1].(map[string]any)
	if tc, _ := reply["metadata"].(map[string]any)["toolCalls"].([]any); len(tc) != 1 {
		t.Errorf("history reply %v, want its tool call", reply)
	}
	e.in.stop(t)
}
