package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm/llmtest"
)

// respond POSTs a Responses body with the write key.
func (h *harness) respond(body any) response {
	h.t.Helper()
	return h.do(request{method: "POST", path: "/v1/responses", key: h.writeKey, body: body})
}

// responseEvent is one event of a Responses stream.
type responseEvent struct {
	name string
	data map[string]any
}

// responseEvents parses a Responses stream: its `event:` names and JSON
// events, each checked against ResponseStreamEvent and its name against
// its type, and the sequence numbers strictly increasing by one.
func (h *harness) responseEvents(t *testing.T, res response) []responseEvent {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q: %s", ct, res.Body)
	}
	schema := h.spec.Components.Schemas["ResponseStreamEvent"].Value
	var out []responseEvent
	name := ""
	sc := bufio.NewScanner(bytes.NewReader(res.Body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("event is not JSON: %s", data)
		}
		if err := schema.VisitJSON(v); err != nil {
			t.Errorf("event does not match ResponseStreamEvent: %v\n%s", err, data)
		}
		m := v.(map[string]any)
		if m["type"] != name {
			t.Errorf("event %q carries type %v", name, m["type"])
		}
		if n := len(out); n > 0 && m["sequence_number"].(float64) != out[n-1].data["sequence_number"].(float64)+1 {
			t.Errorf("sequence_number %v after %v", m["sequence_number"], out[n-1].data["sequence_number"])
		}
		out = append(out, responseEvent{name: name, data: m})
	}
	return out
}

// eventNames lists the names of events.
func eventNames(events []responseEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.name
	}
	return out
}

