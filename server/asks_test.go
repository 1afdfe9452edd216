package server

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/a2a"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/price"
)

// askCall is a provider reply asking agent for message with ask_agent.
func askCall(agent, message string) llmtest.Reply {
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "ask_agent",
		Arguments: `{"agent":"` + agent + `","message":"` + message + `"}`}}, PromptTokens: 100, CompletionTokens: 10}
}

// pricedAgent is the body of an agent of name priced at agentPrice, with
// settings.
func pricedAgent(name string, settings map[string]any) map[string]any {
	body := map[string]any{"name": name, "modelProvider": "openai", "modelSettings": map[string]any{"price": agentPrice}}
	if settings != nil {
		body["settings"] = settings
	}
	return body
}

// allowing is settings.agents.allow of ids.
func allowing(ids ...string) map[string]any {
	return map[string]any{"agents": map[string]any{"allow": ids}}
}

// sentTo reports whether the provider request rec carries text (a tool
// result or a history message).
func sentTo(rec llmtest.Recorded, text string) bool { return strings.Contains(string(rec.Raw), text) }

// TestAskLocalAgent: A asks B by name; B's reply reaches A's model as the
// tool result; B's run is A's child (source agent, userId A, in the room
// of A's conversation) and A's cost holds B's; the next ask from the same
// conversation finds the first one in B's history.
func TestAskLocalAgent(t *testing.T) { checkAskLocal(t, newHarness(t)) }

// TestAskLocalAgentOnPostgres: the same on PostgreSQL, where the chain
// and the children are read with its own queries.
func TestAskLocalAgentOnPostgres(t *testing.T) { checkAskLocal(t, newHarnessPostgres(t)) }

