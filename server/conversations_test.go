package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store/storetest"
)

// conversationOf sends one message from user to the agent and returns the
// id of the direct conversation it lands in.
func (h *harness) conversationOf(agentID, user string) string {
	h.t.Helper()
	if res := h.send(agentID, map[string]any{"text": "hello", "userId": user}); res.Code != 200 {
		h.t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	items := h.items(h.get("/v1/agents/" + agentID + "/conversations?userId=" + url.QueryEscape(user)))
	if len(items) != 1 {
		h.t.Fatalf("conversations of %s: %v", user, items)
	}
	return items[0]["id"].(string)
}

func (h *harness) get(path string) response {
	h.t.Helper()
	return h.do(request{method: "GET", path: path, key: h.readKey})
}

// items returns data.items of a list answer.
func (h *harness) items(res response) []map[string]any {
	h.t.Helper()
	if res.Code != 200 {
		h.t.Fatalf("%d %s", res.Code, res.Body)
	}
	raw, _ := res.Data(h.t)["items"].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i] = r.(map[string]any)
	}
	return out
}

// sendApart sends each message to agent id in turn, at least two
// milliseconds apart: times are kept to the millisecond, and conversations
// are ordered by their last message's.
func (h *harness) sendApart(id string, msgs ...map[string]any) {
	h.t.Helper()
	for _, m := range msgs {
		time.Sleep(2 * time.Millisecond)
		if res := h.send(id, m); res.Code != http.StatusOK {
			h.t.Fatalf("send %v: %d %s", m, res.Code, res.Body)
		}
	}
}

func field(items []map[string]any, name string) string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprint(it[name]))
	}
	return strings.Join(out, ",")
}

func TestConversationsThroughTheAPI(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) { testConversationsThroughTheAPI(t, newHarnessAt(t, dsn, nil, nil)) })
}