// pollResponse reads response id until its status is final or 10 s pass.
func (h *harness) pollResponse(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := h.get("/v1/responses/" + id)
		if res.Code != 200 {
			t.Fatalf("get %s: %d %s", id, res.Code, res.Body)
		}
		got := res.JSON(t)
		switch got["status"] {
		case "completed", "failed", "cancelled", "incomplete":
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("response %s still %v", id, got["status"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outputText is the text of a response's first output message.
func responseText(t *testing.T, r map[string]any) string {
	t.Helper()
	out, _ := r["output"].([]any)
	if len(out) != 1 {
		t.Fatalf("output %v, want one message", r["output"])
	}
	content := out[0].(map[string]any)["content"].([]any)
	return content[0].(map[string]any)["text"].(string)
}

// TestResponse: a plain response is the agent's turn in OpenAI's shape;
// instructions join the system prompt, max_output_tokens and temperature
// reach the model, the ignored members are named; it is kept (read, its
// input items listed, newest first) until deleted.
func TestResponse(t *testing.T) {
	h := newHarness(t)
	// A model that takes a temperature (OpenAI's reasoning models refuse it).
	id := h.createAgent(map[string]any{"name": "Ada", "bio": "A calm trader.", "modelProvider": "openai", "model": "gpt-4.1-mini"})
	res := h.respond(map[string]any{"model": id, "instructions": "Answer in French.", "max_output_tokens": 77,
		"temperature": 0.25, "tools": []any{}, "tool_choice": "auto", "metadata": map[string]any{"k": "v"},
		"input": []any{
			map[string]any{"role": "developer", "content": "Be brief."},
			map[string]any{"role": "user", "content": "earlier question"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "earlier answer"}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "new"},
				map[string]any{"type": "input_text", "text": "question"}}},
		}})
	if res.Code != 200 {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	got := res.JSON(t)
	if got["object"] != "response" || got["model"] != id || got["status"] != "completed" || !strings.HasPrefix(got["id"].(string), "resp_") ||
		got["instructions"] != "Answer in French.\n\nBe brief." || got["metadata"].(map[string]any)["k"] != "v" || got["background"] != false {
		t.Errorf("response %s", res.Body)
	}
	if text := responseText(t, got); text != "Hello from the test server." {
		t.Errorf("output %q", text)
	}
	if u := got["usage"].(map[string]any); u["input_tokens"] != 12.0 || u["output_tokens"] != 6.0 || u["total_tokens"] != 18.0 {
		t.Errorf("usage %v, want the turn's tokens", u)
	}
	if ig := res.Header.Get("agentd-ignored"); ig != "tool_choice, tools" { // the body's order (encoding/json sorts)
		t.Errorf("agentd-ignored %q", ig)
	}
	reqs := h.openai.Requests()
	last := reqs[len(reqs)-1]
	system, msgs := last.Conversation()
	want := []llmtest.Message{{Role: "user", Content: "earlier question"}, {Role: "assistant", Content: "earlier answer"},
		{Role: "user", Content: "new\nquestion"}}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("sent to the model %+v, want %+v", msgs, want)
	}
	if !strings.Contains(system, "A calm trader.") || !strings.HasSuffix(system, "Answer in French.\n\nBe brief.") {
		t.Errorf("system prompt %q: the agent's, then the instructions", system)
	}
	if last.Body["temperature"] != 0.25 || last.Body["max_completion_tokens"] != 77.0 {
		t.Errorf("sampling sent %s", last.Raw)
	}
	respID := got["id"].(string)
	run := h.get("/v1/agents/" + id + "/runs/run_" + strings.TrimPrefix(respID, "resp_")).Data(t)
	if run["source"] != "openai" || run["status"] != "completed" {
		t.Errorf("the response's run %v", run)
	}
	if again := h.get("/v1/responses/" + respID); again.Code != 200 || responseText(t, again.JSON(t)) != "Hello from the test server." {
		t.Errorf("get: %d %s", again.Code, again.Body)
	}
	items := h.get("/v1/responses/" + respID + "/input_items?limit=3").JSON(t)
	data := items["data"].([]any)
	if len(data) != 3 || items["has_more"] != true || data[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "new\nquestion" {
		t.Errorf("input items %v, want the newest first", items)
	}
	rest := h.get("/v1/responses/" + respID + "/input_items?after=" + items["last_id"].(string)).JSON(t)
	if d := rest["data"].([]any); len(d) != 1 || d[0].(map[string]any)["role"] != "developer" || rest["has_more"] != false {
		t.Errorf("second page %v", rest)
	}
	asc := h.get("/v1/responses/" + respID + "/input_items?order=asc").JSON(t)
	if d := asc["data"].([]any); d[0].(map[string]any)["role"] != "developer" {
		t.Errorf("order=asc %v", asc)
	}
	del := h.do(request{method: "DELETE", path: "/v1/responses/" + respID, key: h.writeKey})
	if d := del.JSON(t); del.Code != 200 || d["deleted"] != true || d["id"] != respID {
		t.Errorf("delete: %d %s", del.Code, del.Body)
	}
	gone := h.get("/v1/responses/" + respID)
	if typ, code, _ := openAIError(t, gone); gone.Code != 404 || typ != "invalid_request_error" || code != "not_found" {
		t.Errorf("deleted: %d %s", gone.Code, gone.Body)
	}
	if run := h.get("/v1/agents/" + id + "/runs/run_" + strings.TrimPrefix(respID, "resp_")); run.Code != 200 {
		t.Errorf("the run went with its response: %d", run.Code)
	}
}

// TestResponseContinuity: previous_response_id continues a response
// without a conversation from its own input and output, and one with a
// user in that user's conversation; store: false keeps nothing to
// continue.
func TestResponseContinuity(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	first := h.respond(map[string]any{"model": id, "input": "first question"}).JSON(t)
	second := h.respond(map[string]any{"model": id, "input": "second question", "user": "IGNORED", "previous_response_id": first["id"]})
	if second.Code != 200 || second.JSON(t)["previous_response_id"] != first["id"] {
		t.Fatalf("%d %s", second.Code, second.Body)
	}
	third := h.respond(map[string]any{"model": id, "input": "third question", "previous_response_id": second.JSON(t)["id"]})
	if third.Code != 200 {
		t.Fatalf("%d %s", third.Code, third.Body)
	}
	reqs := h.openai.Requests()
	_, msgs := reqs[len(reqs)-1].Conversation()
	reply := "Hello from the test server."
	want := []llmtest.Message{{Role: "user", Content: "first question"}, {Role: "assistant", Content: reply},
		{Role: "user", Content: "second question"}, {Role: "assistant", Content: reply}, {Role: "user", Content: "third question"}}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("sent to the model %+v, want %+v", msgs, want)
	}
	if items := h.items(h.get("/v1/agents/" + id + "/conversations")); len(items) != 0 {
		t.Errorf("conversations %v, want none", items)
	}

	withUser := h.respond(map[string]any{"model": id, "input": "stored question", "user": "u1"}).JSON(t)
	next := h.respond(map[string]any{"model": id, "input": "follow-up", "previous_response_id": withUser["id"]})
	if next.Code != 200 || next.JSON(t)["user"] != nil {
		t.Fatalf("%d %s", next.Code, next.Body)
	}
	reqs = h.openai.Requests()
	if _, msgs := reqs[len(reqs)-1].Conversation(); len(msgs) != 3 || msgs[0].Content != "stored question" {
		t.Errorf("sent to the model %+v, want u1's conversation", msgs)
	}
	conv := h.items(h.get("/v1/agents/" + id + "/conversations"))
	if len(conv) != 1 || conv[0]["userId"] != "u1" || conv[0]["messageCount"] != 4.0 {
		t.Errorf("conversations %v, want u1's with both exchanges", conv)
	}

	unkept := h.respond(map[string]any{"model": id, "input": "forget me", "store": false}).JSON(t)
	for _, path := range []string{"/v1/responses/" + unkept["id"].(string), "/v1/responses/" + unkept["id"].(string) + "/input_items"} {
		if res := h.get(path); res.Code != 404 {
			t.Errorf("%s of a store:false response: %d", path, res.Code)
		}
	}
	res := h.respond(map[string]any{"model": id, "input": "hi", "previous_response_id": unkept["id"]})
	if _, code, _ := openAIError(t, res); res.Code != 404 || code != "not_found" {
		t.Errorf("continuing a store:false response: %d %s", res.Code, res.Body)
	}
	other := h.createAgent(map[string]any{"name": "Bob"})
	res = h.respond(map[string]any{"model": other, "input": "hi", "previous_response_id": first["id"]})
	if _, code, param := openAIError(t, res); res.Code != 400 || code != "invalid_request" || param != "previous_response_id" {
		t.Errorf("another agent's response: %d %s", res.Code, res.Body)
	}
}

// TestResponseStream: a streamed response's events come in OpenAI's order
// with growing sequence numbers and the turn's usage; Get Response with
// stream=true replays them, and resumes after starting_after.
func TestResponseStream(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Fragments: []string{"Calm ", "markets."}, PromptTokens: 11, CompletionTokens: 3})
	id := h.createAgent(map[string]any{"name": "Ada"})
	res := h.respond(map[string]any{"model": id, "input": "hi", "stream": true, "reasoning": map[string]any{}})
	if res.Code != 200 {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	if ig := res.Header.Get("agentd-ignored"); ig != "reasoning" {
		t.Errorf("agentd-ignored %q", ig)
	}
	events := h.responseEvents(t, res)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}
	if names := eventNames(events); !reflect.DeepEqual(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	if events[0].data["sequence_number"] != 0.0 {
		t.Errorf("first sequence_number %v", events[0].data["sequence_number"])
	}
	final := events[len(events)-1].data["response"].(map[string]any)
	if u := final["usage"].(map[string]any); u["input_tokens"] != 11.0 || u["output_tokens"] != 3.0 || u["total_tokens"] != 14.0 {
		t.Errorf("usage %v", u)
	}
	if final["status"] != "completed" || responseText(t, final) != "Calm markets." || events[6].data["text"] != "Calm markets." {
		t.Errorf("final %v", final)
	}
	respID := events[0].data["response"].(map[string]any)["id"].(string)
	replay := h.responseEvents(t, h.get("/v1/responses/"+respID+"?stream=true"))
	if !reflect.DeepEqual(replay, events) {
		t.Errorf("replay differs:\n%v\n%v", eventNames(replay), eventNames(events))
	}
	resumed := h.responseEvents(t, h.get("/v1/responses/"+respID+"?stream=true&starting_after=4"))
	if !reflect.DeepEqual(resumed, events[5:]) {
		t.Errorf("resumed after 4: %v", eventNames(resumed))
	}
}

