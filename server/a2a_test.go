package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
)

// rpcCall is one A2A JSON-RPC call of the tests.
type rpcCall struct {
	agentID, key string
	method       string
	params       any
	version      string // A2A-Version; "1.0" when empty, "-" for none
	body         string // a raw body instead of the request
}

// rpc sends c to the agent's A2A endpoint through the whole stack.
func (h *harness) rpc(c rpcCall) response {
	h.t.Helper()
	if c.key == "" {
		c.key = h.writeKey
	}
	var body any = map[string]any{"jsonrpc": "2.0", "id": 7, "method": c.method, "params": c.params}
	if c.body != "" {
		body = c.body
	}
	header := map[string]string{"A2A-Version": "1.0"}
	switch c.version {
	case "-":
		header = nil
	case "":
	default:
		header["A2A-Version"] = c.version
	}
	return h.do(request{method: "POST", path: "/v1/agents/" + c.agentID + "/a2a", key: c.key, body: body, header: header})
}

// rpcResult returns the result of a successful JSON-RPC answer.
func rpcResult(t testing.TB, res response) map[string]any {
	t.Helper()
	m := res.JSON(t)
	if res.Code != 200 || m["jsonrpc"] != "2.0" || m["id"] != 7.0 || m["error"] != nil {
		t.Fatalf("not a result: %d %s", res.Code, res.Body)
	}
	r, _ := m["result"].(map[string]any)
	return r
}

// rpcErr returns the error of a JSON-RPC answer.
func rpcErr(t testing.TB, res response) map[string]any {
	t.Helper()
	m := res.JSON(t)
	e, _ := m["error"].(map[string]any)
	if res.Code != 200 || m["jsonrpc"] != "2.0" || e == nil || m["result"] != nil {
		t.Fatalf("not a JSON-RPC error: %d %s", res.Code, res.Body)
	}
	return e
}

