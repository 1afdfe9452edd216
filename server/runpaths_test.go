package server

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
)

// runIDIn is the first run id a text names, "" for none.
var runIDIn = regexp.MustCompile(`run_[0-9a-z]+`)

// impatient is a harness whose synchronous ways in wait 200ms for their
// run before they give it up to go on alone.
func impatient(t *testing.T) *harness {
	return newHarness(t, func(c *harnessConfig) { c.RunWait = 200 * time.Millisecond; c.PingInterval = 50 * time.Millisecond })
}

// lateReply takes longer than impatient's wait.
var lateReply = llmtest.Reply{Text: "took a while", Delay: 700 * time.Millisecond}

// runStreamTokens is the text the run's stream carries once the run
// ended, its start event checked to name the run.
func (h *harness) runStreamTokens(t *testing.T, agentID, runID string) string {
	t.Helper()
	body := h.get("/v1/agents/" + agentID + "/runs/" + runID + "/stream").Body
	frames := sseFrames(body)
	if len(frames) == 0 || !strings.Contains(frames[0], `"runId":"`+runID+`"`) {
		t.Fatalf("the run's stream does not start by naming the run: %s", body)
	}
	events := parseSSE(t, body)
	if last := events[len(events)-1]; last["type"] != "done" {
		t.Errorf("the run's stream ends with %v", last)
	}
	return tokens(events)
}

// TestBackgroundRunStreamsItsTokens: the stream of a background run shows
// its start while it is queued or running, then its tokens as the provider
// sends them, before its done; a client resumes it with Last-Event-ID and
// it is replayed once the run ended. A synchronous Send Message's run
// that went on past the wait streams the same way.
func TestBackgroundRunStreamsItsTokens(t *testing.T) {
	h := impatient(t)
	h.openai.Respond(slowReply)
	id := h.createAgent(map[string]any{"name": "narrator"})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	bg := h.background(id, "ann", "count", nil)
	runID := bg["id"].(string)
	path := "/v1/agents/" + id + "/runs/" + runID + "/stream"
	c := openSSE(t, "GET", ts.URL+path, h.readKey, nil, nil)
	if _, start, _ := c.next(); start["type"] != "start" || start["runId"] != runID || start["messageId"] != bg["messageId"] {
		t.Fatalf("first event %v, want the run's start", start)
	}
	if _, first, _ := c.next(); first["type"] != "token" || first["content"] != "one " {
		t.Fatalf("second event %v, want the first token", first)
	}
	if status := h.run(id, runID, 0)["status"]; status != "running" {
		t.Errorf("the run is %v when its first token arrives; want running (the tokens stream live)", status)
	}
	ids, rest := c.rest()
	last := rest[len(rest)-1]
	if "one "+tokens(rest) != "one two three four five six seven eight" || last["type"] != "done" || last["messageId"] != bg["messageId"] {
		t.Fatalf("the rest of the run's stream: %v", rest)
	}
	if ids[0] != 3 {
		t.Errorf("event ids %v, want them to go on from 3", ids)
	}

	// Resumed after event 3, from the replay of the ended run.
	resumed := sseFrames(h.do(request{method: "GET", path: path, key: h.readKey, header: map[string]string{"Last-Event-ID": "3"}}).Body)
	if len(resumed) != len(ids)-1 || !strings.HasPrefix(resumed[0], "id: 4\n") || !strings.Contains(resumed[len(resumed)-1], `"type":"done"`) {
		t.Errorf("resumed after 3: %q", resumed)
	}

	// A synchronous send answers 202 past its wait; its run streamed too.
	res := h.send(id, map[string]any{"text": "count again", "userId": "bob"})
	if res.Code != http.StatusAccepted {
		t.Fatalf("send past the wait: %d %s", res.Code, res.Body)
	}
	sync := res.Data(t)["id"].(string)
	if done := h.run(id, sync, 10); done["status"] != "completed" {
		t.Fatalf("the synchronous send's run: %v", done)
	}
	if got := h.runStreamTokens(t, id, sync); got != "one two three four five six seven eight" {
		t.Errorf("the synchronous send's run streamed %q", got)
	}
}

