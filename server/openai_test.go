package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm/llmtest"
)

// chat POSTs a Chat Completions body with the write key.
func (h *harness) chat(body any) response {
	h.t.Helper()
	return h.do(request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: body})
}

// openAIError returns error.type, error.code and error.param (nil when
// null) of an OpenAI error body; it fails on an envelope.
func openAIError(t *testing.T, res response) (typ, code string, param any) {
	t.Helper()
	m := res.JSON(t)
	if _, ok := m["success"]; ok {
		t.Fatalf("an envelope on an OpenAI path: %s", res.Body)
	}
	e, _ := m["error"].(map[string]any)
	typ, _ = e["type"].(string)
	code, _ = e["code"].(string)
	if msg, _ := e["message"].(string); msg == "" {
		t.Errorf("no message: %s", res.Body)
	}
	return typ, code, e["param"]
}

// chatEvents parses a Chat Completions stream: its JSON events, each
// checked against ChatCompletionStreamEvent, and whether `data: [DONE]`
// ended it.
func (h *harness) chatEvents(t *testing.T, res response) (events []map[string]any, done bool) {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q: %s", ct, res.Body)
	}
	schema := h.spec.Components.Schemas["ChatCompletionStreamEvent"].Value
	sc := bufio.NewScanner(bytes.NewReader(res.Body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
			continue
		case done:
			t.Fatalf("an event after [DONE]: %s", data)
		case data == "[DONE]":
			done = true
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("event is not JSON: %s", data)
		}
		if err := schema.VisitJSON(v); err != nil {
			t.Errorf("event does not match ChatCompletionStreamEvent: %v\n%s", err, data)
		}
		events = append(events, v.(map[string]any))
	}
	return events, done
}

// userMessage is a Chat Completions messages list ending with text from the user.
func userMessage(text string, earlier ...map[string]any) []any {
	out := make([]any, 0, len(earlier)+1)
	for _, m := range earlier {
		out = append(out, m)
	}
	return append(out, map[string]any{"role": "user", "content": text})
}

func TestChatCompletion(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada", "bio": "A calm trader."})
	body := map[string]any{"model": id, "temperature": 1.5, "tools": []any{}, "n": 1, "messages": []any{
		map[string]any{"role": "system", "content": "IGNORED SYSTEM"},
		map[string]any{"role": "user", "content": "earlier question"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{}},
		map[string]any{"role": "assistant", "content": "earlier answer"},
		map[string]any{"role": "tool", "content": "IGNORED TOOL", "tool_call_id": "c1"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "new"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://x"}},
			map[string]any{"type": "text", "text": "question"}}},
		map[string]any{"role": "assistant", "content": "IGNORED AFTER"},
	}}
	res := h.chat(body)
	if res.Code != 200 {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	got := res.JSON(t)
	if got["object"] != "chat.completion" || got["model"] != id || got["id"] != "chatcmpl-"+res.Header.Get("X-Request-ID") {
		t.Errorf("completion %s", res.Body)
	}
	choice := got["choices"].([]any)[0].(map[string]any)
	if msg := choice["message"].(map[string]any); msg["role"] != "assistant" || msg["content"] != "Hello from the test server." || choice["finish_reason"] != "stop" {
		t.Errorf("choice %v", choice)
	}
	if u := got["usage"].(map[string]any); u["prompt_tokens"] != 12.0 || u["completion_tokens"] != 6.0 || u["total_tokens"] != 18.0 {
		t.Errorf("usage %v", u)
	}
	reqs := h.openai.Requests()
	system, msgs := reqs[len(reqs)-1].Conversation()
	want := []llmtest.Message{{Role: "user", Content: "earlier question"}, {Role: "assistant", Content: "earlier answer"},
		{Role: "user", Content: "new\nquestion"}}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("sent to the model %+v, want %+v", msgs, want)
	}
	if !strings.Contains(system, "A calm trader.") || strings.Contains(system, "IGNORED") {
		t.Errorf("system prompt %q: the agent's own, not the request's", system)
	}
	if last := reqs[len(reqs)-1]; last.Body["temperature"] == 1.5 || last.Has("n") {
		t.Errorf("sampling fields of the request reached the model: %s", last.Raw)
	}
	// Without `user` the exchange is in no conversation.
	if items := h.items(h.get("/v1/agents/" + id + "/conversations")); len(items) != 0 {
		t.Errorf("conversations %v, want none", items)
	}
}

