package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
)

// burst is a case of the strategy tests: messages to one conversation a
// few milliseconds apart, sent to the replicas in turn, each waiting for
// its answer.
type burst struct {
	name string
	// strategies is each message's multitaskStrategy.
	strategies []string
	// replies are the provider's, in the order it is asked.
	replies []llmtest.Reply
	// gates say what the next message waits for after each message but the
	// last, so the runs meet in the state the case is about.
	gates []gate
	// answers are what each message is answered.
	answers []answer
	// statuses are the conversation's runs', oldest first.
	statuses string
	// asked is the last user message of each provider request, in order.
	asked []string
	// history is the conversation's texts afterwards, oldest first.
	history string
}

// gate is what a burst waits for before its next message: the provider
// asked for this many replies in all, and this many runs made.
type gate struct{ asked, runs int }

// answer is what a message of a burst is answered: 200 with the reply
// text, or 409 CONVERSATION_BUSY; run is the run it names (its runId or
// details.runId), as the 1-based index of the conversation's runs.
type answer struct {
	code int
	text string
	run  int
}

// The provider replies of the bursts: slow is given while later messages
// arrive (a second and a half is far beyond what accepting them takes);
// stopped is never given, the run being stopped by a later message first.
var (
	slow    = func(text string) llmtest.Reply { return llmtest.Reply{Text: text, Delay: 1500 * time.Millisecond} }
	quick   = func(text string) llmtest.Reply { return llmtest.Reply{Text: text} }
	stopped = llmtest.Reply{Hang: true}
)

// TestMultitaskStrategiesOnTwoReplicas: every strategy holds across two
// replicas of the whole stack over one PostgreSQL database, each with
// its own turn service, so the runs meet only in the database. Two and
// three messages a few milliseconds apart go alternately to each; the
// replies come in order, the runs end as the strategy says, a caller whose
// run another message stopped is answered 409 CONVERSATION_BUSY naming
// the run that replaced it, and the history is what the strategy keeps.
func TestMultitaskStrategiesOnTwoReplicas(t *testing.T) {
	a := newHarnessPostgres(t)
	replicas := []*harness{a, a.otherReplica(t)}
	for _, c := range bursts {
		t.Run(c.name, func(t *testing.T) { testBurst(t, replicas, c) })
	}
}

// TestMultitaskBurstsOnOneReplica: the bursts of
// TestMultitaskStrategiesOnTwoReplicas, every message to one replica.
func TestMultitaskBurstsOnOneReplica(t *testing.T) {
	h := newHarness(t)
	for _, c := range bursts {
		t.Run(c.name, func(t *testing.T) { testBurst(t, []*harness{h}, c) })
	}
}

