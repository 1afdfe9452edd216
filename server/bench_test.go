package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentd/agentd/llm/llmtest"
)

// benchRequest runs one request through the whole stack per iteration.
func benchRequest(b *testing.B, h *harness, req request, want int) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, h.httpRequest(req))
		if rec.Code != want {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
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

func BenchmarkSendMessage(b *testing.B) {
	h := newHarness(b)
	h.openai.Respond(llmtest.Reply{Text: "a short reply", PromptTokens: 10, CompletionTokens: 3})
	id := h.createAgent(character("openai", "gpt-4o-mini"))
	benchRequest(b, h, request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey,
		body: map[string]any{"text": "hello", "userId": "bench"}}, http.StatusOK)
}