// TestChatCompletionWithUser: `user` (or safety_identifier) is the userId:
// the user's stored conversation, shared with Send Message, is the context
// and the request's earlier messages are ignored.
func TestChatCompletionWithUser(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	if res := h.send(id, map[string]any{"text": "stored question", "userId": "u1"}); res.Code != 200 {
		t.Fatal(res.Code, string(res.Body))
	}
	for i, who := range []string{"user", "safety_identifier"} {
		res := h.chat(map[string]any{"model": id, who: "u1",
			"messages": userMessage("next "+who, map[string]any{"role": "user", "content": "IGNORED EARLIER"})})
		if res.Code != 200 {
			t.Fatalf("%s: %d %s", who, res.Code, res.Body)
		}
		reqs := h.openai.Requests()
		_, msgs := reqs[len(reqs)-1].Conversation()
		if len(msgs) != 3+2*i || msgs[0].Content != "stored question" || msgs[len(msgs)-1].Content != "next "+who {
			t.Errorf("%s: sent to the model %+v", who, msgs)
		}
	}
	convs := h.items(h.get("/v1/agents/" + id + "/conversations?userId=u1"))
	if len(convs) != 1 || convs[0]["messageCount"] != 6.0 {
		t.Fatalf("conversations of u1: %v", convs)
	}
}

// TestChatCompletionTurnIsSendMessages: the same exchange through Send
// Message and through Chat Completions leaves the same history and the
// same analytics.
func TestChatCompletionTurnIsSendMessages(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Text: "Fine, thanks.", PromptTokens: 20, CompletionTokens: 4})
	viaSend, viaChat := h.createAgent(map[string]any{"name": "Ada"}), h.createAgent(map[string]any{"name": "Ada"})
	if res := h.send(viaSend, map[string]any{"text": "How are you?", "userId": "u1"}); res.Code != 200 {
		t.Fatal(res.Code, string(res.Body))
	}
	if res := h.chat(map[string]any{"model": viaChat, "user": "u1", "messages": userMessage("How are you?")}); res.Code != 200 {
		t.Fatal(res.Code, string(res.Body))
	}
	history := func(agentID string) []map[string]any {
		conv := h.items(h.get("/v1/agents/" + agentID + "/conversations?userId=u1"))[0]["id"].(string)
		items := h.items(h.get("/v1/agents/" + agentID + "/conversations/" + conv + "/messages"))
		for _, it := range items {
			delete(it, "messageId")
			delete(it, "timestamp")
			if m, ok := it["metadata"].(map[string]any); ok {
				delete(m, "responseTime")
			}
		}
		return items
	}
	if a, b := history(viaSend), history(viaChat); len(a) != 2 || !reflect.DeepEqual(a, b) {
		t.Errorf("history through Send Message %v\nthrough Chat Completions %v", a, b)
	}
	totals := func(agentID string) map[string]any {
		tot := h.get("/v1/agents/" + agentID + "/analytics").Data(t)["totals"].(map[string]any)
		delete(tot, "responseTime")
		return tot
	}
	if a, b := totals(viaSend), totals(viaChat); a["tokensUsed"] != 24.0 || !reflect.DeepEqual(a, b) {
		t.Errorf("analytics through Send Message %v\nthrough Chat Completions %v", a, b)
	}
}

