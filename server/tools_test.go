package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/llm/llmtest"
)

// priceHandler is an action handler answering a price; it keeps the
// bodies it got.
type priceHandler struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newPriceHandler(t *testing.T) *priceHandler {
	p := &priceHandler{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		p.mu.Lock()
		p.bodies = append(p.bodies, body)
		p.mu.Unlock()
		_, _ = io.WriteString(w, `{"symbol":"SOL","price":142}`)
	}))
	t.Cleanup(p.Close)
	return p
}

// got is the bodies the handler got so far.
func (p *priceHandler) got() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.bodies)
}

// priceAction is the action get_price calling handler.
func priceAction(handler string) map[string]any {
	return map[string]any{"name": "get_price", "description": "Look up a price", "examples": []string{},
		"handler": handler, "parameters": map[string]any{"type": "object", "properties": map[string]any{"symbol": map[string]any{"type": "string"}}}}
}

// toolAgent creates an agent whose action get_price calls handler; extra
// members, when given, complete the action.
func (h *harness) toolAgent(handler string, extra ...map[string]any) string {
	h.t.Helper()
	action := priceAction(handler)
	for _, e := range extra {
		for k, v := range e {
			action[k] = v
		}
	}
	return h.createAgent(map[string]any{"name": "Trader", "modelProvider": "openai", "model": "gpt-4o-mini",
		"actions": []any{action,
			map[string]any{"name": "DANCE", "description": "An ElizaOS code action", "examples": []string{}, "handler": "danceHandler"}},
		"settings": map[string]any{"secrets": map[string]any{"ACTION_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}})
}

// priceCall is the model asking for get_price.
var priceCall = llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "get_price", Arguments: `{"symbol":"SOL"}`}}, PromptTokens: 10, CompletionTokens: 4}

// TestActionToolOverAPI: the model's call reaches the handler, and the
// reply, the history, the analytics and List Tools show it.
func TestActionToolOverAPI(t *testing.T) {
	h := newHarness(t)
	handler := newPriceHandler(t)
	id := h.toolAgent(handler.URL)
	h.openai.Respond(llmtest.Reply{Text: "SOL is at 142.", PromptTokens: 30, CompletionTokens: 6})
	h.openai.Enqueue(priceCall)
	res := h.send(id, map[string]any{"text": "price of SOL?", "userId": "u1"})
	if res.Code != http.StatusOK {
		t.Fatalf("status %d: %s", res.Code, res.Body)
	}
	meta := res.Data(t)["metadata"].(map[string]any)
	calls, _ := meta["toolCalls"].([]any)
	if len(calls) != 1 || meta["tokensUsed"] != float64(50) {
		t.Fatalf("metadata = %v", meta)
	}
	call := calls[0].(map[string]any)
	if call["name"] != "get_price" || call["ok"] != true || call["result"] != `{"symbol":"SOL","price":142}` ||
		!strings.HasPrefix(call["id"].(string), "call_") {
		t.Errorf("call = %v", call)
	}
	if len(handler.got()) != 1 || handler.got()[0]["data"].(map[string]any)["callId"] != call["id"] {
		t.Errorf("handler got %v", handler.got())
	}
	if names := h.openai.Requests()[0].ToolNames(); len(names) != 1 || names[0] != "get_price" {
		t.Errorf("offered %v, want only the URL action", names)
	}
	msgs := h.items(h.get("/v1/agents/" + id + "/conversations/" + h.conversationOf(id, "u1") + "/messages"))
	stored, _ := msgs[1]["metadata"].(map[string]any)["toolCalls"].([]any) // conversationOf said hello after
	if len(stored) != 1 || stored[0].(map[string]any)["id"] != call["id"] {
		t.Errorf("history toolCalls = %v", stored)
	}
	totals := h.get("/v1/agents/" + id + "/analytics").Data(t)["totals"].(map[string]any)
	if totals["toolCalls"] != float64(1) || totals["toolErrors"] != float64(0) {
		t.Errorf("analytics totals = %v", totals)
	}
}

// TestActionToolFirstExchangeNamesItsConversation: the first message of a
// conversation already has it, so the handler called in that exchange gets
// its conversationId, the one the exchange is then stored in.
func TestActionToolFirstExchangeNamesItsConversation(t *testing.T) {
	h := newHarness(t)
	handler := newPriceHandler(t)
	id := h.toolAgent(handler.URL)
	h.openai.Respond(llmtest.Reply{Text: "SOL is at 142."})
	h.openai.Enqueue(priceCall)
	if res := h.send(id, map[string]any{"text": "price of SOL?", "userId": "u1"}); res.Code != http.StatusOK {
		t.Fatalf("status %d: %s", res.Code, res.Body)
	}
	convs := h.items(h.get("/v1/agents/" + id + "/conversations"))
	if len(handler.got()) != 1 || len(convs) != 1 {
		t.Fatalf("handler got %v; conversations %v", handler.got(), convs)
	}
	if got := handler.got()[0]["data"].(map[string]any)["conversationId"]; got != convs[0]["id"] {
		t.Errorf("handler got conversationId %v, want %v", got, convs[0]["id"])
	}
}

// TestActionToolStreamed: the stream tells the call's start and end before
// the answer's tokens, and done carries the calls.
func TestActionToolStreamed(t *testing.T) {
	h := newHarness(t)
	id := h.toolAgent(newPriceHandler(t).URL)
	h.openai.Respond(llmtest.Reply{Text: "SOL is at 142."})
	h.openai.Enqueue(priceCall)
	res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/stream", key: h.writeKey, body: map[string]any{"text": "price?"}})
	events := parseSSE(t, res.Body)
	var types []string
	for _, ev := range events {
		if n := len(types); n == 0 || types[n-1] != ev["type"] {
			types = append(types, ev["type"].(string))
		}
	}
	if got := strings.Join(types, " "); got != "tool_call tool_result token done" {
		t.Fatalf("events %s; body %s", got, res.Body)
	}
	if events[0]["id"] != events[1]["id"] || events[0]["arguments"].(map[string]any)["symbol"] != "SOL" || events[1]["ok"] != true {
		t.Errorf("tool events = %v, %v", events[0], events[1])
	}
	done := events[len(events)-1]["metadata"].(map[string]any)["toolCalls"].([]any)
	if len(done) != 1 || done[0].(map[string]any)["id"] != events[0]["id"] {
		t.Errorf("done toolCalls = %v", done)
	}
}

// TestListTools: the URL actions are listed with their schema and the
// default one, code actions are not; another account's agent is 404.
func TestListTools(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Lister", "actions": []any{
		map[string]any{"name": "b_tool", "description": "B", "examples": []string{}, "handler": "https://tools.example.com/b"},
		map[string]any{"name": "a_tool", "description": "A", "examples": []string{}, "handler": "https://tools.example.com/a",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}},
		map[string]any{"name": "code", "description": "C", "examples": []string{}, "handler": "codeHandler"}}})
	d := h.get("/v1/agents/" + id + "/tools").Data(t)
	items := d["items"].([]any)
	if len(items) != 2 || len(d["errors"].([]any)) != 0 {
		t.Fatalf("tools = %v", d)
	}
	a, b := items[0].(map[string]any), items[1].(map[string]any)
	if a["name"] != "a_tool" || a["source"] != "action" || a["offered"] != true || a["parameters"].(map[string]any)["properties"] == nil {
		t.Errorf("first = %v", a)
	}
	if b["name"] != "b_tool" || b["parameters"].(map[string]any)["properties"].(map[string]any)["input"] == nil {
		t.Errorf("second = %v, want the default schema", b)
	}
	other := h.newKey(h.newAccount("other", "enterprise").Name, "write")
	res := h.do(request{method: "GET", path: "/v1/agents/" + id + "/tools", key: other})
	if res.Code != http.StatusNotFound || res.ErrorCode(t) != "AGENT_NOT_FOUND" {
		t.Errorf("other account: %d %s", res.Code, res.Body)
	}
}