// userMessage is a 1.0 SendMessage params of text in contextID ("" for
// none).
func a2aUserMessage(text, contextID string) map[string]any {
	m := map[string]any{"messageId": "m-" + text, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	if contextID != "" {
		m["contextId"] = contextID
	}
	return map[string]any{"message": m}
}

// dig reads a member of nested objects and arrays: "a.b.0.c".
func dig(v any, p string) any {
	for _, k := range strings.Split(p, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func TestA2AAgentCard(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Trader", "bio": []string{"Expert in DeFi.", "Likes charts."},
		"actions": []any{map[string]any{"name": "CHECK_PRICE", "description": "Looks up a price", "examples": []string{"ETH?"},
			"handler": "https://tools.example.com/price"}}})
	card := func(key string, header map[string]string) response {
		t.Helper()
		return h.do(request{method: "GET", path: "/v1/agents/" + id + "/a2a/.well-known/agent-card.json", key: key, header: header})
	}
	url := "http://localhost:8080/v1/agents/" + id + "/a2a"

	res := card(h.readKey, map[string]string{"A2A-Version": "1.0"})
	v1 := res.JSON(t)
	for p, want := range map[string]any{
		"name": "Trader", "description": "Expert in DeFi. Likes charts.",
		"supportedInterfaces.0.url": url, "supportedInterfaces.0.protocolBinding": "JSONRPC",
		"supportedInterfaces.0.protocolVersion": "1.0", "supportedInterfaces.1.protocolVersion": "0.3",
		"capabilities.streaming": true, "securitySchemes.bearerAuth.httpAuthSecurityScheme.scheme": "Bearer",
		"skills.0.id": "chat", "skills.1.id": "action:CHECK_PRICE", "skills.1.description": "Looks up a price",
		"skills.1.tags.1": "tool", "skills.1.examples.0": "ETH?", "defaultOutputModes.0": "text/plain",
	} {
		if got := dig(v1, p); got != want {
			t.Errorf("1.0 card %s = %v, want %v", p, got, want)
		}
	}
	if _, ok := dig(v1, "securityRequirements.0.schemes.bearerAuth").(map[string]any); !ok || v1["url"] != nil {
		t.Errorf("1.0 card: %s", res.Body)
	}
	if res.Header.Get("Vary") != "A2A-Version" {
		t.Errorf("Vary = %q", res.Header.Get("Vary"))
	}

	// Card resolvers fetch the card without the header: what they get is
	// 0.3's card, which also lists 1.0's interfaces for a 1.0 client.
	legacy := card(h.readKey, nil).JSON(t)
	for p, want := range map[string]any{
		"url": url, "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC", "capabilities.streaming": true,
		"securitySchemes.bearerAuth.type": "http", "securitySchemes.bearerAuth.scheme": "bearer", "skills.1.name": "CHECK_PRICE",
		"supportedInterfaces.0.url": url, "supportedInterfaces.0.protocolBinding": "JSONRPC",
		"supportedInterfaces.0.protocolVersion": "1.0", "supportedInterfaces.1.url": url,
		"supportedInterfaces.1.protocolBinding": "JSONRPC", "supportedInterfaces.1.protocolVersion": "0.3",
	} {
		if got := dig(legacy, p); got != want {
			t.Errorf("0.3 card %s = %v, want %v", p, got, want)
		}
	}

	if res := card("", nil); res.Code != 401 || res.ErrorCode(t) != "UNAUTHORIZED" {
		t.Errorf("no key: %d %s", res.Code, res.Body)
	}
	h.newAccount("globex", domain.TierEnterprise)
	if res := card(h.newKey("globex", domain.ScopeRead), nil); res.Code != 404 || res.ErrorCode(t) != "AGENT_NOT_FOUND" || strings.Contains(string(res.Body), "Trader") {
		t.Errorf("another account's agent: %d %s", res.Code, res.Body)
	}
}

// TestA2ASendMessageAndGetTask: SendMessage answers the completed task, a
// message in the same context sees the first in its history, GetTask finds
// the task afterwards, and a message without a context gets one.
func TestA2ASendMessageAndGetTask(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Trader"})
	h.openai.Respond(llmtest.Reply{Text: "Calm today.", PromptTokens: 10, CompletionTokens: 3})

	task := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "SendMessage", params: a2aUserMessage("How is the market?", "trip-42")}))["task"]
	taskID, _ := dig(task, "id").(string)
	for p, want := range map[string]any{
		"contextId": "trip-42", "status.state": "TASK_STATE_COMPLETED", "artifacts.0.artifactId": "reply",
		"artifacts.0.parts.0.text": "Calm today.", "history.0.role": "ROLE_USER", "history.0.messageId": "m-How is the market?",
		"history.0.parts.0.text": "How is the market?", "history.0.taskId": taskID, "history.1.role": "ROLE_AGENT",
		"history.1.parts.0.text": "Calm today.", "history.1.contextId": "trip-42",
	} {
		if got := dig(task, p); got != want {
			t.Errorf("task %s = %v, want %v", p, got, want)
		}
	}
	if !strings.HasPrefix(taskID, "task_") || !strings.HasPrefix(fmt.Sprint(dig(task, "history.1.messageId")), "msg_") {
		t.Errorf("ids: %v", task)
	}

	h.openai.Respond(llmtest.Reply{Text: "Stormy tomorrow."})
	rpcResult(t, h.rpc(rpcCall{agentID: id, method: "SendMessage", params: a2aUserMessage("And tomorrow?", "trip-42")}))
	if got := fmt.Sprint(history(t, h.openai)); got != "[user:How is the market? assistant:Calm today. user:And tomorrow?]" {
		t.Errorf("the follow-up's history: %s", got)
	}

	got := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "GetTask", params: map[string]any{"id": taskID}}))
	if dig(got, "status.state") != "TASK_STATE_COMPLETED" || dig(got, "artifacts.0.parts.0.text") != "Calm today." || len(got["history"].([]any)) != 2 {
		t.Errorf("GetTask: %v", got)
	}
	got = rpcResult(t, h.rpc(rpcCall{agentID: id, method: "GetTask", params: map[string]any{"id": taskID, "historyLength": 1}}))
	if h := got["history"].([]any); len(h) != 1 || dig(h, "0.role") != "ROLE_AGENT" {
		t.Errorf("GetTask historyLength 1: %v", got["history"])
	}

	fresh := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "SendMessage", params: a2aUserMessage("Hello", "")}))["task"]
	ctx, _ := dig(fresh, "contextId").(string)
	if !strings.HasPrefix(ctx, "ctx-") || fmt.Sprint(history(t, h.openai)) != "[user:Hello]" {
		t.Errorf("a message without a context: %v, history %v", fresh, history(t, h.openai))
	}
	convs := h.do(request{method: "GET", path: "/v1/agents/" + id + "/conversations?roomId=a2a:" + ctx, key: h.readKey}).Data(t)["items"].([]any)
	if len(convs) != 1 || dig(convs, "0.messageCount") != 2.0 {
		t.Errorf("the made context's conversation: %v", convs)
	}
	if got := h.runsOf(id); got != "a2a completed,a2a completed,a2a completed" {
		t.Errorf("runs of the sends that waited: %s", got)
	}
}