// checkAskLocal runs TestAskLocalAgent's asks on h.
func checkAskLocal(t *testing.T, h *harness) {
	b := h.createAgent(pricedAgent("Billing", nil))
	a := h.createAgent(pricedAgent("Support", allowing(b)))

	h.openai.Enqueue(askCall("Billing", "What does Ann owe?"),
		llmtest.Reply{Text: "Ann owes 42.", PromptTokens: 50, CompletionTokens: 5},
		llmtest.Reply{Text: "Billing says Ann owes 42.", PromptTokens: 200, CompletionTokens: 20})
	res := h.send(a, map[string]any{"text": "What do I owe?", "userId": "ann"})
	if res.Code != http.StatusOK {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	reqs := h.openai.Requests()
	if !sentTo(reqs[len(reqs)-1], "Ann owes 42.") {
		t.Fatalf("B's reply did not reach A's model: %s", reqs[len(reqs)-1].Raw)
	}
	runID := res.Data(t)["runId"].(string)
	run := h.get("/v1/agents/" + a + "/runs/" + runID).Data(t)
	children, _ := run["children"].([]any)
	if len(children) != 1 {
		t.Fatalf("children = %v", run["children"])
	}
	child := children[0].(map[string]any)
	childCost := price.USD(agentPrice.Cost(50, 5))
	if child["agentId"] != b || child["status"] != "completed" || child["costUsd"] != childCost || child["agent"] != nil {
		t.Errorf("child = %v", child)
	}
	if want := price.USD(agentPrice.Cost(300, 30) + agentPrice.Cost(50, 5)); run["costUsd"] != want {
		t.Errorf("A's costUsd = %v, want %v (its own with B's)", run["costUsd"], want)
	}
	asked := h.get("/v1/agents/" + b + "/runs/" + child["id"].(string)).Data(t)
	if asked["parentRunId"] != runID || asked["source"] != "agent" || asked["userId"] != a ||
		asked["roomId"] != "agent:"+run["conversationId"].(string) {
		t.Errorf("asked run = %v", asked)
	}

	h.openai.Enqueue(askCall(b, "And Bob?"), llmtest.Reply{Text: "Bob owes 7."}, llmtest.Reply{Text: "Bob owes 7."})
	if res := h.send(a, map[string]any{"text": "And Bob?", "userId": "ann"}); res.Code != http.StatusOK {
		t.Fatalf("second send: %d %s", res.Code, res.Body)
	}
	reqs = h.openai.Requests()
	if second := reqs[len(reqs)-2]; !sentTo(second, "What does Ann owe?") || !sentTo(second, "Ann owes 42.") {
		t.Errorf("B does not remember the earlier ask: %s", second.Raw)
	}
}

// TestAskBounds: a chain A→B→C→D is refused at D (C's tool result, no
// run of D), and B asking back A is refused as a loop.
func TestAskBounds(t *testing.T) {
	h := newHarness(t)
	d := h.createAgent(pricedAgent("D", nil))
	c := h.createAgent(pricedAgent("C", allowing(d)))
	b := h.createAgent(pricedAgent("B", allowing(c)))
	a := h.createAgent(pricedAgent("A", allowing(b)))
	h.openai.Enqueue(askCall("B", "q"), askCall("C", "q"), askCall("D", "q"),
		llmtest.Reply{Text: "C done."}, llmtest.Reply{Text: "B done."}, llmtest.Reply{Text: "A done."})
	if res := h.send(a, map[string]any{"text": "go", "userId": "u"}); res.Code != http.StatusOK {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	if reqs := h.openai.Requests(); !sentTo(reqs[3], `too deep`) {
		t.Errorf("C's ask of D was not refused as too deep: %s", reqs[3].Raw)
	}
	if runs := h.items(h.get("/v1/agents/" + d + "/runs")); len(runs) != 0 {
		t.Errorf("D has %d runs, want none", len(runs))
	}

	x := h.createAgent(pricedAgent("X", nil))
	y := h.createAgent(pricedAgent("Y", allowing(x)))
	if res := h.do(request{method: "PATCH", path: "/v1/agents/" + x, key: h.writeKey,
		body: map[string]any{"settings": allowing(y)}}); res.Code != http.StatusOK {
		t.Fatalf("patch: %d %s", res.Code, res.Body)
	}
	before := h.openai.Count()
	h.openai.Enqueue(askCall("X", "q"), askCall("Y", "q"), llmtest.Reply{Text: "X done."}, llmtest.Reply{Text: "Y done."})
	if res := h.send(y, map[string]any{"text": "go", "userId": "u"}); res.Code != http.StatusOK {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	if reqs := h.openai.Requests(); !sentTo(reqs[before+2], `{\"error\":\"loop\"}`) {
		t.Errorf("X asking back Y was not refused as a loop: %s", reqs[before+2].Raw)
	}
}

// TestAskNotAllowed: an agent outside settings.agents.allow cannot be
// asked, another account's agent cannot be allowed (400 naming the entry)
// nor asked by its id, and a name two allowed agents share is ambiguous.
func TestAskNotAllowed(t *testing.T) {
	h := newHarness(t)
	b := h.createAgent(pricedAgent("B", nil))
	c := h.createAgent(pricedAgent("C", nil))
	a := h.createAgent(pricedAgent("A", allowing(b)))
	h.newAccount("other", domain.TierEnterprise)
	otherKey := h.newKey("other", domain.ScopeWrite)
	res := h.do(request{method: "POST", path: "/v1/agents", key: otherKey, body: pricedAgent("Theirs", nil)})
	if res.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Code, res.Body)
	}
	theirs := res.Data(t)["id"].(string)

	for _, body := range []map[string]any{pricedAgent("A2", allowing(b, theirs)), pricedAgent("A3", allowing(b, "agent_unknown"))} {
		res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: body})
		if res.Code != http.StatusBadRequest || res.Details(t)["field"] != "settings.agents.allow[1]" {
			t.Errorf("allow of another account's or an unknown agent: %d %s", res.Code, res.Body)
		}
	}
	res = h.do(request{method: "PATCH", path: "/v1/agents/" + a, key: h.writeKey, body: map[string]any{"settings": allowing(theirs)}})
	if res.Code != http.StatusBadRequest || res.Details(t)["field"] != "settings.agents.allow[0]" {
		t.Errorf("patch allowing another account's agent: %d %s", res.Code, res.Body)
	}

	for _, who := range []string{"C", c, theirs} {
		before := h.openai.Count()
		h.openai.Enqueue(askCall(who, "q"), llmtest.Reply{Text: "Could not."})
		if res := h.send(a, map[string]any{"text": "go", "userId": "u"}); res.Code != http.StatusOK {
			t.Fatalf("send: %d %s", res.Code, res.Body)
		}
		if reqs := h.openai.Requests(); len(reqs) != before+2 || !sentTo(reqs[before+1], "not allowed") {
			t.Errorf("ask of %s was not refused: %d requests, last %s", who, len(reqs)-before, reqs[len(reqs)-1].Raw)
		}
	}
	if runs := h.items(h.get("/v1/agents/" + c + "/runs")); len(runs) != 0 {
		t.Errorf("C has %d runs, want none", len(runs))
	}

	// A name two allowed agents share is ambiguous; their ids are not.
	twin := h.createAgent(pricedAgent("B", nil))
	both := h.createAgent(pricedAgent("Both", allowing(b, twin)))
	before := h.openai.Count()
	h.openai.Enqueue(askCall("b", "q"), llmtest.Reply{Text: "Which B?"})
	if res := h.send(both, map[string]any{"text": "go", "userId": "u"}); res.Code != http.StatusOK {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	if reqs := h.openai.Requests(); len(reqs) != before+2 || !sentTo(reqs[before+1], `{\"error\":\"ambiguous\"}`) {
		t.Errorf("ask of a shared name was not ambiguous: %s", reqs[len(reqs)-1].Raw)
	}
}