// TestToolMembersValidated: the tool members of a character are checked
// and each error names its member.
func TestToolMembersValidated(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.ToolRules.AllowPrivate = false })
	action := func(name, handler string, params any) map[string]any {
		a := map[string]any{"name": name, "description": "d", "examples": []string{}, "handler": handler}
		if params != nil {
			a["parameters"] = params
		}
		return map[string]any{"name": "V", "actions": []any{a}}
	}
	mcp := func(servers map[string]any) map[string]any {
		return map[string]any{"name": "V", "settings": map[string]any{"mcp": map[string]any{"servers": servers}}}
	}
	eleven := map[string]any{}
	for i := range 11 {
		eleven[string(rune('a'+i))] = map[string]any{"type": "sse", "url": "https://mcp.example.com/sse"}
	}
	create := func(body any) request {
		return request{method: "POST", path: "/v1/agents", key: h.writeKey, body: body}
	}
	for _, tc := range []errorCase{
		{name: "handler without host", req: create(action("ok", "https://", nil)), field: "actions[0].handler"},
		{name: "private handler", req: create(action("ok", "http://127.0.0.1:9/x", nil)), field: "actions[0].handler"},
		{name: "tool name", req: create(action("get price", "https://x.example.com", nil)), field: "actions[0].name"},
		{name: "parameters type", req: create(action("ok", "https://x.example.com", map[string]any{"type": "string"})), field: "actions[0].parameters"},
		{name: "parameters size", req: create(action("ok", "https://x.example.com", map[string]any{"type": "object", "description": strings.Repeat("x", 17<<10)})), field: "actions[0].parameters"},
		{name: "eleven servers", req: create(mcp(eleven)), field: "settings.mcp.servers"},
		{name: "server name", req: create(mcp(map[string]any{"bad name": map[string]any{"type": "sse", "url": "https://m.example.com"}})), field: "settings.mcp.servers.bad name"},
		{name: "server type", req: create(mcp(map[string]any{"docs": map[string]any{"type": "ws", "url": "https://m.example.com"}})), field: "settings.mcp.servers.docs.type"},
		{name: "stdio off", req: create(mcp(map[string]any{"docs": map[string]any{"type": "stdio", "command": "mcp-docs"}})), field: "settings.mcp.servers.docs.type"},
		{name: "server url", req: create(mcp(map[string]any{"docs": map[string]any{"type": "http", "url": "http://10.0.0.1/mcp"}})), field: "settings.mcp.servers.docs.url"},
		{name: "requiresApproval type", req: create(map[string]any{"name": "V", "actions": []any{map[string]any{"name": "ok", "description": "d",
			"examples": []string{}, "handler": "https://x.example.com", "requiresApproval": "yes"}}}), field: "actions[0].requiresApproval"},
		{name: "requireApproval word", req: create(mcp(map[string]any{"docs": map[string]any{"type": "sse", "url": "https://m.example.com", "requireApproval": "sometimes"}})),
			field: "settings.mcp.servers.docs.requireApproval"},
		{name: "requireApproval type", req: create(mcp(map[string]any{"docs": map[string]any{"type": "sse", "url": "https://m.example.com", "requireApproval": 5}})),
			field: "settings.mcp.servers.docs.requireApproval"},
		{name: "requireApproval names", req: create(mcp(map[string]any{"docs": map[string]any{"type": "sse", "url": "https://m.example.com", "requireApproval": make([]string, 65)}})),
			field: "settings.mcp.servers.docs.requireApproval"},
		{name: "approvalTimeout", req: create(map[string]any{"name": "V", "settings": map[string]any{"runs": map[string]any{"approvalTimeout": 59}}}),
			field: "settings.runs.approvalTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.status, tc.code = http.StatusBadRequest, "INVALID_REQUEST"
			h.checkError(t, tc)
		})
	}
	if res := h.do(create(action("ok", "elizaHandler", nil))); res.Code != http.StatusCreated {
		t.Errorf("a code handler: %d %s", res.Code, res.Body)
	}
}