// TestA2AHistoryAndAnalyticsAsSendMessage: a message over A2A is stored and
// counted as Send Message with a roomId stores and counts it.
func TestA2AHistoryAndAnalyticsAsSendMessage(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Trader"})
	h.openai.Respond(llmtest.Reply{Text: "Calm.", PromptTokens: 10, CompletionTokens: 3})
	rpcResult(t, h.rpc(rpcCall{agentID: id, method: "SendMessage", params: a2aUserMessage("hi", "c1")}))
	if res := h.send(id, map[string]any{"text": "hi", "roomId": "r1"}); res.Code != 200 {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	convs := h.do(request{method: "GET", path: "/v1/agents/" + id + "/conversations", key: h.readKey}).Data(t)["items"].([]any)
	shape := func(c any) string {
		msgs := h.do(request{method: "GET", path: fmt.Sprintf("/v1/agents/%s/conversations/%s/messages", id, dig(c, "id")), key: h.readKey}).Data(t)["items"].([]any)
		var b strings.Builder
		for _, m := range msgs {
			fmt.Fprintf(&b, "%v:%v:%v:%v ", dig(m, "role"), dig(m, "text"), dig(m, "metadata.tokensUsed"), dig(m, "metadata.model"))
		}
		return fmt.Sprintf("%v %v %v %s", dig(c, "kind"), dig(c, "platform"), dig(c, "messageCount"), b.String())
	}
	if len(convs) != 2 || shape(convs[0]) != shape(convs[1]) || dig(convs, "1.roomId") != "a2a:c1" {
		t.Errorf("conversations differ: %v\n%s\n%s", convs, shape(convs[0]), shape(convs[1]))
	}
	totals := h.do(request{method: "GET", path: "/v1/agents/" + id + "/analytics", key: h.readKey}).Data(t)["totals"]
	if dig(totals, "messages") != 4.0 || dig(totals, "conversations") != 2.0 || dig(totals, "tokensUsed") != 26.0 {
		t.Errorf("analytics totals: %v", totals)
	}
	metrics := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}).Data(t)["metrics"]
	if dig(metrics, "totalMessages") != 2.0 || dig(metrics, "totalConversations") != 2.0 {
		t.Errorf("metrics: %v", metrics)
	}
}

// streamResults returns the results of a JSON-RPC event stream.
func streamResults(t testing.TB, res response) []map[string]any {
	t.Helper()
	if res.Code != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("not a stream: %d %v %s", res.Code, res.Header, res.Body)
	}
	var out []map[string]any
	for _, ev := range parseSSE(t, res.Body) {
		if ev["jsonrpc"] != "2.0" || ev["id"] != 7.0 || ev["error"] != nil {
			t.Fatalf("event %v", ev)
		}
		out = append(out, ev["result"].(map[string]any))
	}
	return out
}

