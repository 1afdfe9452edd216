package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store/storetest"
)

// resumeBound is how soon after its replica died a run is finished
// elsewhere (the spec's "Durability": resumed within 60 s).
const resumeBound = 60 * time.Second

// TestRunSurvivesSIGKILLOfItsReplica: two replicas on one PostgreSQL
// database; a background run's second tool call is in flight when its
// replica is killed with SIGKILL. The other replica finishes the run
// within a minute, from its stored steps: the first tool call is not made
// again, the run counts two starts, and the exchange is stored once, with
// both calls. Nothing here depends on which mechanism picks the run up.
func TestRunSurvivesSIGKILLOfItsReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes and waits for a lost run's beat to time out (about 45 s)")
	}
	db := storetest.PostgresDSN(t)
	action := newHeldAction(t, "B")
	openai := llmtest.NewOpenAI(t)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + openai.URL, "AGENTD_ALLOW_PRIVATE_NETWORKS=true"}
	first := spawn(t, db, env...)
	key := keyFrom(t, first.stdout.String())
	second := spawn(t, db, env...)
	c1, c2 := newClient(t, first.base), newClient(t, second.base)

	r := c1.do("POST", "/v1/agents", key, map[string]any{"name": "Resumer", "modelProvider": "openai", "model": "gpt-4o-mini",
		"actions": []any{map[string]any{"name": "lookup", "description": "Look a letter up", "examples": []string{}, "handler": action.URL}}})
	expect(t, "create the agent", r, 201, "")
	agentID := r.data(t)["id"].(string)
	const answer = "A and B are looked up."
	openai.Respond(llmtest.Reply{Text: answer})
	openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "lookup", Arguments: `{"input":"A"}`}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "lookup", Arguments: `{"input":"B"}`}}})

	r = c1.do("POST", "/v1/agents/"+agentID+"/messages", key, map[string]any{"text": "look A then B up", "userId": "kim", "background": true})
	expect(t, "background send", r, 202, "")
	accepted := r.data(t)
	runPath := "/v1/agents/" + agentID + "/runs/" + accepted["id"].(string)
	select {
	case <-action.held:
	case <-time.After(30 * time.Second):
		t.Fatalf("call B never reached the handler; calls %v, run %v", action.callIDs(), c1.do("GET", runPath, key, nil).data(t))
	}
	first.kill(t)
	killed := time.Now()
	action.unhold() // the resumed call is answered

	run := awaitRunEnd(t, c2, second, key, runPath, killed.Add(resumeBound))
	t.Logf("the run completed on the other replica %s after the kill", time.Since(killed).Round(time.Millisecond))
	if run["status"] != "completed" {
		t.Fatalf("run after the kill = %v, want completed", run)
	}
	handled := action.callIDs()
	if len(handled["A"]) != 1 || len(handled["B"]) != 2 || handled["B"][0] != handled["B"][1] {
		t.Errorf("handler calls %v, want A once (finished before the kill) and B twice (in flight at the kill, then resumed) with one callId", handled)
	}
	if run["attempts"] != 2.0 {
		t.Errorf("attempts %v, want 2", run["attempts"])
	}
	// The provider was asked for A, for B, and, once resumed, for the
	// answer, which is given both results: no finished step asked again.
	asked := openai.Requests()
	last := string(asked[len(asked)-1].Raw)
	if len(asked) != 3 || !strings.Contains(last, `\"letter\":\"A\"`) || !strings.Contains(last, `\"letter\":\"B\"`) {
		t.Errorf("the provider got %d requests, want 3, the last with both results; the last: %s", len(asked), last)
	}
	reply, _ := run["reply"].(map[string]any)
	if reply["messageId"] != accepted["messageId"] || reply["response"] != answer {
		t.Errorf("run reply %v, want message %v answering %q", reply, accepted["messageId"], answer)
	}

	msgs := conversationMessages(t, c2, key, agentID, accepted["conversationId"].(string))
	if len(msgs) != 2 || msgs[0]["role"] != "user" || msgs[1]["role"] != "agent" {
		t.Fatalf("history %v, want the user's message and one reply", msgs)
	}
	stored := msgs[1]
	if stored["messageId"] != accepted["messageId"] || stored["text"] != answer {
		t.Errorf("stored reply %v, want %v answering %q", stored, accepted["messageId"], answer)
	}
	meta, _ := stored["metadata"].(map[string]any)
	calls, _ := meta["toolCalls"].([]any)
	var inputs []string
	for _, c := range calls {
		call, _ := c.(map[string]any)
		args, _ := call["arguments"].(map[string]any)
		input := fmt.Sprint(args["input"])
		inputs = append(inputs, input)
		// The id a handler was given is the one the history shows, across
		// the resume too: a handler can tell a call made again.
		if call["name"] != "lookup" || call["ok"] != true || len(handled[input]) == 0 || call["id"] != handled[input][0] {
			t.Errorf("tool call %v, want a successful lookup whose id the handler got (%v)", call, handled[input])
		}
	}
	if strings.Join(inputs, ",") != "A,B" {
		t.Errorf("the reply's tool calls look up %v, want A then B", inputs)
	}
	second.stop(t)
}

// awaitRunEnd follows the run at path on the replica p (through c) until
// it ended, and returns it; it fails at once when the run ends otherwise
// than completed or p dies, and when deadline passes.
func awaitRunEnd(t *testing.T, c *client, p *process, key, path string, deadline time.Time) map[string]any {
	t.Helper()
	var run map[string]any
	for {
		select {
		case <-p.done:
			t.Fatalf("the replica left died; stderr:\n%s", p.stderr)
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("run not ended within %s of the kill: %v", resumeBound, run)
		}
		// ?wait holds the answer until the run ends: no busy polling.
		run = c.do("GET", fmt.Sprintf("%s?wait=%d", path, max(1, min(10, int(left/time.Second)))), key, nil).data(t)
		switch run["status"] {
		case "queued", "running":
		case "completed":
			return run
		default:
			t.Fatalf("run ended %v, want completed: %v", run["status"], run)
		}
	}
}

// heldAction is an action handler that keeps the callIds of its calls by
// the input they look up, and holds the calls looking up one input, signalling each on
// held, until unhold (or until their caller goes away).
type heldAction struct {
	*httptest.Server
	held     chan struct{}
	release  chan struct{}
	released sync.Once
	mu       sync.Mutex
	calls    map[string][]string // input: callIds in arrival order
}

func newHeldAction(t *testing.T, holdInput string) *heldAction {
	a := &heldAction{held: make(chan struct{}, 1), release: make(chan struct{}), calls: map[string][]string{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var call struct {
			Data struct {
				CallID    string                 `json:"callId"`
				Arguments struct{ Input string } `json:"arguments"`
			} `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&call); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		input := call.Data.Arguments.Input
		a.mu.Lock()
		a.calls[input] = append(a.calls[input], call.Data.CallID)
		a.mu.Unlock()
		if input == holdInput {
			select {
			case a.held <- struct{}{}:
			default:
			}
			select {
			case <-a.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"letter":"`+input+`","found":true}`)
	}))
	t.Cleanup(func() { a.unhold(); a.Close() })
	return a
}

func (a *heldAction) unhold() { a.released.Do(func() { close(a.release) }) }

// callIDs are the callIds of the calls that looked up each input.
func (a *heldAction) callIDs() map[string][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][]string, len(a.calls))
	for k, v := range a.calls {
		out[k] = slices.Clone(v)
	}
	return out
}