func testConversationsThroughTheAPI(t *testing.T, h *harness) {
	h.openai.Respond(llmtest.Reply{Text: "noted", PromptTokens: 5, CompletionTokens: 3})
	id := h.createAgent(map[string]any{"name": "host"})
	h.sendApart(id,
		map[string]any{"text": "hi all", "userId": "ann", "roomId": "lobby"},
		map[string]any{"text": "just me", "userId": "bob"},
		map[string]any{"text": "me too", "userId": "bob", "roomId": "lobby"},
		map[string]any{"text": "anonymous"})
	base := "/v1/agents/" + id + "/conversations"
	all := h.items(h.get(base))
	if got := field(all, "kind"); got != "room,direct" {
		t.Fatalf("kinds, most recent first: %s", got)
	}
	room, direct := all[0], all[1]
	if room["roomId"] != "lobby" || room["userId"] != nil || room["messageCount"] != 4.0 || room["platform"] != "api" ||
		room["agentId"] != id || !strings.HasPrefix(room["id"].(string), "conv_") {
		t.Errorf("room = %v", room)
	}
	if direct["userId"] != "bob" || direct["roomId"] != nil || direct["messageCount"] != 2.0 {
		t.Errorf("direct = %v", direct)
	}
	for q, want := range map[string]string{
		"userId=bob": fmt.Sprint(room["id"], ",", direct["id"]), "userId=ann": fmt.Sprint(room["id"]),
		"roomId=lobby": fmt.Sprint(room["id"]), "platform=telegram": "", "platform=api&limit=1&page=2": fmt.Sprint(direct["id"]),
	} {
		if got := field(h.items(h.get(base+"?"+q)), "id"); got != want {
			t.Errorf("?%s: %s, want %s", q, got, want)
		}
	}
	pg := h.get(base + "?limit=1&page=2").Data(t)["pagination"].(map[string]any)
	if pg["currentPage"] != 2.0 || pg["totalPages"] != 2.0 || pg["totalItems"] != 2.0 || pg["itemsPerPage"] != 1.0 {
		t.Errorf("pagination = %v", pg)
	}
	if one := h.get(base + "/" + room["id"].(string)).Data(t); one["id"] != room["id"] || one["messageCount"] != 4.0 {
		t.Errorf("get = %v", one)
	}

	msgs := base + "/" + room["id"].(string) + "/messages"
	asc := h.items(h.get(msgs))
	if got := field(asc, "role") + " " + field(asc, "text") + " " + field(asc, "userId"); got != "user,agent,user,agent hi all,noted,me too,noted ann,ann,bob,bob" {
		t.Errorf("messages asc: %s", got)
	}
	if md, _ := asc[1]["metadata"].(map[string]any); md["tokensUsed"] != 8.0 || md["model"] != llm.DefaultModels["openai"] || asc[1]["partial"] != nil || asc[0]["metadata"] != nil {
		t.Errorf("agent message = %v, user message = %v", asc[1], asc[0])
	}
	desc := h.items(h.get(msgs + "?order=desc&limit=3"))
	if got := field(desc, "text"); got != "noted,me too,noted" {
		t.Errorf("messages desc: %s", got)
	}
	reply := h.send(id, map[string]any{"text": "last", "roomId": "lobby", "userId": "cy"}).Data(t)
	if newest := h.items(h.get(msgs + "?order=desc&limit=1")); newest[0]["messageId"] != reply["messageId"] {
		t.Errorf("Send Message answered %v, the stored agent message is %v", reply["messageId"], newest[0]["messageId"])
	}

	// Delete: a read key may not; the write key forgets the messages and
	// the room's next message starts a new conversation.
	del := request{method: "DELETE", path: base + "/" + room["id"].(string), key: h.readKey}
	h.checkError(t, errorCase{name: "read key", req: del, status: 403, code: "INSUFFICIENT_PERMISSIONS"})
	del.key = h.writeKey
	d := h.do(del).Data(t)
	if d["id"] != room["id"] || d["messagesDeleted"] != 6.0 {
		t.Errorf("delete = %v", d)
	}
	h.checkError(t, errorCase{name: "deleted", req: request{method: "GET", path: msgs, key: h.readKey}, status: 404, code: "CONVERSATION_NOT_FOUND"})
	h.send(id, map[string]any{"text": "again", "roomId": "lobby", "userId": "ann"})
	if again := h.items(h.get(base + "?roomId=lobby")); len(again) != 1 || again[0]["id"] == room["id"] || again[0]["messageCount"] != 2.0 {
		t.Errorf("after delete: %v", again)
	}
	metrics := h.get("/v1/agents/" + id).Data(t)["metrics"].(map[string]any)
	if metrics["totalMessages"] != 6.0 || metrics["totalConversations"] != 3.0 {
		t.Errorf("lifetime counters after delete: %v", metrics)
	}

	// Another account sees neither the agent nor its conversations.
	h.newAccount("other", domain.TierStandard)
	otherKey := h.newKey("other", domain.ScopeWrite)
	for _, path := range []string{base, base + "/" + direct["id"].(string), base + "/" + direct["id"].(string) + "/messages", "/v1/agents/" + id + "/analytics"} {
		h.checkError(t, errorCase{name: path, req: request{method: "GET", path: path, key: otherKey}, status: 404, code: "AGENT_NOT_FOUND"})
	}
	h.checkError(t, errorCase{name: "other delete", req: request{method: "DELETE", path: base + "/" + direct["id"].(string), key: otherKey}, status: 404, code: "AGENT_NOT_FOUND"})
	h.checkError(t, errorCase{name: "unknown conversation", req: request{method: "GET", path: base + "/conv_nope", key: h.readKey}, status: 404, code: "CONVERSATION_NOT_FOUND"})
}

func TestAnalyticsThroughTheAPI(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) { testAnalyticsThroughTheAPI(t, newHarnessAt(t, dsn, nil, nil)) })
}