func TestA2ASendStreamingMessage(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Trader"})
	h.openai.Respond(llmtest.Reply{Fragments: []string{"Calm ", "today", "."}})
	events := streamResults(t, h.rpc(rpcCall{agentID: id, method: "SendStreamingMessage", params: a2aUserMessage("market?", "s1")}))
	if len(events) != 5 {
		t.Fatalf("%d events: %v", len(events), events)
	}
	taskID := dig(events[0], "task.id")
	if dig(events[0], "task.status.state") != "TASK_STATE_WORKING" || dig(events[0], "task.contextId") != "s1" || dig(events[0], "task.history.0.parts.0.text") != "market?" {
		t.Errorf("first event %v", events[0])
	}
	var text strings.Builder
	for i, ev := range events[1:4] {
		u := ev["artifactUpdate"]
		text.WriteString(fmt.Sprint(dig(u, "artifact.parts.0.text")))
		if dig(u, "taskId") != taskID || dig(u, "append") != (i > 0) || dig(u, "lastChunk") != (i == 2) || dig(u, "artifact.artifactId") != "reply" {
			t.Errorf("event %d: %v", i+1, ev)
		}
	}
	if text.String() != "Calm today." || dig(events[4], "statusUpdate.status.state") != "TASK_STATE_COMPLETED" || dig(events[4], "statusUpdate.taskId") != taskID {
		t.Errorf("text %q, last event %v", text.String(), events[4])
	}
	got := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "GetTask", params: map[string]any{"id": taskID}}))
	if dig(got, "status.state") != "TASK_STATE_COMPLETED" || dig(got, "artifacts.0.parts.0.text") != "Calm today." {
		t.Errorf("GetTask after the stream: %v", got)
	}
}

// TestA2ALegacyMethods: the 0.3 methods answer in 0.3's shapes.
func TestA2ALegacyMethods(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Trader"})
	h.openai.Respond(llmtest.Reply{Fragments: []string{"Calm ", "today."}})
	msg := map[string]any{"message": map[string]any{"kind": "message", "messageId": "m1", "role": "user", "contextId": "old",
		"parts": []any{map[string]any{"kind": "text", "text": "market?"}}}}

	task := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "message/send", params: msg, version: "-"}))
	for p, want := range map[string]any{
		"kind": "task", "contextId": "old", "status.state": "completed", "artifacts.0.parts.0.kind": "text",
		"artifacts.0.parts.0.text": "Calm today.", "history.0.kind": "message", "history.0.role": "user", "history.1.role": "agent",
	} {
		if got := dig(task, p); got != want {
			t.Errorf("message/send %s = %v, want %v", p, got, want)
		}
	}
	got := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "tasks/get", params: map[string]any{"id": task["id"]}, version: "0.3"}))
	if got["kind"] != "task" || dig(got, "status.state") != "completed" {
		t.Errorf("tasks/get: %v", got)
	}

	events := streamResults(t, h.rpc(rpcCall{agentID: id, method: "message/stream", params: msg, version: "-"}))
	kinds := make([]string, len(events))
	for i, ev := range events {
		kinds[i] = fmt.Sprint(ev["kind"])
	}
	last := events[len(events)-1]
	if fmt.Sprint(kinds) != "[task artifact-update artifact-update status-update]" || last["final"] != true || dig(last, "status.state") != "completed" {
		t.Errorf("message/stream: %v", events)
	}

	e := rpcErr(t, h.rpc(rpcCall{agentID: id, method: "tasks/get", params: map[string]any{"id": "task_missing"}, version: "-"}))
	if e["code"] != -32001.0 || dig(e, "data.reason") != "TASK_NOT_FOUND" {
		t.Errorf("tasks/get of an unknown task: %v", e)
	}
}