// servedHarness is a second agentd (its own store, turns and provider)
// listening on loopback, as a remote A2A peer.
func servedHarness(t *testing.T) (*harness, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	h := newHarness(t, func(c *harnessConfig) { c.PublicURL = base + "/v1" })
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h.srv.Handler(), ReadHeaderTimeout: 5 * time.Second}}
	srv.Start()
	t.Cleanup(srv.Close)
	return h, base
}

// eventually reports whether ok holds within 10 seconds.
func eventually(ok func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return false
}

// withRemotes gives a harness's turns the A2A client, loopback allowed.
func withRemotes(c *harnessConfig) { c.Turn.Remotes = a2a.NewClient(5*time.Second, true) }

// TestAskRemoteAgent: A asks an agent a second agentd serves over A2A 1.0,
// its card read with the remote's headers; the reply reaches A's model, the
// run lists the remote ask, and the headers are masked secrets.
func TestAskRemoteAgent(t *testing.T) {
	peer, base := servedHarness(t)
	r := peer.createAgent(pricedAgent("Remote billing", nil))
	h := newHarness(t, withRemotes)
	card := base + "/v1/agents/" + r + "/a2a/.well-known/agent-card.json"
	a := h.createAgent(pricedAgent("Support", map[string]any{"agents": map[string]any{"remote": map[string]any{
		"billing": map[string]any{"url": card, "headers": map[string]any{"Authorization": "Bearer " + peer.writeKey}}}}}))

	peer.openai.Enqueue(llmtest.Reply{Text: "Remote says Ann owes 42."})
	h.openai.Enqueue(askCall("billing", "What does Ann owe?"), llmtest.Reply{Text: "Ann owes 42."})
	res := h.send(a, map[string]any{"text": "What do I owe?", "userId": "ann"})
	if res.Code != http.StatusOK {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	if last := h.openai.Last(t); !sentTo(last, "Remote says Ann owes 42.") {
		t.Fatalf("the remote's reply did not reach A's model: %s", last.Raw)
	}
	if got := peer.openai.Last(t); !sentTo(got, "What does Ann owe?") {
		t.Errorf("the remote's model did not get the question: %s", got.Raw)
	}
	run := h.get("/v1/agents/" + a + "/runs/" + res.Data(t)["runId"].(string)).Data(t)
	children, _ := run["children"].([]any)
	if len(children) != 1 {
		t.Fatalf("children = %v", run["children"])
	}
	if child := children[0].(map[string]any); child["id"] != nil || child["agent"] != "billing" || child["status"] != "completed" {
		t.Errorf("remote child = %v", child)
	}
	got := h.get("/v1/agents/" + a).Data(t)
	remote := got["settings"].(map[string]any)["agents"].(map[string]any)["remote"].(map[string]any)["billing"].(map[string]any)
	if remote["headers"].(map[string]any)["Authorization"] != domain.SecretMask {
		t.Errorf("remote headers shown as %v", remote["headers"])
	}
	// Sent back masked, the stored header is kept: the next ask still
	// passes the peer's key check.
	if res := h.do(request{method: "PATCH", path: "/v1/agents/" + a, key: h.writeKey, body: map[string]any{"settings": got["settings"]}}); res.Code != http.StatusOK {
		t.Fatalf("patch with the mask: %d %s", res.Code, res.Body)
	}
	peer.openai.Enqueue(llmtest.Reply{Text: "Still 42."})
	h.openai.Enqueue(askCall("billing", "Again?"), llmtest.Reply{Text: "Still 42."})
	if res := h.send(a, map[string]any{"text": "Again?", "userId": "ann"}); res.Code != http.StatusOK {
		t.Fatalf("send after the patch: %d %s", res.Code, res.Body)
	}
	if last := h.openai.Last(t); !sentTo(last, `\"response\":\"Still 42.\"`) {
		t.Errorf("the ask after a masked patch did not reach the peer: %s", last.Raw)
	}

	// An ask going on shows as running.
	peer.openai.Enqueue(llmtest.Reply{Text: "Slowly, 42.", Delay: 2 * time.Second})
	h.openai.Enqueue(askCall("billing", "Slowly?"), llmtest.Reply{Text: "42."})
	res = h.send(a, map[string]any{"text": "Slowly?", "userId": "ann", "background": true})
	if res.Code != http.StatusAccepted {
		t.Fatalf("background send: %d %s", res.Code, res.Body)
	}
	slow := res.Data(t)["id"].(string)
	if !eventually(func() bool {
		children, _ := h.run(a, slow, 0)["children"].([]any)
		return len(children) == 1 && children[0].(map[string]any)["status"] == "running"
	}) {
		t.Errorf("the remote ask going on is not shown running: %v", h.run(a, slow, 0)["children"])
	}
	if run := h.run(a, slow, 10); run["status"] != "completed" || run["children"].([]any)[0].(map[string]any)["status"] != "completed" {
		t.Errorf("after the remote answered: %v", run)
	}

	res = h.do(request{method: "PATCH", path: "/v1/agents/" + a, key: h.writeKey, body: map[string]any{"settings": map[string]any{
		"agents": map[string]any{"remote": map[string]any{"billing": map[string]any{"url": "ftp://example.com/card"}}}}}})
	if res.Code != http.StatusBadRequest || res.Details(t)["field"] != "settings.agents.remote.billing.url" {
		t.Errorf("a remote that is not http(s): %d %s", res.Code, res.Body)
	}
}

// TestAskWaitsThroughTheChildsApproval: while the asked run waits for a
// decision on its tool call, the asking run stays running; once decided,
// the asked run's reply reaches the asking model.
func TestAskWaitsThroughTheChildsApproval(t *testing.T) {
	h := newHarness(t)
	handler := newPriceHandler(t)
	b := h.toolAgent(handler.URL, map[string]any{"requiresApproval": true})
	a := h.createAgent(pricedAgent("Desk", allowing(b)))
	h.openai.Enqueue(askCall(b, "Price of SOL?"), priceCall, llmtest.Reply{Text: "SOL is at 142."}, llmtest.Reply{Text: "Trader says 142."})
	res := h.send(a, map[string]any{"text": "SOL?", "userId": "u1", "background": true})
	if res.Code != http.StatusAccepted {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	runID := res.Data(t)["id"].(string)
	var waiting map[string]any
	if !eventually(func() bool {
		runs := h.items(h.get("/v1/agents/" + b + "/runs?status=requires_action"))
		if len(runs) == 1 {
			waiting = runs[0]
		}
		return waiting != nil
	}) {
		t.Fatal("the asked run never waited for its approval")
	}
	if run := h.run(a, runID, 0); run["status"] != "running" {
		t.Errorf("the asking run is %v while its ask waits for an approval, want running", run["status"])
	}
	call := waitingCall(t, waiting)
	if res := h.do(request{method: "POST", path: "/v1/agents/" + b + "/runs/" + waiting["id"].(string) + "/approvals",
		key: h.writeKey, body: map[string]any{"decisions": []map[string]any{{"callId": call["id"], "approve": true}}}}); res.Code != http.StatusOK {
		t.Fatalf("approve: %d %s", res.Code, res.Body)
	}
	if run := h.run(a, runID, 10); run["status"] != "completed" {
		t.Fatalf("asking run = %v", run)
	}
	if last := h.openai.Last(t); !sentTo(last, "SOL is at 142.") {
		t.Errorf("the asked run's reply did not reach the asking model: %s", last.Raw)
	}
}

// TestAskWithinTheAskedAgentsBudget: the asked agent's perUserDaily holds
// the asking agent as its user; once that is spent, the ask is refused
// with BUDGET_EXCEEDED as the tool result, and the refused run is a
// failed child of the asking run.
func TestAskWithinTheAskedAgentsBudget(t *testing.T) {
	h := newHarness(t)
	b := h.createAgent(pricedAgent("Billing", map[string]any{"budget": map[string]any{"perUserDaily": 0.0001}}))
	a := h.createAgent(pricedAgent("Support", allowing(b)))
	h.openai.Enqueue(askCall("Billing", "first"), llmtest.Reply{Text: "First answer.", PromptTokens: 50, CompletionTokens: 5},
		llmtest.Reply{Text: "Done."}, askCall("Billing", "second"), llmtest.Reply{Text: "Refused."})
	for _, text := range []string{"one", "two"} {
		if res := h.send(a, map[string]any{"text": text, "userId": "ann"}); res.Code != http.StatusOK {
			t.Fatalf("send %s: %d %s", text, res.Code, res.Body)
		}
	}
	if last := h.openai.Last(t); !sentTo(last, "BUDGET_EXCEEDED") {
		t.Fatalf("the second ask was not refused by Billing's budget: %s", last.Raw)
	}
	runs := h.items(h.get("/v1/agents/" + b + "/runs"))
	if len(runs) != 2 || runs[0]["status"] != "failed" || runs[0]["userId"] != a || runs[0]["parentRunId"] == nil {
		t.Errorf("Billing's runs = %v, want the refused one failed, asked by %s", runs, a)
	}
}

// TestAskStopsWithTheAskingRun: cancelling the asking run cancels the run
// it is waiting for.
func TestAskStopsWithTheAskingRun(t *testing.T) {
	h := newHarness(t)
	b := h.createAgent(pricedAgent("Slow", nil))
	a := h.createAgent(pricedAgent("Asker", allowing(b)))
	h.openai.Enqueue(askCall("Slow", "take your time"), llmtest.Reply{Hang: true})
	res := h.send(a, map[string]any{"text": "go", "userId": "u1", "background": true})
	if res.Code != http.StatusAccepted {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	runID := res.Data(t)["id"].(string)
	var child map[string]any
	if !eventually(func() bool {
		runs := h.items(h.get("/v1/agents/" + b + "/runs?status=running"))
		if len(runs) == 1 {
			child = runs[0]
		}
		return child != nil
	}) {
		t.Fatal("the asked run never ran")
	}
	if res := h.do(request{method: "POST", path: "/v1/agents/" + a + "/runs/" + runID + "/cancel", key: h.writeKey}); res.Code != http.StatusOK {
		t.Fatalf("cancel: %d %s", res.Code, res.Body)
	}
	if run := h.run(b, child["id"].(string), 10); run["status"] != "cancelled" {
		t.Errorf("the asked run is %v after its asker was cancelled", run["status"])
	}
}

// TestAskDepthAcrossServers: a chain that goes through another agentd
// keeps its bound there: A asks the peer's R, R asks S, and S's ask of T
// is refused as too deep (the message carried the depth in its metadata).
func TestAskDepthAcrossServers(t *testing.T) {
	peer, base := servedHarness(t)
	tt := peer.createAgent(pricedAgent("T", nil))
	s := peer.createAgent(pricedAgent("S", allowing(tt)))
	r := peer.createAgent(pricedAgent("R", allowing(s)))
	h := newHarness(t, withRemotes)
	a := h.createAgent(pricedAgent("A", map[string]any{"agents": map[string]any{"remote": map[string]any{
		"r": map[string]any{"url": base + "/v1/agents/" + r + "/a2a/.well-known/agent-card.json",
			"headers": map[string]any{"Authorization": "Bearer " + peer.writeKey}}}}}))
	h.openai.Enqueue(askCall("r", "q"), llmtest.Reply{Text: "A done."})
	peer.openai.Enqueue(askCall("S", "q"), askCall("T", "q"), llmtest.Reply{Text: "S done."}, llmtest.Reply{Text: "R done."})
	if res := h.send(a, map[string]any{"text": "go", "userId": "u"}); res.Code != http.StatusOK {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	if reqs := peer.openai.Requests(); len(reqs) != 4 || !sentTo(reqs[2], "too deep") {
		t.Errorf("S's ask of T was not refused as too deep: %d requests", len(reqs))
	}
	if runs := peer.items(peer.get("/v1/agents/" + tt + "/runs")); len(runs) != 0 {
		t.Errorf("T has %d runs, want none", len(runs))
	}
	if last := h.openai.Last(t); !sentTo(last, "R done.") {
		t.Errorf("R's reply did not reach A: %s", last.Raw)
	}
}
