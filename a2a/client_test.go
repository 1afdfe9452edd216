package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/turn"
)

// remoteFake is a remote A2A agent: its card, and its JSON-RPC endpoint
// answering each method with the next of its answers.
type remoteFake struct {
	*httptest.Server
	card    func(base string) any
	answers map[string][]string
	mu      sync.Mutex
	seen    []string // method (A2A-Version) Authorization, in order
}

func newRemoteFake(t *testing.T, card func(base string) any, answers map[string][]string) *remoteFake {
	f := &remoteFake{card: card, answers: answers}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *remoteFake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodGet {
		f.seen = append(f.seen, "card "+r.Header.Get("Authorization"))
		_ = json.NewEncoder(w).Encode(f.card(f.URL))
		return
	}
	var req rpcRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.seen = append(f.seen, req.Method+" ("+r.Header.Get("A2A-Version")+") "+r.Header.Get("Authorization"))
	next := f.answers[req.Method]
	if len(next) == 0 {
		http.Error(w, "no answer", http.StatusInternalServerError)
		return
	}
	f.answers[req.Method] = next[1:]
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + next[0] + `}`))
}

func (f *remoteFake) remote() turn.RemoteAgent {
	return turn.RemoteAgent{Name: "fake", URL: f.URL + "/card", Headers: map[string]string{"Authorization": "Bearer t"}}
}

// TestClientSpeaks03WhenTheCardSaysSo: a 0.3 card (its own url, no 1.0
// interface) is asked with message/send, a working task is read again
// with tasks/get until it completes, and the headers go with every
// request, the card's included.
func TestClientSpeaks03WhenTheCardSaysSo(t *testing.T) {
	f := newRemoteFake(t, func(base string) any {
		return map[string]any{"name": "old", "url": base + "/rpc", "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0"}
	}, map[string][]string{
		"message/send": {`{"kind":"task","id":"t1","contextId":"c","status":{"state":"working"}}`},
		"tasks/get": {`{"kind":"task","id":"t1","contextId":"c","status":{"state":"completed"},` +
			`"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"pong"}]}]}`},
	})
	got, err := NewClient(5*time.Second, true).Ask(context.Background(), f.remote(), "ping", 1)
	if err != nil || got != "pong" {
		t.Fatalf("Ask = %q, %v", got, err)
	}
	want := "card Bearer t, message/send (0.3) Bearer t, tasks/get (0.3) Bearer t"
	if seen := strings.Join(f.seen, ", "); seen != want {
		t.Errorf("requests: %s; want %s", seen, want)
	}
}

// TestClientReads1_0Answers: a 1.0 interface is preferred to a 0.3 one;
// a message answer gives its text, a failed task its reason as an error.
func TestClientReads1_0Answers(t *testing.T) {
	f := newRemoteFake(t, func(base string) any {
		return AgentCard{Name: "new", SupportedInterfaces: []AgentInterface{
			{URL: base + "/old", ProtocolBinding: bindingJSONRPC, ProtocolVersion: version03},
			{URL: base + "/rpc", ProtocolBinding: bindingJSONRPC, ProtocolVersion: version10}}}
	}, map[string][]string{"SendMessage": {
		`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hello"}]}}`,
		`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"no provider"}]}}}}`,
	}})
	c := NewClient(5*time.Second, true)
	if got, err := c.Ask(context.Background(), f.remote(), "hi", 1); err != nil || got != "hello" {
		t.Fatalf("Ask = %q, %v", got, err)
	}
	if _, err := c.Ask(context.Background(), f.remote(), "hi", 1); err == nil || !strings.Contains(err.Error(), "failed: no provider") {
		t.Errorf("failed task: %v", err)
	}
	if seen := strings.Join(f.seen, ", "); strings.Count(seen, "card") != 1 || !strings.Contains(seen, "SendMessage (1.0)") {
		t.Errorf("requests: %s; want the card read once, then SendMessage over 1.0", seen)
	}
}

// TestClientKeepsToTheAddressGuard: without allowPrivate a remote on a
// loopback address is refused when dialled, saying so.
func TestClientKeepsToTheAddressGuard(t *testing.T) {
	f := newRemoteFake(t, func(string) any { return map[string]any{} }, nil)
	_, err := NewClient(5*time.Second, false).Ask(context.Background(), f.remote(), "hi", 1)
	if err == nil || !strings.Contains(err.Error(), "address is not allowed") {
		t.Fatalf("Ask of a loopback remote: %v", err)
	}
	if len(f.seen) != 0 {
		t.Errorf("the remote got %v", f.seen)
	}
}