// bursts are the cases of the strategy tests: each strategy with two and
// three messages, and meeting a queued run. History is in the order
// things happened: a queued run's message dates from its arrival, the
// replies of the runs an interrupt stopped from the stop.
var bursts = []burst{
	{name: "enqueue two", strategies: []string{"enqueue", "enqueue"}, replies: []llmtest.Reply{slow("r1"), quick("r2")},
		gates: []gate{{asked: 1}}, answers: []answer{{200, "r1", 1}, {200, "r2", 2}},
		statuses: "completed,completed", asked: []string{"first", "second"}, history: "first,r1,second,r2"},
	{name: "enqueue three", strategies: []string{"enqueue", "enqueue", "enqueue"}, replies: []llmtest.Reply{slow("r1"), quick("r2"), quick("r3")},
		gates: []gate{{asked: 1}, {asked: 1, runs: 2}}, answers: []answer{{200, "r1", 1}, {200, "r2", 2}, {200, "r3", 3}},
		statuses: "completed,completed,completed", asked: []string{"first", "second", "third"}, history: "first,r1,second,r2,third,r3"},
	{name: "reject two", strategies: []string{"reject", "reject"}, replies: []llmtest.Reply{slow("r1")},
		gates: []gate{{asked: 1}}, answers: []answer{{200, "r1", 1}, {409, "", 1}},
		statuses: "completed", asked: []string{"first"}, history: "first,r1"},
	{name: "reject three", strategies: []string{"reject", "reject", "reject"}, replies: []llmtest.Reply{slow("r1")},
		gates: []gate{{asked: 1}, {asked: 1, runs: 1}}, answers: []answer{{200, "r1", 1}, {409, "", 1}, {409, "", 1}},
		statuses: "completed", asked: []string{"first"}, history: "first,r1"},
	{name: "interrupt two", strategies: []string{"interrupt", "interrupt"}, replies: []llmtest.Reply{stopped, quick("r2")},
		gates: []gate{{asked: 1}}, answers: []answer{{409, "", 2}, {200, "r2", 2}},
		statuses: "interrupted,completed", asked: []string{"first", "second"}, history: "first,,second,r2"},
	{name: "interrupt three", strategies: []string{"interrupt", "interrupt", "interrupt"}, replies: []llmtest.Reply{stopped, stopped, quick("r3")},
		gates: []gate{{asked: 1}, {asked: 2}}, answers: []answer{{409, "", 2}, {409, "", 3}, {200, "r3", 3}},
		statuses: "interrupted,interrupted,completed", asked: []string{"first", "second", "third"}, history: "first,,second,,third,r3"},
	{name: "rollback two", strategies: []string{"rollback", "rollback"}, replies: []llmtest.Reply{stopped, quick("r2")},
		gates: []gate{{asked: 1}}, answers: []answer{{409, "", 2}, {200, "r2", 2}},
		statuses: "rolled_back,completed", asked: []string{"first", "second"}, history: "second,r2"},
	{name: "rollback three", strategies: []string{"rollback", "rollback", "rollback"}, replies: []llmtest.Reply{stopped, stopped, quick("r3")},
		gates: []gate{{asked: 1}, {asked: 2}}, answers: []answer{{409, "", 2}, {409, "", 3}, {200, "r3", 3}},
		statuses: "rolled_back,rolled_back,completed", asked: []string{"first", "second", "third"}, history: "third,r3"},
	{name: "merge two", strategies: []string{"merge", "merge"}, replies: []llmtest.Reply{stopped, quick("r2")},
		gates: []gate{{asked: 1}}, answers: []answer{{409, "", 2}, {200, "r2", 2}},
		statuses: "rolled_back,completed", asked: []string{"first", "first\nsecond"}, history: "first\nsecond,r2"},
	{name: "merge three", strategies: []string{"merge", "merge", "merge"}, replies: []llmtest.Reply{stopped, stopped, quick("r3")},
		gates: []gate{{asked: 1}, {asked: 2}}, answers: []answer{{409, "", 2}, {409, "", 3}, {200, "r3", 3}},
		statuses: "rolled_back,rolled_back,completed",
		asked:    []string{"first", "first\nsecond", "first\nsecond\nthird"},
		history:  "first\nsecond\nthird,r3"},
	{name: "rollback behind a queued run", strategies: []string{"enqueue", "enqueue", "rollback"}, replies: []llmtest.Reply{stopped, quick("r3")},
		gates: []gate{{asked: 1}, {asked: 1, runs: 2}}, answers: []answer{{409, "", 3}, {409, "", 3}, {200, "r3", 3}},
		statuses: "rolled_back,rolled_back,completed", asked: []string{"first", "third"}, history: "third,r3"},
	{name: "interrupt behind a queued run", strategies: []string{"enqueue", "enqueue", "interrupt"}, replies: []llmtest.Reply{stopped, quick("r3")},
		gates: []gate{{asked: 1}, {asked: 1, runs: 2}}, answers: []answer{{409, "", 3}, {409, "", 3}, {200, "r3", 3}},
		statuses: "interrupted,interrupted,completed", asked: []string{"first", "third"}, history: "first,second,,,third,r3"},
	{name: "merge into a queued run", strategies: []string{"enqueue", "enqueue", "merge"}, replies: []llmtest.Reply{slow("r1"), quick("r2")},
		gates: []gate{{asked: 1}, {asked: 1, runs: 2}}, answers: []answer{{200, "r1", 1}, {200, "r2", 2}, {200, "r2", 2}},
		statuses: "completed,completed", asked: []string{"first", "second\nthird"}, history: "first,r1,second\nthird,r2"},
}