func TestChatCompletionStream(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Fragments: []string{"Calm ", "markets ", "today."}, PromptTokens: 9, CompletionTokens: 3})
	id := h.createAgent(map[string]any{"name": "Ada"})
	for _, usage := range []bool{false, true} {
		body := map[string]any{"model": id, "stream": true, "messages": userMessage("market?")}
		if usage {
			body["stream_options"] = map[string]any{"include_usage": true}
		}
		res := h.chat(body)
		if res.Code != 200 {
			t.Fatalf("%d %s", res.Code, res.Body)
		}
		events, done := h.chatEvents(t, res)
		if !done {
			t.Fatalf("no [DONE]: %s", res.Body)
		}
		var text strings.Builder
		var finishes []any
		for i, ev := range events {
			if ev["object"] != "chat.completion.chunk" || ev["model"] != id || ev["id"] != "chatcmpl-"+res.Header.Get("X-Request-ID") {
				t.Errorf("chunk %v", ev)
			}
			if _, ok := ev["usage"]; ok != (usage && i == len(events)-1) {
				t.Errorf("usage in chunk %d of %d (include_usage %v): %v", i, len(events), usage, ev)
			}
			choices := ev["choices"].([]any)
			if len(choices) == 0 {
				continue
			}
			c := choices[0].(map[string]any)
			delta := c["delta"].(map[string]any)
			if (i == 0) != (delta["role"] == "assistant") {
				t.Errorf("role in chunk %d: %v", i, ev)
			}
			content, _ := delta["content"].(string)
			text.WriteString(content)
			finishes = append(finishes, c["finish_reason"])
		}
		if text.String() != "Calm markets today." {
			t.Errorf("streamed text %q", text.String())
		}
		if n := len(finishes); n < 3 || finishes[n-1] != "stop" || finishes[n-2] != nil {
			t.Errorf("finish reasons %v, want null then stop last", finishes)
		}
		if usage {
			u := events[len(events)-1]
			if len(u["choices"].([]any)) != 0 || !reflect.DeepEqual(u["usage"], map[string]any{"prompt_tokens": 9.0, "completion_tokens": 3.0, "total_tokens": 12.0}) {
				t.Errorf("usage chunk %v", u)
			}
		}
	}
}

// TestChatCompletionStreamFails: a provider failure once the stream has
// started is one OpenAI error event and no [DONE].
func TestChatCompletionStreamFails(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Fragments: []string{"a ", "b ", "c"}, FailMidStream: true, FailAfter: 1})
	id := h.createAgent(map[string]any{"name": "Ada"})
	res := h.chat(map[string]any{"model": id, "stream": true, "messages": userMessage("hi")})
	events, done := h.chatEvents(t, res)
	if done || len(events) == 0 {
		t.Fatalf("done %v: %s", done, res.Body)
	}
	e, ok := events[len(events)-1]["error"].(map[string]any)
	if !ok || e["type"] != "server_error" || e["code"] != "agent_unavailable" {
		t.Errorf("last event %v, want an agent_unavailable error", events[len(events)-1])
	}
}