// TestResponseBackground: a background response answers queued at once,
// is followed with Get Response until completed, and streams from
// response.queued when streamed; a cancel stops one that runs.
func TestResponseBackground(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	res := h.respond(map[string]any{"model": id, "input": "later", "background": true})
	got := res.JSON(t)
	if res.Code != 200 || got["status"] != "queued" || got["background"] != true || len(got["output"].([]any)) != 0 || got["usage"] != nil {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	done := h.pollResponse(t, got["id"].(string))
	if done["status"] != "completed" || responseText(t, done) != "Hello from the test server." || done["usage"].(map[string]any)["total_tokens"] != 18.0 {
		t.Errorf("completed %v", done)
	}

	streamed := h.responseEvents(t, h.respond(map[string]any{"model": id, "input": "later", "background": true, "stream": true}))
	if names := eventNames(streamed); len(names) < 4 || names[0] != "response.created" || names[1] != "response.queued" ||
		names[2] != "response.in_progress" || names[len(names)-1] != "response.completed" {
		t.Errorf("background stream %v", names)
	}
	if st := streamed[0].data["response"].(map[string]any)["status"]; st != "queued" {
		t.Errorf("created as %v", st)
	}

	h.openai.Respond(llmtest.Reply{Text: "never", Delay: 3 * time.Second})
	slow := h.respond(map[string]any{"model": id, "input": "slow", "background": true}).JSON(t)
	cancel := h.do(request{method: "POST", path: "/v1/responses/" + slow["id"].(string) + "/cancel", key: h.writeKey})
	if cancel.Code != 200 {
		t.Fatalf("cancel: %d %s", cancel.Code, cancel.Body)
	}
	if st := h.pollResponse(t, slow["id"].(string))["status"]; st != "cancelled" {
		t.Errorf("cancelled response %v", st)
	}
	again := h.do(request{method: "POST", path: "/v1/responses/" + slow["id"].(string) + "/cancel", key: h.writeKey})
	if again.Code != 200 || again.JSON(t)["status"] != "cancelled" {
		t.Errorf("a finished response answers as it is: %d %s", again.Code, again.Body)
	}
}

// TestResponseErrors: the refusals are OpenAI's errors.
func TestResponseErrors(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	mine := h.respond(map[string]any{"model": id, "input": "hi"}).JSON(t)["id"].(string)
	otherKey := h.newKey(h.newAccount("other", domain.TierStandard).Name, domain.ScopeWrite)
	cases := []struct {
		name      string
		req       request
		status    int
		typ, code string
		param     any
	}{
		{"read key", request{method: "POST", path: "/v1/responses", key: h.readKey, body: map[string]any{"model": id, "input": "hi"}},
			403, "permission_error", "insufficient_permissions", nil},
		{"unknown model", request{method: "POST", path: "/v1/responses", key: h.writeKey, body: map[string]any{"model": "agent_missing", "input": "hi"}},
			404, "invalid_request_error", "model_not_found", "model"},
		{"item type", request{method: "POST", path: "/v1/responses", key: h.writeKey, body: map[string]any{"model": id,
			"input": []any{map[string]any{"type": "function_call_output", "call_id": "c", "output": "x"}}}},
			400, "invalid_request_error", "invalid_request", "input[0]"},
		{"part type", request{method: "POST", path: "/v1/responses", key: h.writeKey, body: map[string]any{"model": id,
			"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": "x"}}}}}},
			400, "invalid_request_error", "invalid_request", "input[0].content[0].type"},
		{"no user item", request{method: "POST", path: "/v1/responses", key: h.writeKey, body: map[string]any{"model": id,
			"input": []any{map[string]any{"role": "assistant", "content": "hi"}}}},
			400, "invalid_request_error", "invalid_request", "input"},
		{"blank", request{method: "POST", path: "/v1/responses", key: h.writeKey, body: map[string]any{"model": id, "input": "   "}},
			400, "invalid_request_error", "invalid_request", "input"},
		{"another account's response", request{method: "GET", path: "/v1/responses/" + mine, key: otherKey},
			404, "invalid_request_error", "not_found", nil},
		{"another account's cancel", request{method: "POST", path: "/v1/responses/" + mine + "/cancel", key: otherKey},
			404, "invalid_request_error", "not_found", nil},
		{"not a response id", request{method: "GET", path: "/v1/responses/run_x/input_items", key: h.readKey},
			404, "invalid_request_error", "not_found", nil},
		{"read key deletes", request{method: "DELETE", path: "/v1/responses/" + mine, key: h.readKey},
			403, "permission_error", "insufficient_permissions", nil},
	}
	for _, tc := range cases {
		res := h.do(tc.req)
		typ, code, param := openAIError(t, res)
		if res.Code != tc.status || typ != tc.typ || code != tc.code || param != tc.param {
			t.Errorf("%s: %d %s", tc.name, res.Code, res.Body)
		}
	}
}

