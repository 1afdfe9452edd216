package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/turn"
)

// fakeReplier answers through function fields; Stream uses stream when
// set, else generate.
type fakeReplier struct {
	generate func(context.Context, llm.Request) (llm.Reply, error)
	stream   func(context.Context, llm.Request, func(string) error) (llm.Reply, error)
}

var _ turn.Model = fakeReplier{}

func (f fakeReplier) Generate(ctx context.Context, req llm.Request) (llm.Reply, error) {
	return f.generate(ctx, req)
}

func (f fakeReplier) Configured(string, string) error { return nil }

func (f fakeReplier) Stream(ctx context.Context, req llm.Request, onToken func(string) error) (llm.Reply, error) {
	if f.stream != nil {
		return f.stream(ctx, req, onToken)
	}
	return f.generate(ctx, req)
}

func TestInternalErrorsHideTheirDetail(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) {
		c.Turn.Model = fakeReplier{generate: func(context.Context, llm.Request) (llm.Reply, error) {
			return llm.Reply{}, errors.New("secret database password is hunter2")
		}}
	})
	id := h.createAgent(map[string]any{"name": "x"})
	res := h.send(id, map[string]any{"text": "hi"})
	if res.Code != 500 || res.ErrorCode(t) != "INTERNAL_ERROR" || strings.Contains(string(res.Body), "hunter2") {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	if !strings.Contains(string(res.Body), res.Header.Get("X-Request-ID")) {
		t.Errorf("message does not name the request id: %s", res.Body)
	}
	h.model.set(fakeReplier{generate: func(context.Context, llm.Request) (llm.Reply, error) { panic("boom") }})
	if res := h.send(id, map[string]any{"text": "hi"}); res.Code != 500 || strings.Contains(string(res.Body), "boom") {
		t.Fatalf("panic: %d %s", res.Code, res.Body)
	}
}

func TestRequestIDAndProbes(t *testing.T) {
	h := newHarness(t)
	res := h.do(request{method: "GET", path: "/v1/agents", key: h.readKey, header: map[string]string{"X-Request-ID": "trace-42"}})
	if res.Header.Get("X-Request-ID") != "trace-42" {
		t.Errorf("request id not echoed: %q", res.Header.Get("X-Request-ID"))
	}
	res = h.do(request{method: "GET", path: "/v1/agents", key: h.readKey, header: map[string]string{"X-Request-ID": "bad id\twith tab"}})
	if id := res.Header.Get("X-Request-ID"); id == "" || strings.Contains(id, " ") {
		t.Errorf("unsafe request id kept: %q", id)
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200} {
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d", path, rec.Code)
		}
		if path == "/metrics" && !strings.Contains(rec.Body.String(), "agentd_http_requests_total") {
			t.Errorf("metrics lack request counts")
		}
	}
	_ = h.store.Close()
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("readyz with the database closed: %d", rec.Code)
	}
}

func TestKeyExpiryAndRevocation(t *testing.T) {
	h := newHarness(t)
	inAnHour := time.Now().Add(time.Hour)
	expiring, _, err := h.store.Accounts().CreateKey(context.Background(), "acme", domain.ScopeWrite, &inAnHour)
	if err != nil {
		t.Fatal(err)
	}
	if res := h.do(request{method: "GET", path: "/v1/agents", key: expiring}); res.Code != 200 {
		t.Fatalf("fresh key: %d", res.Code)
	}
	revoked := h.newKey("acme", domain.ScopeWrite)
	if _, err := h.store.Accounts().RevokeKey(context.Background(), revoked[:12]); err != nil {
		t.Fatal(err)
	}
	res := h.do(request{method: "GET", path: "/v1/agents", key: revoked})
	if res.Code != 401 || res.ErrorCode(t) != "UNAUTHORIZED" || !strings.Contains(res.JSON(t)["error"].(map[string]any)["message"].(string), "API key") {
		t.Fatalf("revoked key: %d %s", res.Code, res.Body)
	}
}

