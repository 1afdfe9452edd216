package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// benchRequest runs one request through the whole stack per iteration,
// and reports the median request's time as p50-ns: a request that waits
// for the disk (a commit's sync) takes far longer now and then on a
// shared machine, which moves the mean more than the median.
func benchRequest(b *testing.B, h *harness, req request, want int) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, h.httpRequest(req))
		if rec.Code != want {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
}

func BenchmarkGetAgent(b *testing.B) {
	h := newHarness(b)
	id := h.createAgent(character("openai", "gpt-4o-mini"))
	benchRequest(b, h, request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}, http.StatusOK)
}

func BenchmarkListAgents(b *testing.B) {
	h := newHarness(b)
	for i := 0; i < 100; i++ {
		h.createAgent(map[string]any{"name": "agent"})
	}
	benchRequest(b, h, request{method: "GET", path: "/v1/agents?limit=20&page=3&sortBy=name", key: h.readKey}, http.StatusOK)
}

func BenchmarkCreateAndDeleteAgent(b *testing.B) {
	h := newHarness(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		id := h.createAgent(character("openai", "gpt-4o-mini"))
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, h.httpRequest(request{method: "DELETE", path: "/v1/agents/" + id, key: h.writeKey}))
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkUpdateAgent measures a PATCH that changes the agent's bio,
// two values taking turns so every request changes something.
func BenchmarkUpdateAgent(b *testing.B) {
	h := newHarness(b)
	id := h.createAgent(character("openai", "gpt-4o-mini"))
	bios := [2]string{`{"bio":["one"]}`, `{"bio":["two"]}`}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, h.httpRequest(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: bios[i%2]}))
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		i++
	}
}

func BenchmarkSendMessage(b *testing.B) {
	h := newHarness(b)
	h.openai.Unchecked()
	h.openai.Respond(llmtest.Reply{Text: "a short reply", PromptTokens: 10, CompletionTokens: 3})
	id := h.createAgent(character("openai", "gpt-4o-mini"))
	benchRequest(b, h, request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey,
		body: map[string]any{"text": "hello", "userId": "bench"}}, http.StatusOK)
}

// BenchmarkSendMessageConcurrent sends from 16 clients at once, each to
// its own agent and conversation, as the bench's 16-connection point does.
func BenchmarkSendMessageConcurrent(b *testing.B) {
	h := newHarness(b)
	h.openai.Unchecked()
	h.openai.Respond(llmtest.Reply{Text: "a short reply", PromptTokens: 10, CompletionTokens: 3})
	var ids []string
	for range 16 {
		ids = append(ids, h.createAgent(character("openai", "gpt-4o-mini")))
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16 / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := ids[next.Add(1)%int64(len(ids))]
		req := request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey,
			body: map[string]any{"text": "hello", "userId": "bench"}}
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.srv.Handler().ServeHTTP(rec, h.httpRequest(req))
			if rec.Code != http.StatusOK {
				b.Errorf("%d %s", rec.Code, rec.Body)
				return
			}
		}
	})
}

// BenchmarkValidateCreateBody measures the gate's validation of a Create
// Agent request against the spec, alone.
func BenchmarkValidateCreateBody(b *testing.B) {
	h := newHarness(b)
	raw, err := json.Marshal(character("openai", "gpt-4o-mini"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/agents", bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		route, params, err := h.srv.routes.router.FindRoute(req)
		if err != nil {
			b.Fatal(err)
		}
		input := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: h.srv.validation}
		if err := openapi3filter.ValidateRequest(req.Context(), input); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSSETokenEvent measures framing and flushing one token event.
func BenchmarkSSETokenEvent(b *testing.B) {
	rec := httptest.NewRecorder()
	ev := &eventWriter{w: rec, rc: http.NewResponseController(rec), timeout: time.Second, gone: func() {}}
	token := "a fragment of the reply"
	b.ReportAllocs()
	for b.Loop() {
		rec.Body.Reset()
		if err := ev.event(gen.StreamTokenEvent{Type: gen.StreamEventTypeToken, Content: token}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchAgentBody is the ~1 KB agent the bench's Create sends, read from
// the bench's own file.
func benchAgentBody(b *testing.B) string {
	raw, err := os.ReadFile(filepath.Join("..", "bench", "agent.json"))
	if err != nil {
		b.Fatal(err)
	}
	return string(raw)
}

// benchConcurrent runs req from 16 clients at once, as the bench's
// 16-connection point does.
func benchConcurrent(b *testing.B, h *harness, req func(i int64) request, want int) {
	b.Helper()
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16 / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.srv.Handler().ServeHTTP(rec, h.httpRequest(req(n.Add(1))))
			if rec.Code != want {
				b.Errorf("%d %s", rec.Code, rec.Body)
				return
			}
		}
	})
}

// BenchmarkCreateAgentConcurrent creates the bench's agent from 16
// clients at once.
func BenchmarkCreateAgentConcurrent(b *testing.B) {
	h := newHarness(b)
	// The bench's accounts have a quota that never binds.
	if _, err := h.store.Accounts().CreateAccount(context.Background(), domain.Account{Name: "bench", Tier: domain.TierEnterprise,
		RPM: 1 << 40, EndpointMultiplier: 1 << 30, AgentQuota: 1 << 30}); err != nil {
		b.Fatal(err)
	}
	key, body := h.newKey("bench", domain.ScopeWrite), benchAgentBody(b)
	benchConcurrent(b, h, func(int64) request {
		return request{method: "POST", path: "/v1/agents", key: key, body: body}
	}, http.StatusCreated)
}

// BenchmarkUpdateAgentConcurrent PATCHes the goals of 1,000 of the
// bench's agents from 16 clients at once, as the bench's PATCH does.
func BenchmarkUpdateAgentConcurrent(b *testing.B) {
	h := newHarness(b)
	var fields map[string]any
	if err := json.Unmarshal([]byte(benchAgentBody(b)), &fields); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = h.createAgent(fields)
	}
	benchConcurrent(b, h, func(i int64) request {
		return request{method: "PATCH", path: "/v1/agents/" + ids[(i*7919)%int64(len(ids))], key: h.writeKey,
			body: `{"goals":["goal ` + strconv.FormatInt(i, 10) + `"]}`}
	}, http.StatusOK)
}
