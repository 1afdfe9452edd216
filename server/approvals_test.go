package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm/llmtest"
)

// approvalCase is an agent whose get_price action waits for approval,
// and the handler behind it.
type approvalCase struct {
	h       *harness
	handler *priceHandler
	agent   string
}

func newApprovalCase(t *testing.T) *approvalCase {
	h := newHarness(t)
	handler := newPriceHandler(t)
	return &approvalCase{h: h, handler: handler, agent: h.toolAgent(handler.URL, map[string]any{"requiresApproval": true})}
}

// waitingRun sends a message whose model asks for get_price and returns
// the run the 202 names, waiting for a decision.
func (c *approvalCase) waitingRun(t *testing.T) map[string]any {
	t.Helper()
	c.h.openai.Enqueue(priceCall)
	res := c.h.send(c.agent, map[string]any{"text": "price of SOL?", "userId": "u1"})
	if res.Code != http.StatusAccepted {
		t.Fatalf("send whose run waits: %d %s", res.Code, res.Body)
	}
	run := res.Data(t)
	if run["status"] != "requires_action" {
		t.Fatalf("run = %v, want requires_action", run)
	}
	return run
}

// decide posts decisions on the run's calls.
func (c *approvalCase) decide(runID string, decisions ...map[string]any) response {
	return c.h.do(request{method: "POST", path: "/v1/agents/" + c.agent + "/runs/" + runID + "/approvals",
		key: c.h.writeKey, body: map[string]any{"decisions": decisions}})
}

// waitingCall is the one call the run waits for.
func waitingCall(t *testing.T, run map[string]any) map[string]any {
	t.Helper()
	action, _ := run["requiredAction"].(map[string]any)
	calls, _ := action["toolCalls"].([]any)
	if action["type"] != "approve_tool_calls" || len(calls) != 1 || action["expiresAt"] == nil {
		t.Fatalf("requiredAction = %v", run["requiredAction"])
	}
	return calls[0].(map[string]any)
}

// TestApprovalApprovedWithEditedArguments: a call of an action that
// requires approval waits (the handler gets nothing, the synchronous send
// answers 202 with the run); bad decisions are 400 naming what is wrong;
// an approval with edited arguments runs the call with them, the run
// completes, and the reply shows the approval; deciding again is 409.
func TestApprovalApprovedWithEditedArguments(t *testing.T) {
	c := newApprovalCase(t)
	run := c.waitingRun(t)
	id := run["id"].(string)
	call := waitingCall(t, run)
	if call["name"] != "get_price" || len(c.handler.got()) != 0 {
		t.Fatalf("waiting call %v; the handler got %d calls before a decision", call, len(c.handler.got()))
	}
	for _, bad := range []struct {
		decisions []map[string]any
		field     string
	}{
		{[]map[string]any{{"callId": "call_unknown", "approve": true}}, "decisions"},
		{[]map[string]any{{"callId": call["id"], "approve": false, "arguments": map[string]any{"symbol": "ETH"}}}, "decisions[0].arguments"},
	} {
		res := c.decide(id, bad.decisions...)
		if res.Code != http.StatusBadRequest || res.Details(t)["field"] != bad.field {
			t.Errorf("decisions %v: %d %s; want 400 naming %s", bad.decisions, res.Code, res.Body, bad.field)
		}
	}
	c.h.openai.Respond(llmtest.Reply{Text: "ETH is at 142.", PromptTokens: 20, CompletionTokens: 5})
	res := c.decide(id, map[string]any{"callId": call["id"], "approve": true, "arguments": map[string]any{"symbol": "ETH"}, "reason": "ETH instead"})
	if res.Code != http.StatusOK {
		t.Fatalf("approve: %d %s", res.Code, res.Body)
	}
	if st := res.Data(t)["status"]; st != "queued" && st != "running" && st != "completed" {
		t.Errorf("run after the decision is %v", st)
	}
	done := c.h.run(c.agent, id, 10)
	if done["status"] != "completed" {
		t.Fatalf("run = %v", done)
	}
	got := c.handler.got()
	if len(got) != 1 || got[0]["data"].(map[string]any)["arguments"].(map[string]any)["symbol"] != "ETH" {
		t.Fatalf("handler got %v; want one call with the edited arguments", got)
	}
	calls := done["reply"].(map[string]any)["metadata"].(map[string]any)["toolCalls"].([]any)
	rec := calls[0].(map[string]any)
	approval, _ := rec["approval"].(map[string]any)
	if rec["id"] != call["id"] || approval["approved"] != true || approval["reason"] != "ETH instead" ||
		!strings.HasPrefix(approval["by"].(string), "agk_") || rec["arguments"].(map[string]any)["symbol"] != "ETH" {
		t.Errorf("reply's tool call = %v", rec)
	}
	if res := c.decide(id, map[string]any{"callId": call["id"], "approve": true}); res.Code != http.StatusConflict ||
		res.ErrorCode(t) != "RUN_NOT_WAITING" || res.Details(t)["status"] != "completed" {
		t.Errorf("deciding a completed run: %d %s", res.Code, res.Body)
	}
}