// testBurst sends c's messages to the replicas on, in turn, and checks what
// they were answered, the runs, what the provider was asked and the
// history.
func testBurst(t *testing.T, on []*harness, c burst) {
	var replicas []*harness
	for _, r := range on {
		replicas = append(replicas, r.with(t))
	}
	h := replicas[0]
	id := h.createAgent(map[string]any{"name": "burst"})
	user := "u-" + strings.ReplaceAll(c.name, " ", "-")
	h.openai.Respond(quick("unexpected"))
	h.openai.Enqueue(c.replies...)
	before := len(h.openai.Requests())
	texts := []string{"first", "second", "third"}
	got := make([]response, len(c.strategies))
	var wg sync.WaitGroup
	for i, strategy := range c.strategies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = replicas[i%len(replicas)].send(id, map[string]any{"text": texts[i], "userId": user, "multitaskStrategy": strategy})
		}()
		if i < len(c.gates) {
			h.burstReached(id, before, c.gates[i])
		}
	}
	wg.Wait()

	runs := h.items(h.get("/v1/runs?agentId=" + id))
	slices.Reverse(runs) // oldest first
	if field(runs, "status") != c.statuses {
		t.Errorf("runs %s, want %s", field(runs, "status"), c.statuses)
	}
	for i, want := range c.answers {
		h.checkAnswer(fmt.Sprint("message ", i+1), got[i], want, runs)
	}
	for i, r := range runs {
		if r["source"] != "api" || r["finishedAt"] == nil {
			t.Errorf("run %d = %v", i+1, r)
		}
		if i > 0 && runs[i-1]["status"] == "completed" && r["startedAt"].(string) < runs[i-1]["finishedAt"].(string) {
			t.Errorf("run %d started at %v, before run %d completed at %v", i+1, r["startedAt"], i, runs[i-1]["finishedAt"])
		}
	}
	if asked := h.askedSince(before); !slices.Equal(asked, c.asked) {
		t.Errorf("the provider was asked %q, want %q", asked, c.asked)
	}
	if got := h.history(id, user); got != c.history {
		t.Errorf("history %q, want %q", got, c.history)
	}
}

// burstReached waits until the provider got g.asked requests since
// before, and the agent has g.runs runs.
func (h *harness) burstReached(agentID string, before int, g gate) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		asked := h.openai.Count() - before
		runs := len(h.items(h.get("/v1/runs?agentId=" + agentID)))
		if asked >= g.asked && runs >= g.runs {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the provider was asked %d times and %d runs were made; waited for %+v", asked, runs, g)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkAnswer checks a message's answer against want, whose run is an
// index in runs, oldest first.
func (h *harness) checkAnswer(what string, res response, want answer, runs []map[string]any) {
	h.t.Helper()
	if res.Code != want.code {
		h.t.Errorf("%s: %d %s, want %d", what, res.Code, res.Body, want.code)
		return
	}
	if want.run > len(runs) {
		h.t.Errorf("%s names run %d of %d", what, want.run, len(runs))
		return
	}
	runID := runs[want.run-1]["id"]
	switch {
	case want.code == http.StatusOK:
		if d := res.Data(h.t); d["response"] != want.text || d["runId"] != runID {
			h.t.Errorf("%s: %s, want %q of run %d (%v)", what, res.Body, want.text, want.run, runID)
		}
	case res.ErrorCode(h.t) != "CONVERSATION_BUSY" || res.Details(h.t)["runId"] != runID:
		h.t.Errorf("%s: %s, want CONVERSATION_BUSY naming run %d (%v)", what, res.Body, want.run, runID)
	}
}

// TestCancelOnAnotherReplica: a run is cancelled through a replica other
// than the one running it, each with its own turn service: a streaming run
// stops there within 5 seconds, what was said stored partial; a queued
// run cancelled through its message never starts, and the conversation
// goes on once the running one is cancelled too.
func TestCancelOnAnotherReplica(t *testing.T) {
	a := newHarnessPostgres(t)
	b := a.otherReplica(t)
	t.Run("streaming", func(t *testing.T) { cancelWhileStreaming(t, a.with(t), b.with(t)) })
	t.Run("queued, by its message", func(t *testing.T) {
		h, other := a.with(t), b.with(t)
		h.openai.Respond(quick("r3"))
		h.openai.Enqueue(stopped)
		id := h.createAgent(map[string]any{"name": "queue"})
		before := h.openai.Count()
		first := h.background(id, "ann", "first", nil)
		h.runningSoon(id, first["id"].(string))
		second := h.background(id, "ann", "second", nil)
		res := other.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/" + second["messageId"].(string) + "/cancel", key: h.writeKey})
		if res.Code != 200 {
			t.Fatalf("message cancel: %d %s", res.Code, res.Body)
		}
		if res := other.do(request{method: "POST", path: "/v1/agents/" + id + "/runs/" + first["id"].(string) + "/cancel", key: h.writeKey}); res.Code != 200 {
			t.Fatalf("run cancel: %d %s", res.Code, res.Body)
		}
		third := h.background(id, "ann", "third", nil)
		if done := h.run(id, third["id"].(string), 10); done["status"] != "completed" {
			t.Errorf("the run after the cancels: %v", done)
		}
		runs := h.items(h.get("/v1/agents/" + id + "/runs"))
		if got := field(runs, "status"); got != "completed,cancelled,cancelled" {
			t.Errorf("runs, newest first: %s", got)
		}
		if asked := h.askedSince(before); !slices.Equal(asked, []string{"first", "third"}) {
			t.Errorf("the provider was asked %q", asked)
		}
	})
}