func TestChunkedBodyOverTheCapIs413(t *testing.T) {
	h := newHarness(t)
	body := io.MultiReader(strings.NewReader(`{"name":"a","bio":["` + strings.Repeat("x", 1<<20) + `"]}`))
	req := httptest.NewRequest("POST", "/v1/agents", body)
	req.ContentLength = -1 // unknown length: only reading finds the excess
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.writeKey)
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), "PAYLOAD_TOO_LARGE") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// An agent deleted while its turn runs is gone: the client is told so with
// the contract's 404, never a 500 carrying a store sentinel.
func TestAgentDeletedMidTurnIsNotFound(t *testing.T) {
	var h *harness
	h = newHarness(t, func(c *harnessConfig) {
		c.Turn.Model = fakeReplier{generate: func(ctx context.Context, req llm.Request) (llm.Reply, error) {
			p := principalFrom(ctx)
			agents, _, err := h.store.Agents().ListAgents(ctx, p.Account.ID, domain.ListQuery{Page: 1, Limit: 10, SortBy: domain.SortCreatedAt})
			if err != nil || len(agents) != 1 {
				t.Errorf("list during the turn: %v, %d agents", err, len(agents))
				return llm.Reply{}, err
			}
			if _, err := h.store.Agents().DeleteAgent(ctx, p.Account.ID, agents[0].ID, domain.AnyVersion); err != nil {
				t.Errorf("delete during the turn: %v", err)
			}
			return llm.Reply{Text: "too late"}, nil
		}}
	})
	id := h.createAgent(map[string]any{"name": "ephemeral"})
	for _, failing := range []bool{false, true} {
		if failing {
			id = h.createAgent(map[string]any{"name": "ephemeral"})
			generate := h.model.get().(fakeReplier).generate
			h.model.set(fakeReplier{generate: func(ctx context.Context, req llm.Request) (llm.Reply, error) {
				_, _ = generate(ctx, req)
				return llm.Reply{}, &llm.Error{Kind: llm.KindUnavailable, Provider: "openai", Reason: "timed out"}
			}})
		}
		res := h.send(id, map[string]any{"text": "hi"})
		if res.Code != 404 || res.ErrorCode(t) != "AGENT_NOT_FOUND" {
			t.Errorf("provider failing=%v: %d %s", failing, res.Code, res.Body)
		}
	}
}

// A provider failure that ends after the agent was made inactive leaves it
// inactive, and the 503 says so.
func TestFailingTurnKeepsInactiveAgentInactive(t *testing.T) {
	var h *harness
	h = newHarness(t, func(c *harnessConfig) {
		c.Turn.Model = fakeReplier{generate: func(ctx context.Context, req llm.Request) (llm.Reply, error) {
			p := principalFrom(ctx)
			agents, _, _ := h.store.Agents().ListAgents(ctx, p.Account.ID, domain.ListQuery{Page: 1, Limit: 10, SortBy: domain.SortCreatedAt})
			inactive := domain.StatusInactive
			if _, _, err := h.store.Agents().UpdateAgent(ctx, p.Account.ID, agents[0].ID, nil, &inactive, domain.AnyVersion); err != nil {
				t.Errorf("deactivate during the turn: %v", err)
			}
			return llm.Reply{}, &llm.Error{Kind: llm.KindRateLimited, Provider: "openai", Reason: "rate limited"}
		}}
	})
	id := h.createAgent(map[string]any{"name": "resting"})
	res := h.send(id, map[string]any{"text": "hi"})
	if res.Code != 503 || res.Details(t)["status"] != "inactive" {
		t.Errorf("%d %s", res.Code, res.Body)
	}
	if st, _ := h.status(id); st != "inactive" {
		t.Errorf("status after the failed turn = %s, want inactive", st)
	}
}

// TestStatusSaysWhichProvidersAreConfigured: GET /status names the
// version, the default provider and, in a fixed order, whether the server
// can call each provider; a read key may ask.
func TestStatusSaysWhichProvidersAreConfigured(t *testing.T) {
	h := newHarnessLLM(t, func(c *llm.Config) { c.Anthropic.APIKey, c.Google.APIKey = "", "" },
		func(c *harnessConfig) { c.Config.Version, c.Config.DefaultProvider = "v9.9.9", "anthropic" })
	res := h.get("/v1/status")
	if res.Code != http.StatusOK {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	data := res.Data(t)
	var got []string
	for _, p := range data["providers"].([]any) {
		p := p.(map[string]any)
		got = append(got, fmt.Sprint(p["name"], "=", p["configured"]))
	}
	want := "openai=true anthropic=false groq=true google=false ollama=true"
	if data["version"] != "v9.9.9" || data["defaultProvider"] != "anthropic" || strings.Join(got, " ") != want {
		t.Errorf("status = %v, providers %v, want %s", data, got, want)
	}
}