func TestA2AErrors(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Trader"})
	done := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "SendMessage", params: a2aUserMessage("hi", "c")}))["task"]
	doneID := dig(done, "id")
	with := func(edit func(m map[string]any)) map[string]any {
		p := a2aUserMessage("hi", "c")
		edit(p["message"].(map[string]any))
		return p
	}
	h.newAccount("globex", domain.TierEnterprise)
	other := h.newKey("globex", domain.ScopeWrite)
	inactive := h.createAgent(map[string]any{"name": "Sleepy"})
	h.do(request{method: "PATCH", path: "/v1/agents/" + inactive, key: h.writeKey, body: map[string]any{"status": "inactive"}})

	for name, tc := range map[string]struct {
		call   rpcCall
		code   float64
		reason string
	}{
		"not JSON":               {rpcCall{body: `{"jsonrpc": `}, -32700, ""},
		"a batch":                {rpcCall{body: `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`}, -32600, ""},
		"no id":                  {rpcCall{body: `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`}, -32600, ""},
		"not 2.0":                {rpcCall{body: `{"jsonrpc":"1.0","id":7,"method":"GetTask"}`}, -32600, ""},
		"unknown method":         {rpcCall{method: "Nope"}, -32601, ""},
		"ListTasks":              {rpcCall{method: "ListTasks", params: map[string]any{}}, -32004, ""},
		"push config":            {rpcCall{method: "CreateTaskPushNotificationConfig", params: map[string]any{}}, -32003, ""},
		"version 2.0":            {rpcCall{method: "GetTask", params: map[string]any{"id": doneID}, version: "2.0"}, -32009, "VERSION_NOT_SUPPORTED"},
		"no message":             {rpcCall{method: "SendMessage", params: map[string]any{}}, -32602, ""},
		"params not an object":   {rpcCall{method: "SendMessage", params: []int{1}}, -32602, ""},
		"agent's role":           {rpcCall{method: "SendMessage", params: with(func(m map[string]any) { m["role"] = "ROLE_AGENT" })}, -32602, ""},
		"no parts":               {rpcCall{method: "SendMessage", params: with(func(m map[string]any) { m["parts"] = []any{} })}, -32602, ""},
		"a file only":            {rpcCall{method: "SendMessage", params: with(func(m map[string]any) { m["parts"] = []any{map[string]any{"url": "https://x.example/a.png"}} })}, -32005, ""},
		"blank text":             {rpcCall{method: "SendMessage", params: a2aUserMessage("   ", "c")}, -32602, "INVALID_MESSAGE"},
		"U+0000":                 {rpcCall{method: "SendMessage", params: a2aUserMessage("a\x00b", "c")}, -32602, ""},
		"too long":               {rpcCall{method: "SendMessage", params: a2aUserMessage(strings.Repeat("x", 16001), "c")}, -32602, ""},
		"long context":           {rpcCall{method: "SendMessage", params: a2aUserMessage("hi", strings.Repeat("c", 129))}, -32602, ""},
		"unknown taskId":         {rpcCall{method: "SendMessage", params: with(func(m map[string]any) { m["taskId"] = "task_missing" })}, -32001, "TASK_NOT_FOUND"},
		"ended taskId":           {rpcCall{method: "SendMessage", params: with(func(m map[string]any) { m["taskId"] = doneID })}, -32004, ""},
		"push on send":           {rpcCall{method: "SendMessage", params: map[string]any{"message": a2aUserMessage("hi", "c")["message"], "configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"url": "https://x.example"}}}}, -32003, ""},
		"image only":             {rpcCall{method: "SendMessage", params: map[string]any{"message": a2aUserMessage("hi", "c")["message"], "configuration": map[string]any{"acceptedOutputModes": []string{"image/png"}}}}, -32005, ""},
		"unknown task":           {rpcCall{method: "GetTask", params: map[string]any{"id": "task_missing"}}, -32001, "TASK_NOT_FOUND"},
		"GetTask without id":     {rpcCall{method: "GetTask", params: map[string]any{}}, -32602, ""},
		"cancel":                 {rpcCall{method: "CancelTask", params: map[string]any{"id": doneID}}, -32002, ""},
		"another account's send": {rpcCall{key: other, method: "SendMessage", params: a2aUserMessage("hi", "c")}, -32000, "AGENT_NOT_FOUND"},
		"another account's task": {rpcCall{key: other, method: "GetTask", params: map[string]any{"id": doneID}}, -32000, "AGENT_NOT_FOUND"},
		"inactive":               {rpcCall{agentID: inactive, method: "SendMessage", params: a2aUserMessage("hi", "c")}, -32000, "AGENT_UNAVAILABLE"},
		"inactive, streamed":     {rpcCall{agentID: inactive, method: "SendStreamingMessage", params: a2aUserMessage("hi", "c")}, -32000, "AGENT_UNAVAILABLE"},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.call.agentID == "" {
				tc.call.agentID = id
			}
			res := h.with(t).rpc(tc.call)
			e := rpcErr(t, res)
			if e["code"] != tc.code || tc.reason != "" && dig(e, "data.0.reason") != tc.reason {
				t.Errorf("error %v, want %v %s", e, tc.code, tc.reason)
			}
			if strings.Contains(string(res.Body), "Calm") || strings.Contains(string(res.Body), `"hi"`) {
				t.Errorf("the error shows data: %s", res.Body)
			}
		})
	}
	// Before JSON-RPC: the key, its scope, the media type; the envelope.
	for name, tc := range map[string]struct {
		res  response
		code int
	}{
		"no key":   {h.do(request{method: "POST", path: "/v1/agents/" + id + "/a2a", body: `{}`}), 401},
		"read key": {h.rpc(rpcCall{agentID: id, key: h.readKey, method: "GetTask", params: map[string]any{"id": doneID}}), 403},
		"text":     {h.do(request{method: "POST", path: "/v1/agents/" + id + "/a2a", key: h.writeKey, body: `{}`, contentType: "text/plain"}), 415},
	} {
		if tc.res.Code != tc.code || tc.res.JSON(t)["success"] != false {
			t.Errorf("%s: %d %s", name, tc.res.Code, tc.res.Body)
		}
	}
}

