package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
)

// keyed is req with the Idempotency-Key key.
func keyed(req request, key string) request { return withHeader(req, idempotencyHeader, key) }

func TestIdempotentCreateAgent(t *testing.T) {
	h := newHarness(t)
	create := request{method: "POST", path: "/v1/agents", key: h.writeKey, body: map[string]any{"name": "once", "bio": "b"}}
	first := h.do(keyed(create, "create-1"))
	if first.Code != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Code, first.Body)
	}
	// The same body in another encoding is the same request.
	again := keyed(create, "create-1")
	again.body = `{ "bio": "b",  "name": "once" }`
	second := h.do(again)
	if second.Code != http.StatusCreated || !bytes.Equal(second.Body, first.Body) ||
		second.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("replay: %d %s (Location %q); want the first answer %s (Location %q)",
			second.Code, second.Body, second.Header.Get("Location"), first.Body, first.Header.Get("Location"))
	}
	if second.Header.Get("X-RateLimit-Remaining") == "" {
		t.Error("a replay lacks the rate-limit headers")
	}
	if _, n, err := h.store.Agents().ListAgents(context.Background(), h.account.ID, domain.ListQuery{Page: 1, Limit: 100}); err != nil || n != 1 {
		t.Fatalf("%d agents (%v); want one", n, err)
	}
	// Another body under the same key.
	other := keyed(create, "create-1")
	other.body = map[string]any{"name": "twice"}
	if res := h.do(other); res.Code != http.StatusUnprocessableEntity || res.ErrorCode(t) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("another body: %d %s", res.Code, res.Body)
	}
	// Another account's same key is its own.
	h.newAccount("elsewhere", domain.TierPro)
	key := h.newKey("elsewhere", domain.ScopeWrite)
	theirs := keyed(create, "create-1")
	theirs.key = key
	if res := h.do(theirs); res.Code != http.StatusCreated || res.Data(t)["id"] == first.Data(t)["id"] {
		t.Fatalf("another account: %d %s", res.Code, res.Body)
	}
	// A refused request keeps nothing: its retry runs afresh.
	bad := keyed(request{method: "POST", path: "/v1/agents/agent_missing/memories", key: h.writeKey,
		body: map[string]any{"text": "x"}}, "missing-1")
	for range 2 {
		if res := h.do(bad); res.Code != http.StatusNotFound {
			t.Fatalf("missing agent: %d %s", res.Code, res.Body)
		}
	}
}

func TestIdempotencyKeyMalformed(t *testing.T) {
	h := newHarness(t)
	for name, key := range map[string]string{"empty": "", "long": strings.Repeat("k", 256), "unicode": "clé", "control": "a\tb"} {
		t.Run(name, func(t *testing.T) {
			res := h.with(t).do(keyed(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: map[string]any{"name": "x"}}, key))
			if res.Code != http.StatusBadRequest || res.ErrorCode(t) != "INVALID_REQUEST" || res.Details(t)["field"] != idempotencyHeader {
				t.Fatalf("%d %s; want 400 naming %s", res.Code, res.Body, idempotencyHeader)
			}
		})
	}
	if res := h.do(keyed(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: map[string]any{"name": "x"}},
		strings.Repeat("k", 255))); res.Code != http.StatusCreated {
		t.Fatalf("a 255-character key: %d %s", res.Code, res.Body)
	}
}

func TestIdempotentSendMessage(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "talker"})
	send := keyed(request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey,
		body: map[string]any{"text": "hello", "userId": "u1"}}, "msg-1")
	before := h.openai.Count()
	first := h.do(send)
	second := h.do(send)
	if first.Code != http.StatusOK || second.Code != http.StatusOK || !bytes.Equal(first.Body, second.Body) {
		t.Fatalf("first %d %s, second %d %s; want one answer twice", first.Code, first.Body, second.Code, second.Body)
	}
	if n := h.openai.Count() - before; n != 1 {
		t.Fatalf("%d provider calls; want 1", n)
	}
	// The same key on another agent is another request.
	other := h.createAgent(map[string]any{"name": "other"})
	moved := send
	moved.path = "/v1/agents/" + other + "/messages"
	if res := h.do(moved); res.Code != http.StatusUnprocessableEntity {
		t.Fatalf("another path: %d %s", res.Code, res.Body)
	}
}