// TestResponseApproval: a response whose run comes to wait for a decision
// on its tool calls is 409 approval_required naming the run; a streamed
// one ends with response.failed carrying that code; a background one is
// in_progress until decided, then completed.
func TestResponseApproval(t *testing.T) {
	c := newApprovalCase(t)
	h := c.h
	h.openai.Enqueue(priceCall)
	res := h.respond(map[string]any{"model": c.agent, "input": "price of SOL?", "user": "u-plain"})
	if typ, code, _ := openAIError(t, res); res.Code != 409 || typ != "invalid_request_error" || code != "approval_required" {
		t.Fatalf("a response whose run waits: %d %s", res.Code, res.Body)
	}
	if run := h.run(c.agent, runIDIn.FindString(string(res.Body)), 0); run["status"] != "requires_action" || run["source"] != "openai" {
		t.Errorf("its run %v", run)
	}

	h.openai.Enqueue(priceCall)
	events := h.responseEvents(t, h.respond(map[string]any{"model": c.agent, "input": "price of SOL?", "user": "u-stream", "stream": true}))
	last := events[len(events)-1]
	failed, _ := last.data["response"].(map[string]any)
	errBody, _ := failed["error"].(map[string]any)
	if last.name != "response.failed" || errBody["code"] != "approval_required" || runIDIn.FindString(errBody["message"].(string)) == "" {
		t.Fatalf("a streamed response whose run waits ended %s %v", last.name, failed)
	}

	h.openai.Enqueue(priceCall)
	bg := h.respond(map[string]any{"model": c.agent, "input": "price of SOL?", "user": "u-bg", "background": true}).JSON(t)
	runID := "run_" + strings.TrimPrefix(bg["id"].(string), "resp_")
	run := h.run(c.agent, runID, 10)
	if run["status"] != "requires_action" {
		t.Fatalf("background run %v", run)
	}
	if got := h.get("/v1/responses/" + bg["id"].(string)).JSON(t); got["status"] != "in_progress" {
		t.Errorf("a background response waiting for a decision is %v", got["status"])
	}
	h.openai.Respond(llmtest.Reply{Text: "SOL is at 142."})
	if res := c.decide(runID, map[string]any{"callId": waitingCall(t, run)["id"], "approve": true}); res.Code != 200 {
		t.Fatalf("decide: %d %s", res.Code, res.Body)
	}
	if done := h.pollResponse(t, bg["id"].(string)); done["status"] != "completed" || responseText(t, done) != "SOL is at 142." {
		t.Errorf("decided %v", done)
	}
}