// TestApprovalDenied: a denied call is not run, and the model gets the
// denial with its reason as the call's result.
func TestApprovalDenied(t *testing.T) {
	c := newApprovalCase(t)
	run := c.waitingRun(t)
	call := waitingCall(t, run)
	c.h.openai.Respond(llmtest.Reply{Text: "I may not look that up."})
	if res := c.decide(run["id"].(string), map[string]any{"callId": call["id"], "approve": false, "reason": "not today"}); res.Code != http.StatusOK {
		t.Fatalf("deny: %d %s", res.Code, res.Body)
	}
	done := c.h.run(c.agent, run["id"].(string), 10)
	if done["status"] != "completed" || len(c.handler.got()) != 0 {
		t.Fatalf("run %v; handler got %d calls", done["status"], len(c.handler.got()))
	}
	results := c.h.openai.Last(t).ToolResults()
	var want map[string]string
	if len(results) != 1 || json.Unmarshal([]byte(results[0].Content), &want) != nil || want["error"] != "denied" || want["reason"] != "not today" {
		t.Errorf("the model got %+v", results)
	}
}

// TestApprovalOverAStream: the stream says requires_action and stays
// open; the decision's call, the answer and done follow on it.
func TestApprovalOverAStream(t *testing.T) {
	c := newApprovalCase(t)
	ts := httptest.NewServer(c.h.srv.Handler())
	t.Cleanup(ts.Close)
	c.h.openai.Respond(llmtest.Reply{Text: "SOL is at 142."})
	c.h.openai.Enqueue(priceCall)
	stream := openSSE(t, "POST", ts.URL+"/v1/agents/"+c.agent+"/messages/stream", c.h.writeKey,
		map[string]any{"text": "price of SOL?", "userId": "u1"}, nil)
	var waiting map[string]any
	for waiting == nil {
		_, ev, ok := stream.next()
		if !ok {
			t.Fatal("the stream ended before requires_action")
		}
		if ev["type"] == "requires_action" {
			waiting = ev
		}
	}
	calls := waiting["toolCalls"].([]any)
	if len(calls) != 1 || waiting["runId"] == nil {
		t.Fatalf("requires_action event = %v", waiting)
	}
	call := calls[0].(map[string]any)
	if res := c.decide(waiting["runId"].(string), map[string]any{"callId": call["id"], "approve": true}); res.Code != http.StatusOK {
		t.Fatalf("approve: %d %s", res.Code, res.Body)
	}
	_, rest := stream.rest()
	var types []string
	for _, ev := range rest {
		if typ := ev["type"].(string); len(types) == 0 || typ != "token" || types[len(types)-1] != "token" {
			types = append(types, typ)
		}
	}
	if got := strings.Join(types, " "); got != "tool_call tool_result token done" {
		t.Errorf("events after the decision: %s", got)
	}
	if tokens(rest) != "SOL is at 142." {
		t.Errorf("tokens after the decision: %q", tokens(rest))
	}
}