// sendWhileOthersWait sends req in the background and returns once the
// provider got its call (calls were made before), that is once req holds
// its key; answer waits for req's response.
func (h *harness) sendWhileOthersWait(req request, calls int) (answer func() response) {
	var res response
	done := make(chan struct{})
	go func() {
		defer close(done)
		res = h.do(req)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for h.openai.Count() == calls && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return func() response {
		<-done
		return res
	}
}

// TestIdempotentConcurrentRequest: a repeat while the first request runs
// is 409, however many leases the first outlives (it renews its key), and
// the provider is called once.
func TestIdempotentConcurrentRequest(t *testing.T) {
	// Renewed every 133 ms: a renewal may come 260 ms late (a busy machine,
	// the race detector) before the key would be taken over. The repeat
	// comes past three leases.
	h := newHarness(t, func(c *harnessConfig) { c.IdempotencyLease = 400 * time.Millisecond })
	testKeyedMessageRunsOnce(t, h, h, 2*time.Second, 1300*time.Millisecond)
}

// testKeyedMessageRunsOnce sends a keyed message whose reply takes delay,
// plain and streamed, to a and, wait later while it runs, again to b: 409
// IDEMPOTENCY_KEY_IN_USE; once it ended, b replays its answer; the
// provider was called once.
func testKeyedMessageRunsOnce(t *testing.T, a, b *harness, delay, wait time.Duration) {
	for _, path := range []string{"/messages", "/messages/stream"} {
		t.Run(path, func(t *testing.T) {
			a, b := a.with(t), b.with(t)
			id := a.createAgent(map[string]any{"name": "slow"})
			a.openai.Respond(llmtest.Reply{Text: "once", Delay: delay})
			calls := a.openai.Count()
			send := keyed(request{method: "POST", path: "/v1/agents/" + id + path, key: a.writeKey,
				body: map[string]any{"text": "hello"}}, "once"+path)
			answer := a.sendWhileOthersWait(send, calls)
			time.Sleep(wait)
			if res := b.do(send); res.Code != http.StatusConflict || res.ErrorCode(t) != "IDEMPOTENCY_KEY_IN_USE" {
				t.Fatalf("while the first runs: %d %s", res.Code, res.Body)
			}
			first := answer()
			// A stream's key is settled just after its last event.
			testutil.Eventually(t, "the first answer replayed", func() error {
				res := b.do(send)
				if first.Code != http.StatusOK || res.Code != http.StatusOK || !bytes.Equal(res.Body, first.Body) {
					return fmt.Errorf("first %d %s, replayed %d %s", first.Code, first.Body, res.Code, res.Body)
				}
				return nil
			})
			if n := a.openai.Count() - calls; n != 1 {
				t.Fatalf("%d provider calls; want 1", n)
			}
		})
	}
}

func TestIdempotentCreateWebhook(t *testing.T) {
	h := newHarness(t)
	create := keyed(request{method: "POST", path: "/v1/webhooks", key: h.writeKey,
		body: map[string]any{"url": "https://hooks.example.com/a", "events": []string{"message.completed"}}}, "hook-1")
	first, second := h.do(create), h.do(create)
	if first.Code != http.StatusCreated || second.Code != http.StatusCreated || !bytes.Equal(first.Body, second.Body) {
		t.Fatalf("first %d %s, second %d %s", first.Code, first.Body, second.Code, second.Body)
	}
	if _, n, err := h.store.Webhooks().ListWebhooks(context.Background(), h.account.ID, 1, 100); err != nil || n != 1 {
		t.Fatalf("%d webhooks (%v); want one", n, err)
	}
}

// postgresReplicas boots two servers, each with its own store, on one
// fresh PostgreSQL database.
func postgresReplicas(t *testing.T) (a, b *harness) {
	dsn := storetest.PostgresDSN(t)
	a = newHarnessAt(t, dsn, nil, nil)
	return a, a.secondServer(t, storetest.Open(t, dsn))
}

// TestIdempotentCreatesAcrossReplicas: each keyed create made on one
// replica is replayed on the other with the same answer and one effect;
// another body is 422 there; another account's same key is its own.
func TestIdempotentCreatesAcrossReplicas(t *testing.T) {
	a, b := postgresReplicas(t)
	agentID := a.createAgent(map[string]any{"name": "holder"})
	other := a.newKey(a.newAccount("other", domain.TierEnterprise).Name, domain.ScopeWrite)
	otherAgent := a.with(t)
	otherAgent.writeKey = other
	otherAgentID := otherAgent.createAgent(map[string]any{"name": "holder"})
	for _, tc := range []struct {
		name, path, otherPath string
		body, changed         map[string]any
	}{
		{"agent", "/v1/agents", "/v1/agents", map[string]any{"name": "moved"}, map[string]any{"name": "moved2"}},
		{"webhook", "/v1/webhooks", "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/a", "events": []string{"message.completed"}},
			map[string]any{"url": "https://hooks.example.com/b", "events": []string{"message.completed"}}},
		{"memory", "/v1/agents/" + agentID + "/memories", "/v1/agents/" + otherAgentID + "/memories",
			map[string]any{"text": "likes tea"}, map[string]any{"text": "likes coffee"}},
		{"knowledge", "/v1/agents/" + agentID + "/knowledge", "/v1/agents/" + otherAgentID + "/knowledge",
			map[string]any{"name": "a.md", "text": "alpha"}, map[string]any{"name": "b.md", "text": "beta"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := a.with(t), b.with(t)
			before := totalItems(t, a.get(tc.path))
			create := keyed(request{method: "POST", path: tc.path, key: a.writeKey, body: tc.body}, "move-"+tc.name)
			first, replayed := a.do(create), b.do(create)
			if first.Code != http.StatusCreated || replayed.Code != http.StatusCreated || !bytes.Equal(first.Body, replayed.Body) {
				t.Fatalf("first %d %s, replayed %d %s", first.Code, first.Body, replayed.Code, replayed.Body)
			}
			if n := totalItems(t, b.get(tc.path)) - before; n != 1 {
				t.Fatalf("%d created; want 1", n)
			}
			changed := create
			changed.body = tc.changed
			if res := b.do(changed); res.Code != http.StatusUnprocessableEntity || res.ErrorCode(t) != "IDEMPOTENCY_KEY_REUSED" {
				t.Fatalf("another body: %d %s", res.Code, res.Body)
			}
			theirs := create
			theirs.path, theirs.key = tc.otherPath, other
			if res := b.do(theirs); res.Code != http.StatusCreated || bytes.Equal(res.Body, first.Body) {
				t.Fatalf("another account's same key: %d %s", res.Code, res.Body)
			}
		})
	}
}