func TestChatCompletionErrors(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	h.newAccount("other", domain.TierEnterprise)
	otherKey := h.newKey("other", domain.ScopeWrite)
	res := h.do(request{method: "POST", path: "/v1/agents", key: otherKey, body: map[string]any{"name": "Theirs"}})
	if res.Code != 201 {
		t.Fatal(res.Code, string(res.Body))
	}
	theirs := res.Data(t)["id"].(string)
	inactive := h.createAgent(map[string]any{"name": "Off"})
	if res := h.do(request{method: "PATCH", path: "/v1/agents/" + inactive, key: h.writeKey, body: map[string]any{"status": "inactive"}}); res.Code != 200 {
		t.Fatal(res.Code, string(res.Body))
	}
	chat := func(model string, messages ...any) map[string]any {
		return map[string]any{"model": model, "messages": messages}
	}
	user := func(content any) map[string]any { return map[string]any{"role": "user", "content": content} }
	for _, c := range []struct {
		name       string
		req        request
		status     int
		typ, code  string
		param      any
		notInError string
	}{
		{"no key", request{method: "POST", path: "/v1/chat/completions", body: chat(id, user("hi"))}, 401, "authentication_error", "invalid_api_key", nil, ""},
		{"bad key", request{method: "GET", path: "/v1/models", key: "agk_nope"}, 401, "authentication_error", "invalid_api_key", nil, ""},
		{"another account's agent", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat(theirs, user("hi"))}, 404, "invalid_request_error", "model_not_found", "model", "Theirs"},
		{"unknown agent", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat("gpt-4o", user("hi"))}, 404, "invalid_request_error", "model_not_found", "model", ""},
		{"control character", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat("agent_\u0001", user("hi"))}, 404, "invalid_request_error", "model_not_found", "model", ""},
		{"no user message", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat(id, map[string]any{"role": "system", "content": "x"})}, 400, "invalid_request_error", "invalid_request", "messages", ""},
		{"blank text", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat(id, user("a"), user("  "))}, 400, "invalid_request_error", "invalid_request", "messages[1].content", ""},
		{"only an image", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat(id, user([]any{map[string]any{"type": "image_url"}}))}, 400, "invalid_request_error", "invalid_request", "messages[0].content", ""},
		{"too long", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat(id, user(strings.Repeat("é", maxChatText+1)))}, 400, "invalid_request_error", "invalid_request", "messages[0].content", ""},
		{"unknown role", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat(id, map[string]any{"role": "robot", "content": "x"})}, 400, "invalid_request_error", "invalid_request", "messages[0].role", ""},
		{"no messages", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: map[string]any{"model": id}}, 400, "invalid_request_error", "invalid_request", "messages", ""},
		{"bad user", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: map[string]any{"model": id, "user": "a\nb", "messages": []any{user("x")}}}, 400, "invalid_request_error", "invalid_request", "user", ""},
		{"read key", request{method: "POST", path: "/v1/chat/completions", key: h.readKey, body: chat(id, user("hi"))}, 403, "permission_error", "insufficient_permissions", nil, ""},
		{"inactive agent", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: chat(inactive, user("hi"))}, 503, "server_error", "agent_unavailable", nil, ""},
		{"wrong method", request{method: "POST", path: "/v1/models", key: h.writeKey, body: map[string]any{}}, 405, "invalid_request_error", "method_not_allowed", nil, ""},
		{"wrong media type", request{method: "POST", path: "/v1/chat/completions", key: h.writeKey, body: "{}", contentType: "text/plain"}, 415, "invalid_request_error", "unsupported_media_type", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := h.with(t).do(c.req)
			if res.Code != c.status {
				t.Fatalf("%d %s, want %d", res.Code, res.Body, c.status)
			}
			typ, code, param := openAIError(t, res)
			if typ != c.typ || code != c.code || param != c.param {
				t.Errorf("type %s code %s param %v, want %s %s %v: %s", typ, code, param, c.typ, c.code, c.param, res.Body)
			}
			if c.notInError != "" && strings.Contains(string(res.Body), c.notInError) {
				t.Errorf("the error shows %q: %s", c.notInError, res.Body)
			}
		})
	}
	// The models list shows the account's agents only.
	res = h.get("/v1/models")
	var list struct {
		Object string
		Data   []map[string]any
	}
	if err := json.Unmarshal(res.Body, &list); err != nil || res.Code != 200 || list.Object != "list" {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m["id"].(string))
		if m["object"] != "model" || m["owned_by"] != "acme" || m["created"].(float64) < float64(time.Now().Add(-time.Hour).Unix()) {
			t.Errorf("model %v", m)
		}
	}
	if !reflect.DeepEqual(ids, []string{id, inactive}) || strings.Contains(string(res.Body), theirs) {
		t.Errorf("models %v, want this account's %v oldest first", ids, []string{id, inactive})
	}
}

// TestModelsListsEveryAgent: the list is not one page of List Agents.
func TestModelsListsEveryAgent(t *testing.T) {
	h := newHarness(t)
	for i := range modelsPage + 3 {
		h.createAgent(map[string]any{"name": "a" + strconv.Itoa(i)})
	}
	var list struct{ Data []map[string]any }
	if err := json.Unmarshal(h.get("/v1/models").Body, &list); err != nil || len(list.Data) != modelsPage+3 {
		t.Fatalf("%d models (%v), want %d", len(list.Data), err, modelsPage+3)
	}
	if list.Data[0]["name"] != "a0" || list.Data[modelsPage+2]["name"] != "a"+strconv.Itoa(modelsPage+2) {
		t.Errorf("not oldest first: %v ... %v", list.Data[0], list.Data[modelsPage+2])
	}
}