// TestResponseAcrossReplicasPostgres: on PostgreSQL, a response made on
// one replica is read, replayed and continued on another.
func TestResponseAcrossReplicasPostgres(t *testing.T) {
	h := newHarnessPostgres(t)
	other := h.otherReplica(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	made := h.respond(map[string]any{"model": id, "input": "first question", "background": true, "metadata": map[string]any{"k": "v"}}).JSON(t)
	respID := made["id"].(string)
	done := other.pollResponse(t, respID)
	if done["status"] != "completed" || responseText(t, done) != "Hello from the test server." || done["metadata"].(map[string]any)["k"] != "v" {
		t.Errorf("read on the other replica %v", done)
	}
	replay := other.responseEvents(t, other.get("/v1/responses/"+respID+"?stream=true&starting_after=1"))
	if names := eventNames(replay); len(names) == 0 || names[0] != "response.in_progress" || names[len(names)-1] != "response.completed" {
		t.Errorf("replayed on the other replica %v", names)
	}
	next := other.respond(map[string]any{"model": id, "input": "second question", "previous_response_id": respID})
	if next.Code != 200 {
		t.Fatalf("continued on the other replica: %d %s", next.Code, next.Body)
	}
	reqs := h.openai.Requests()
	if _, msgs := reqs[len(reqs)-1].Conversation(); len(msgs) != 3 || msgs[0].Content != "first question" {
		t.Errorf("continued with %+v", msgs)
	}
}

// TestResponseBudgetExceeded: a spent budget refuses a response, plain,
// streamed or in the background, with OpenAI's insufficient_quota, and
// makes no run.
func TestResponseBudgetExceeded(t *testing.T) {
	h := newHarness(t)
	spent := h.spentAgent(t)
	before := len(h.items(h.get("/v1/agents/" + spent + "/runs")))
	for _, extra := range []map[string]any{{}, {"stream": true}, {"background": true}} {
		body := map[string]any{"model": spent, "input": "hi"}
		for k, v := range extra {
			body[k] = v
		}
		res := h.respond(body)
		if typ, code, _ := openAIError(t, res); res.Code != 402 || typ != "insufficient_quota" || code != "budget_exceeded" {
			t.Errorf("%v: %d %s", extra, res.Code, res.Body)
		}
	}
	if after := len(h.items(h.get("/v1/agents/" + spent + "/runs"))); after != before {
		t.Errorf("refused responses made %d runs", after-before)
	}
}

// TestResponseItemReference: an item_reference names an earlier reply of
// the agent by its output message id, as the AI SDK sends it; anything
// else it names is a 400 naming the item.
func TestResponseItemReference(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	first := h.respond(map[string]any{"model": id, "input": "first question"}).JSON(t)
	replyID := first["output"].([]any)[0].(map[string]any)["id"].(string)
	res := h.respond(map[string]any{"model": id, "input": []any{
		map[string]any{"role": "user", "content": "first question"},
		map[string]any{"type": "item_reference", "id": replyID},
		map[string]any{"role": "user", "content": "second question"},
	}})
	if res.Code != 200 {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	reqs := h.openai.Requests()
	_, msgs := reqs[len(reqs)-1].Conversation()
	want := []llmtest.Message{{Role: "user", Content: "first question"}, {Role: "assistant", Content: "Hello from the test server."},
		{Role: "user", Content: "second question"}}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("sent to the model %+v, want %+v", msgs, want)
	}
	other := h.createAgent(map[string]any{"name": "Bob"})
	for _, ref := range []map[string]any{{"model": other}, {"model": id, "ref": "msg_missing"}} {
		target := replyID
		if r, ok := ref["ref"].(string); ok {
			target = r
		}
		res := h.respond(map[string]any{"model": ref["model"], "input": []any{map[string]any{"type": "item_reference", "id": target},
			map[string]any{"role": "user", "content": "hi"}}})
		if _, code, param := openAIError(t, res); res.Code != 400 || code != "invalid_request" || param != "input[0]" {
			t.Errorf("%v: %d %s", ref, res.Code, res.Body)
		}
	}
}

// TestResponseIncomplete: a reply the provider stopped for its length
// (OpenAI's finish_reason length, Anthropic's stop_reason max_tokens,
// ollama's done_reason length),
// plain or streamed, and one cut at the character's maxLength, make the
// response incomplete for max_output_tokens, its stream ending with
// response.incomplete; Send Message says metadata.truncated.
func TestResponseIncomplete(t *testing.T) {
	h := newHarness(t)
	for _, provider := range []string{"openai", "anthropic", "ollama"} {
		t.Run(provider, func(t *testing.T) {
			wire := h.providerFor(provider)
			id := h.createAgent(map[string]any{"name": "Terse " + provider, "modelProvider": provider})
			wire.Respond(llmtest.Reply{Text: "It was the best of", Cut: true})
			got := h.respond(map[string]any{"model": id, "input": "Tell a story.", "max_output_tokens": 16}).JSON(t)
			details, _ := got["incomplete_details"].(map[string]any)
			if got["status"] != "incomplete" || details["reason"] != "max_output_tokens" || responseText(t, got) != "It was the best of" {
				t.Errorf("plain: %v", got)
			}
			events := h.responseEvents(t, h.respond(map[string]any{"model": id, "input": "Again.", "stream": true}))
			last := events[len(events)-1]
			if last.name != "response.incomplete" || last.data["response"].(map[string]any)["status"] != "incomplete" {
				t.Errorf("streamed: ends %s %v", last.name, last.data)
			}
			if got := h.pollResponse(t, last.data["response"].(map[string]any)["id"].(string)); got["status"] != "incomplete" {
				t.Errorf("streamed, read back: %v", got["status"])
			}
			meta := h.send(id, map[string]any{"text": "Once more."}).Data(t)["metadata"].(map[string]any)
			if meta["truncated"] != true {
				t.Errorf("Send Message metadata %v", meta)
			}
		})
	}
	wordy := h.createAgent(map[string]any{"name": "Wordy", "responseGuidelines": map[string]any{"maxLength": 20}})
	h.openai.Respond(llmtest.Reply{Text: "A long answer that runs well past twenty characters."})
	if got := h.respond(map[string]any{"model": wordy, "input": "Talk."}).JSON(t); got["status"] != "incomplete" {
		t.Errorf("cut at maxLength: %v", got)
	}
	h.openai.Respond(llmtest.Reply{Text: "Short."})
	if got := h.respond(map[string]any{"model": wordy, "input": "Briefly."}).JSON(t); got["status"] != "completed" || got["incomplete_details"] != nil {
		t.Errorf("a whole reply: %v", got)
	}
}