// TestA2AProviderFailureFailsTheTask: a turn that fails makes a failed
// task (not a JSON-RPC error), with the code and the reason as its status
// message.
func TestA2AProviderFailureFailsTheTask(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Trader"})
	h.openai.Enqueue(llmtest.Reply{Status: 404, ErrorType: "invalid_request_error", ErrorMessage: "The model `gpt-9` does not exist"})
	task := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "SendMessage", params: a2aUserMessage("hi", "f")}))["task"]
	if dig(task, "status.state") != "TASK_STATE_FAILED" || dig(task, "status.message.role") != "ROLE_AGENT" ||
		!strings.HasPrefix(fmt.Sprint(dig(task, "status.message.parts.0.text")), "MODEL_ERROR: The model provider does not serve the model") || dig(task, "artifacts") != nil {
		t.Errorf("failed task %v", task)
	}
	got := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "GetTask", params: map[string]any{"id": dig(task, "id")}}))
	if dig(got, "status.state") != "TASK_STATE_FAILED" || len(got["history"].([]any)) != 1 {
		t.Errorf("GetTask of a failed task %v", got)
	}

	h.openai.Enqueue(llmtest.Reply{Fragments: []string{"a ", "b ", "c ", "d"}, FailMidStream: true, FailAfter: 2})
	events := streamResults(t, h.rpc(rpcCall{agentID: id, method: "SendStreamingMessage", params: a2aUserMessage("hi", "f")}))
	last := events[len(events)-1]
	if dig(last, "statusUpdate.status.state") != "TASK_STATE_FAILED" || dig(last, "statusUpdate.status.message.parts.0.text") == nil {
		t.Errorf("a stream that fails ends with %v", last)
	}
}

// TestA2AConcurrencyCap: the agent's cap of 10 turns in flight covers A2A
// calls (each in its own context: one conversation's runs go one at a
// time); the ones past it are JSON-RPC errors naming the limit, and every
// slot comes back.
func TestA2AConcurrencyCap(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Text: "slow", Delay: 500 * time.Millisecond})
	id := h.createAgent(map[string]any{"name": "busy"})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	burst := func(n int) map[string]int {
		var mu sync.Mutex
		outcomes := map[string]int{}
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				method := []string{"SendMessage", "SendStreamingMessage"}[i%2]
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": method, "params": a2aUserMessage("hi", fmt.Sprint("busy-", i))})
				req, _ := http.NewRequest("POST", ts.URL+"/v1/agents/"+id+"/a2a", strings.NewReader(string(body)))
				req.Header.Set("Authorization", "Bearer "+h.writeKey)
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer res.Body.Close()
				raw, _ := io.ReadAll(res.Body)
				outcome := "other: " + string(raw)
				switch {
				case strings.Contains(string(raw), "TASK_STATE_COMPLETED"):
					outcome = "completed"
				case strings.Contains(string(raw), `"code":-32000`) && strings.Contains(string(raw), `"reason":"RATE_LIMIT_EXCEEDED"`) &&
					strings.Contains(string(raw), `"limit":"concurrency"`):
					outcome = "busy"
				}
				mu.Lock()
				outcomes[outcome]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		return outcomes
	}
	if got := burst(12); got["completed"] != 10 || got["busy"] != 2 {
		t.Fatalf("outcomes %v, want 10 completed and 2 busy", got)
	}
	if got := burst(10); got["completed"] != 10 {
		t.Fatalf("slots leaked: %v", got)
	}
}