// totalItems is pagination.totalItems of a list answer.
func totalItems(t *testing.T, res response) int {
	t.Helper()
	p, ok := res.Data(t)["pagination"].(map[string]any)
	if !ok {
		t.Fatalf("no pagination: %d %s", res.Code, res.Body)
	}
	return int(p["totalItems"].(float64))
}

// TestIdempotencyAcrossReplicas runs two servers on one PostgreSQL
// database: a key claimed on one is in use, then replayed, on the other.
func TestIdempotencyAcrossReplicas(t *testing.T) {
	a, b := postgresReplicas(t)
	testKeyedMessageRunsOnce(t, a, b, 500*time.Millisecond, 0)
}

// TestIdempotentReplayAfterKeyRotation: the documented rolling rotation
// (k1 → k2,k1 with `secrets rotate` → k2 alone) keeps a keyed Create
// Webhook answered under k1 replayable: the same answer, not a 500
// (security review N6).
func TestIdempotentReplayAfterKeyRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	k1, k2 := storetest.Key(), storetest.Key()
	h := newHarnessAt(t, path, []store.Option{store.WithSecretBox(storetest.BoxOf(t, k1))}, nil)
	create := keyed(request{method: "POST", path: "/v1/webhooks", key: h.writeKey,
		body: map[string]any{"url": "https://hooks.example.com/in", "events": []string{"*"}}}, "rot-webhook-1")
	first := h.do(create)
	if first.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", first.Code, first.Body)
	}
	rotating := storetest.Open(t, path, store.WithSecretBox(storetest.BoxOf(t, k2, k1)))
	_, err := rotating.Agents().RotateSecrets(context.Background(), nil)
	testutil.OK(t, err)
	after := h.secondServer(t, storetest.Open(t, path, store.WithSecretBox(storetest.BoxOf(t, k2))))
	replay := after.do(create)
	if replay.Code != http.StatusCreated || !bytes.Equal(replay.Body, first.Body) {
		t.Fatalf("replay after the rotation: %d %s, want %d %s", replay.Code, replay.Body, first.Code, first.Body)
	}
}