// TestChatCompletionWaitsForItsRun: a Chat Completions request waits
// RunWait for its run, then answers 504 server_error / run_pending naming
// the run, which goes on to complete, its tokens in its stream; a
// conversation busy under reject is 409 invalid_request_error /
// conversation_busy naming the run in the way; a streamed completion's run
// streams as the message's does.
func TestChatCompletionWaitsForItsRun(t *testing.T) {
	h := impatient(t)
	h.openai.Respond(lateReply)
	id := h.createAgent(map[string]any{"name": "Ada"})
	res := h.chat(map[string]any{"model": id, "messages": userMessage("take your time")})
	if res.Code != http.StatusGatewayTimeout {
		t.Fatalf("a completion past the wait: %d %s", res.Code, res.Body)
	}
	typ, code, param := openAIError(t, res)
	runID := runIDIn.FindString(string(res.Body))
	if typ != "server_error" || code != "run_pending" || param != nil || runID == "" {
		t.Fatalf("504 %s / %s, param %v, run %q: %s", typ, code, param, runID, res.Body)
	}
	done := h.run(id, runID, 10)
	if done["status"] != "completed" || done["source"] != "openai" || done["reply"].(map[string]any)["response"] != "took a while" {
		t.Errorf("the pending run went on to %v", done)
	}
	if got := h.runStreamTokens(t, id, runID); got != "took a while" {
		t.Errorf("the pending run streamed %q", got)
	}

	strict := h.createAgent(map[string]any{"name": "strict", "settings": map[string]any{"runs": map[string]any{"multitaskStrategy": "reject"}}})
	inTheWay := h.background(strict, "ann", "first", nil)
	res = h.chat(map[string]any{"model": strict, "user": "ann", "messages": userMessage("second")})
	if typ, code, _ := openAIError(t, res); res.Code != http.StatusConflict || typ != "invalid_request_error" || code != "conversation_busy" ||
		runIDIn.FindString(string(res.Body)) != inTheWay["id"] {
		t.Errorf("a busy conversation: %d %s", res.Code, res.Body)
	}
	h.run(strict, inTheWay["id"].(string), 10)

	h.openai.Respond(llmtest.Reply{Fragments: []string{"Calm ", "today."}})
	if res := h.chat(map[string]any{"model": id, "stream": true, "messages": userMessage("market?")}); res.Code != 200 {
		t.Fatalf("streamed completion: %d %s", res.Code, res.Body)
	}
	streamed := h.items(h.get("/v1/agents/" + id + "/runs?source=openai"))[0]["id"].(string)
	if got := h.runStreamTokens(t, id, streamed); got != "Calm today." {
		t.Errorf("the streamed completion's run streamed %q", got)
	}
}

// TestMCPSendMessageWaitsForItsRun: send_message waits RunWait for its
// run, then answers a failed tool call naming it (RUN_PENDING); the run
// goes on to complete.
func TestMCPSendMessageWaitsForItsRun(t *testing.T) {
	h := impatient(t)
	h.openai.Respond(lateReply)
	id := h.createAgent(map[string]any{"name": "Ada"})
	text, failed := toolText(t, h.mcpSession(t, h.writeKey), "send_message", map[string]any{"agentId": id, "text": "take your time"})
	runID := runIDIn.FindString(text)
	if !failed || !strings.HasPrefix(text, "RUN_PENDING: ") || runID == "" {
		t.Fatalf("send_message past the wait = %q, failed %v", text, failed)
	}
	if done := h.run(id, runID, 10); done["status"] != "completed" || done["source"] != "mcp" {
		t.Errorf("the pending run went on to %v", done)
	}
}