func testAnalyticsThroughTheAPI(t *testing.T, h *harness) {
	id := h.createAgent(map[string]any{"name": "counted"})
	h.openai.Respond(llmtest.Reply{Text: "ok", PromptTokens: 4, CompletionTokens: 6})
	h.send(id, map[string]any{"text": "a", "userId": "ann"})
	h.send(id, map[string]any{"text": "b", "userId": "bob", "roomId": "r"})
	h.openai.Respond(llmtest.Reply{Status: 429, RetryAfter: "1"})
	if res := h.send(id, map[string]any{"text": "c", "userId": "ann"}); res.Code != 503 {
		t.Fatalf("failing provider: %d %s", res.Code, res.Body)
	}
	// During the cool-down the provider is not called: not a failed turn.
	h.send(id, map[string]any{"text": "d", "userId": "ann"})

	d := h.get("/v1/agents/" + id + "/analytics").Data(t)
	tot := d["totals"].(map[string]any)
	if tot["messages"] != 4.0 || tot["users"] != 2.0 || tot["conversations"] != 2.0 || tot["tokensUsed"] != 20.0 || tot["errors"] != 1.0 {
		t.Errorf("totals = %v", tot)
	}
	series := d["series"].([]any)
	if d["interval"] != "hour" || len(series) < 24 || len(series) > 25 {
		t.Errorf("default range: interval %v, %d buckets", d["interval"], len(series))
	}
	last := series[len(series)-1].(map[string]any)
	if last["messages"] != 4.0 || last["errors"] != 1.0 || series[0].(map[string]any)["messages"] != 0.0 {
		t.Errorf("buckets: first %v, last %v", series[0], last)
	}

	now := time.Now().UTC()
	day := func(from time.Time) string { return "from=" + url.QueryEscape(from.Format(time.RFC3339)) }
	if n := len(h.get("/v1/agents/" + id + "/analytics?interval=day&" + day(now.AddDate(0, 0, -3))).Data(t)["series"].([]any)); n != 4 {
		t.Errorf("3 days back by day: %d buckets, want 4", n)
	}
	base := "/v1/agents/" + id + "/analytics?"
	for name, q := range map[string]string{
		"eight days of hours":  day(now.AddDate(0, 0, -8)),
		"367 days of days":     "interval=day&" + day(now.AddDate(0, 0, -367)),
		"from after to":        day(now) + "&to=" + url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)),
		"from not a timestamp": "from=yesterday",
	} {
		h.checkError(t, errorCase{name: name, req: request{method: "GET", path: base + q, key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "from"})
	}
	h.checkError(t, errorCase{name: "interval", req: request{method: "GET", path: base + "interval=week", key: h.readKey}, status: 400, code: "INVALID_REQUEST", field: "interval"})
}

// TestConversationTitlesAndSearch: a conversation is titled by its first
// user message, cut to 80 characters (not bytes), whatever comes after;
// q finds the conversations with a message of either side containing the
// text, ignoring case, its LIKE wildcards taken literally.
func TestConversationTitlesAndSearch(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarnessAt(t, dsn, nil, nil)
		h.openai.Respond(llmtest.Reply{Text: "Noted, 100% SURE"})
		id := h.createAgent(map[string]any{"name": "host"})
		long := strings.Repeat("é", 79) + "xyz"
		h.sendApart(id,
			map[string]any{"text": long, "userId": "ann"},
			map[string]any{"text": "second words", "userId": "ann"},
			map[string]any{"text": "Where is the Lobby?", "roomId": "lobby", "userId": "bob"})
		base := "/v1/agents/" + id + "/conversations"
		all := h.items(h.get(base))
		if got := field(all, "title"); got != "Where is the Lobby?,"+strings.Repeat("é", 79)+"x" {
			t.Errorf("titles: %s", got)
		}
		for q, want := range map[string]string{
			"lobby":     "Where is the Lobby?",
			"SECOND":    strings.Repeat("é", 79) + "x",
			"100% sure": "Where is the Lobby?," + strings.Repeat("é", 79) + "x", // the reply, in both
			"100_":      "",
			"nowhere":   "",
		} {
			if got := field(h.items(h.get(base+"?q="+url.QueryEscape(q))), "title"); got != want {
				t.Errorf("?q=%s: %q, want %q", q, got, want)
			}
		}
		h.checkError(t, errorCase{name: "empty q", req: request{method: "GET", path: base + "?q=", key: h.readKey}, status: 400, code: "INVALID_REQUEST"})
	})
}