// TestA2AStreamClientGoneFailsTheTask: a stream whose client goes away
// ends its task as failed, saying why, and gives its concurrency slot back.
func TestA2AStreamClientGoneFailsTheTask(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Fragments: []string{"first ", "second ", "third ", "fourth"}, FragmentDelay: 150 * time.Millisecond})
	id := h.createAgent(map[string]any{"name": "slow"})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": a2aUserMessage("go", "gone")})
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/agents/"+id+"/a2a", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+h.writeKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	reader := bufio.NewReader(res.Body)
	line, err := reader.ReadString('\n')
	if err != nil || !strings.Contains(line, "TASK_STATE_WORKING") {
		t.Fatalf("first event %q: %v", line, err)
	}
	var first map[string]any
	_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &first)
	taskID := dig(first, "result.task.id")
	cancel()
	res.Body.Close()

	testutil.Eventually(t, "the task failed", func() error {
		got := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "GetTask", params: map[string]any{"id": taskID}}))
		return testutil.Equal("state", dig(got, "status.state"), any("TASK_STATE_FAILED"))
	})
	got := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "GetTask", params: map[string]any{"id": taskID}}))
	if !strings.Contains(fmt.Sprint(dig(got, "status.message.parts.0.text")), "went away") {
		t.Errorf("failed task %v", got)
	}
	testutil.Eventually(t, "the stream's slot freed", slotsFree(t, h.cfg.Turn.Semaphore, "agent:"+id))
}

// TestA2ABadIdsAreRefused: task and message ids that are not printable
// text, or longer than any id agentd makes or keeps, never reach the
// store, where PostgreSQL failed on a NUL as an internal error while SQLite
// found no task: an unknown task is not found, a bad message id is invalid
// params, the same on both databases.
func TestA2ABadIdsAreRefused(t *testing.T) {
	for name, h := range map[string]*harness{"sqlite": newHarness(t), "postgres": newHarnessPostgres(t)} {
		t.Run(name, func(t *testing.T) {
			id := h.createAgent(map[string]any{"name": "Trader"})
			with := func(member, value string) map[string]any {
				p := a2aUserMessage("hi", "c")
				p["message"].(map[string]any)[member] = value
				return p
			}
			long := strings.Repeat("t", 257)
			for name, tc := range map[string]struct {
				call rpcCall
				code float64
			}{
				"GetTask NUL":          {rpcCall{method: "GetTask", params: map[string]any{"id": "task_\x00"}}, -32001},
				"GetTask control":      {rpcCall{method: "GetTask", params: map[string]any{"id": "task_\x1b"}}, -32001},
				"GetTask long":         {rpcCall{method: "GetTask", params: map[string]any{"id": long}}, -32001},
				"tasks/get NUL":        {rpcCall{method: "tasks/get", params: map[string]any{"id": "task_\x00"}, version: "0.3"}, -32001},
				"CancelTask NUL":       {rpcCall{method: "CancelTask", params: map[string]any{"id": "task_\x00"}}, -32001},
				"SendMessage taskId":   {rpcCall{method: "SendMessage", params: with("taskId", "task_\x00")}, -32001},
				"SendMessage long":     {rpcCall{method: "SendMessage", params: with("taskId", long)}, -32001},
				"SendMessage msgId":    {rpcCall{method: "SendMessage", params: with("messageId", "m\x00")}, -32602},
				"SendMessage long msg": {rpcCall{method: "SendMessage", params: with("messageId", long)}, -32602},
				"stream msgId":         {rpcCall{method: "SendStreamingMessage", params: with("messageId", "m\x00")}, -32602},
			} {
				t.Run(name, func(t *testing.T) {
					tc.call.agentID = id
					if e := rpcErr(t, h.with(t).rpc(tc.call)); e["code"] != tc.code {
						t.Errorf("error %v, want %v", e, tc.code)
					}
				})
			}
		})
	}
}