// TestA2ABlockingSendPastTheWait: a blocking SendMessage waits RunWait for
// its run, then answers the task working; GetTask follows it to
// completed, and the run's stream carries its tokens.
func TestA2ABlockingSendPastTheWait(t *testing.T) {
	h := impatient(t)
	h.openai.Respond(lateReply)
	id := h.createAgent(map[string]any{"name": "Deferred"})
	start := time.Now()
	task := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "SendMessage", params: a2aUserMessage("slow?", "ctx-slow")}))["task"]
	if dig(task, "status.state") != "TASK_STATE_WORKING" || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("a blocking send past the wait answered after %v: %v", time.Since(start), task)
	}
	deadline := time.Now().Add(5 * time.Second)
	for dig(rpcResult(t, h.rpc(rpcCall{agentID: id, method: "GetTask", params: map[string]any{"id": dig(task, "id")}})),
		"status.state") != "TASK_STATE_COMPLETED" {
		if time.Now().After(deadline) {
			t.Fatal("the task never completed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	runs := h.items(h.get("/v1/agents/" + id + "/runs?source=a2a"))
	if len(runs) != 1 || runs[0]["status"] != "completed" {
		t.Fatalf("a2a runs: %v", runs)
	}
	if got := h.runStreamTokens(t, id, runs[0]["id"].(string)); got != "took a while" {
		t.Errorf("the A2A run streamed %q", got)
	}
}

// TestApprovalOnTheOtherWaysIn: a run that comes to wait for a decision on
// its tool calls answers Chat Completions 409 invalid_request_error /
// approval_required naming it (a streamed completion ends with that error
// event), MCP's send_message an isError APPROVAL_REQUIRED naming it, and
// blocking A2A the task working, which the run's end completes once
// decided; each run waits in requires_action, with its source.
func TestApprovalOnTheOtherWaysIn(t *testing.T) {
	c := newApprovalCase(t)
	h := c.h
	waiting := func(runID, source string) map[string]any {
		t.Helper()
		run := h.run(c.agent, runID, 0)
		if run["status"] != "requires_action" || run["source"] != source {
			t.Fatalf("%s run = %v, want requires_action", source, run)
		}
		return run
	}

	h.openai.Enqueue(priceCall)
	res := h.chat(map[string]any{"model": c.agent, "user": "u-openai", "messages": userMessage("price of SOL?")})
	typ, code, _ := openAIError(t, res)
	if res.Code != http.StatusConflict || typ != "invalid_request_error" || code != "approval_required" {
		t.Fatalf("a completion whose run waits: %d %s", res.Code, res.Body)
	}
	waiting(runIDIn.FindString(string(res.Body)), "openai")

	h.openai.Enqueue(priceCall)
	res = h.chat(map[string]any{"model": c.agent, "user": "u-stream", "stream": true, "messages": userMessage("price of SOL?")})
	events, done := h.chatEvents(t, res)
	last, _ := events[len(events)-1]["error"].(map[string]any)
	if done || last["code"] != "approval_required" || last["type"] != "invalid_request_error" {
		t.Fatalf("a streamed completion whose run waits: %s", res.Body)
	}
	waiting(runIDIn.FindString(last["message"].(string)), "openai")

	h.openai.Enqueue(priceCall)
	text, failed := toolText(t, h.mcpSession(t, h.writeKey), "send_message", map[string]any{"agentId": c.agent, "text": "price of SOL?", "userId": "u-mcp"})
	if !failed || !strings.HasPrefix(text, "APPROVAL_REQUIRED: ") {
		t.Fatalf("send_message whose run waits = %q, failed %v", text, failed)
	}
	waiting(runIDIn.FindString(text), "mcp")

	h.openai.Enqueue(priceCall)
	start := time.Now()
	task := rpcResult(t, h.rpc(rpcCall{agentID: c.agent, method: "SendMessage", params: a2aUserMessage("price of SOL?", "ctx-approve")}))["task"]
	if dig(task, "status.state") != "TASK_STATE_WORKING" || time.Since(start) > 10*time.Second {
		t.Fatalf("a blocking send whose run waits answered after %v: %v", time.Since(start), task)
	}
	runs := h.items(h.get("/v1/agents/" + c.agent + "/runs?source=a2a"))
	if len(runs) != 1 {
		t.Fatalf("a2a runs: %v", runs)
	}
	call := waitingCall(t, waiting(runs[0]["id"].(string), "a2a"))
	h.openai.Respond(llmtest.Reply{Text: "SOL is at 142."})
	if res := c.decide(runs[0]["id"].(string), map[string]any{"callId": call["id"], "approve": true}); res.Code != http.StatusOK {
		t.Fatalf("approve: %d %s", res.Code, res.Body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := rpcResult(t, h.rpc(rpcCall{agentID: c.agent, method: "GetTask", params: map[string]any{"id": dig(task, "id")}}))
		if dig(got, "status.state") == "TASK_STATE_COMPLETED" {
			if dig(got, "artifacts.0.parts.0.text") != "SOL is at 142." {
				t.Errorf("the decided task = %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the decided task never completed: %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A streamed send stays open, its task working, through the wait.
	h.openai.Enqueue(priceCall)
	streamed := make(chan []map[string]any, 1)
	go func() {
		streamed <- streamResults(t, h.rpc(rpcCall{agentID: c.agent, method: "SendStreamingMessage", params: a2aUserMessage("price of SOL?", "ctx-stream")}))
	}()
	var runID string
	for deadline := time.Now().Add(10 * time.Second); runID == ""; time.Sleep(20 * time.Millisecond) {
		if list := h.items(h.get("/v1/agents/" + c.agent + "/runs?source=a2a&status=requires_action")); len(list) == 1 {
			runID = list[0]["id"].(string)
		}
		if time.Now().After(deadline) {
			t.Fatal("the streamed send's run never waited")
		}
	}
	call = waitingCall(t, h.run(c.agent, runID, 0))
	if res := c.decide(runID, map[string]any{"callId": call["id"], "approve": true}); res.Code != http.StatusOK {
		t.Fatalf("approve: %d %s", res.Code, res.Body)
	}
	events = <-streamed
	last = events[len(events)-1]
	if n := len(events); n < 3 || dig(events[n-2], "artifactUpdate.artifact.parts.0.text") != "SOL is at 142." ||
		dig(last, "statusUpdate.status.state") != "TASK_STATE_COMPLETED" {
		t.Errorf("the streamed send through a wait: %v", events)
	}
}