// TestChatCompletionLimits: the agent's concurrency cap holds (429 in
// OpenAI's shape), and Chat Completions count against the agent's Send
// Message counter.
func TestChatCompletionLimits(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Fragments: []string{"slow ", "reply"}, Delay: 500 * time.Millisecond})
	id := h.createAgent(map[string]any{"name": "busy"})
	body, _ := json.Marshal(map[string]any{"model": id, "messages": userMessage("hi")})
	codes := concurrentBodies(t, h.srv.Handler(), h.writeKey, "/v1/chat/completions", string(body), 12,
		func(status int, body string) {
			if status == 429 && (!strings.Contains(body, `"code":"rate_limit_exceeded"`) || !strings.Contains(body, `"type":"rate_limit_error"`)) {
				t.Errorf("429 not in OpenAI's shape: %s", body)
			}
		})
	if codes[200] != 10 || codes[429] != 2 {
		t.Fatalf("statuses %v, want 10×200 and 2×429", codes)
	}
	h.openai.Respond(llmtest.Reply{Text: "ok"})
	remaining := func(res response) int64 {
		_, rem, _ := rateHeaders(t, res)
		return rem
	}
	before := remaining(h.send(id, map[string]any{"text": "hi"}))
	if after := remaining(h.chat(map[string]any{"model": id, "messages": userMessage("hi")})); after != before-1 {
		t.Errorf("remaining %d after Send Message, %d after Chat Completions: not one counter", before, after)
	}
}

// concurrentBodies POSTs body to path n times at once and counts the
// statuses; check sees each answer.
func concurrentBodies(t *testing.T, handler http.Handler, key, path, body string, n int, check func(status int, body string)) map[int]int {
	t.Helper()
	codes := map[int]int{}
	done := make(chan [2]any, n)
	srv := httptest.NewServer(handler)
	defer srv.Close()
	for range n {
		go func() {
			req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- [2]any{0, err.Error()}
				return
			}
			defer res.Body.Close()
			var b strings.Builder
			_, _ = bufio.NewReader(res.Body).WriteTo(&b)
			done <- [2]any{res.StatusCode, b.String()}
		}()
	}
	for range n {
		r := <-done
		codes[r[0].(int)]++
		check(r[0].(int), r[1].(string))
	}
	return codes
}

// TestChatCompletionNamesIgnoredMembers: the client's tools, tool choice
// and sampling members, which the agent's own settings override, are
// named in the agentd-ignored header in the order the request gives them,
// on a completion and on a stream; null members and members that change
// nothing the model does are not named, and with none there is no header.
func TestChatCompletionNamesIgnoredMembers(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	cases := []struct {
		name, members, want string
	}{
		{"tools first", `"tools":` + tools + `,"tool_choice":"auto","temperature":0.2,"user":"u1","top_p":0.5,"seed":3`, "tools, tool_choice, temperature, top_p, seed"},
		{"sampling first", `"max_tokens":50,"stream_options":null,"tool_choice":"none","tools":` + tools + `,"presence_penalty":null`, "max_tokens, tool_choice, tools"},
		{"stream", `"stream":true,"frequency_penalty":0.1,"n":1,"stop":["x"]`, "frequency_penalty, n, stop"},
		{"nothing ignored", `"user":"u2","metadata":{"a":"b"},"temperature":null`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"` + id + `",` + tc.members + `,"messages":[{"role":"user","content":"hi"}]}`
			res := h.chat(body)
			if res.Code != 200 {
				t.Fatalf("%d %s", res.Code, res.Body)
			}
			if got, ok := res.Header["Agentd-Ignored"]; (tc.want == "") != !ok || strings.Join(got, "|") != tc.want {
				t.Errorf("agentd-ignored %q (present %v), want %q", got, ok, tc.want)
			}
		})
	}
}