// TestA2ATaskOfADeadReplicaFails: a task whose replica died while it was
// working (it stopped renewing the task) is failed with a reason when read,
// instead of staying working for its whole retention; a task whose turn
// runs longer than the lease, on a live replica, stays working until it
// completes (security review N5).
func TestA2ATaskOfADeadReplicaFails(t *testing.T) {
	const lease = 300 * time.Millisecond
	h := newHarness(t, func(c *harnessConfig) { c.ReplicaLostAfter = lease })
	id := h.createAgent(map[string]any{"name": "Trader"})
	orphan, err := h.store.Tasks().CreateA2ATask(context.Background(), h.account.ID, domain.A2ATask{AgentID: id, ContextID: "crash-ctx",
		RequestMessageID: "m-1", RequestText: "hi"})
	testutil.OK(t, err)
	getTask := func(taskID string) map[string]any {
		return rpcResult(t, h.rpc(rpcCall{agentID: id, method: "GetTask", params: map[string]any{"id": taskID}}))
	}
	if got := getTask(orphan.ID); dig(got, "status.state") != "TASK_STATE_WORKING" {
		t.Fatalf("a task just made: %v", got)
	}
	time.Sleep(2 * lease)
	got := getTask(orphan.ID)
	if dig(got, "status.state") != "TASK_STATE_FAILED" || !strings.Contains(fmt.Sprint(dig(got, "status.message.parts.0.text")), "stopped") {
		t.Fatalf("the task of a dead replica: %v", got)
	}

	h.openai.Respond(slowReply) // 0.8 s, past the lease
	live := httptest.NewServer(h.srv.Handler())
	defer live.Close()
	body := map[string]any{"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": a2aUserMessage("count", "live-ctx")}
	c := openSSE(t, "POST", live.URL+"/v1/agents/"+id+"/a2a", h.writeKey, body, map[string]string{"A2A-Version": "1.0"})
	frame, err := c.frame()
	testutil.OK(t, err)
	var started map[string]any
	testutil.OK(t, json.Unmarshal([]byte(strings.TrimPrefix(frame, "data: ")), &started))
	working := fmt.Sprint(dig(started, "result.task.id"))
	time.Sleep(2 * lease)
	if got := getTask(working); dig(got, "status.state") != "TASK_STATE_WORKING" {
		t.Errorf("a live replica's task past its first lease: %v", got)
	}
	for {
		if _, err := c.frame(); err != nil {
			break
		}
	}
	if got := getTask(working); dig(got, "status.state") != "TASK_STATE_COMPLETED" {
		t.Errorf("the live task ended %v", got)
	}
}

// TestA2ASendWithoutWaiting: returnImmediately (1.0) and blocking: false
// (0.3) answer the task at once, working, and GetTask follows it to
// completed; its run is listed with source a2a.
func TestA2ASendWithoutWaiting(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Deferred"})
	h.openai.Respond(llmtest.Reply{Text: "Later.", Delay: 300 * time.Millisecond})
	legacy := map[string]any{"message": map[string]any{"messageId": "m-legacy", "role": "user", "contextId": "wait-2",
		"parts": []any{map[string]any{"kind": "text", "text": "now?"}}}, "configuration": map[string]any{"blocking": false}}
	modern := a2aUserMessage("now?", "wait-1")
	modern["configuration"] = map[string]any{"returnImmediately": true}
	for _, c := range []struct {
		send, get, version, state, done string
		params                          map[string]any
	}{
		{"SendMessage", "GetTask", "", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED", modern},
		{"message/send", "tasks/get", "-", "working", "completed", legacy},
	} {
		task := rpcResult(t, h.rpc(rpcCall{agentID: id, method: c.send, params: c.params, version: c.version}))
		if inner, ok := task["task"].(map[string]any); ok {
			task = inner
		}
		if dig(task, "status.state") != c.state { // a send that waited would answer it completed
			t.Fatalf("%s answered %v", c.send, task)
		}
		deadline := time.Now().Add(5 * time.Second)
		for dig(rpcResult(t, h.rpc(rpcCall{agentID: id, method: c.get, params: map[string]any{"id": dig(task, "id")}, version: c.version})),
			"status.state") != c.done {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the task never completed", c.get)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if runs := h.items(h.get("/v1/agents/" + id + "/runs?source=a2a&status=completed")); len(runs) != 2 {
		t.Errorf("a2a runs: %v", runs)
	}
}
