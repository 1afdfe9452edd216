package llmtest_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/llm/llmtest"
)

// failures is a testing.TB that keeps the failures reported to it instead
// of failing the test, so a test can see the servers report them.
type failures struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *failures) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.errors)
}

// post sends body to path under srv and returns the status.
func post(t *testing.T, srv *llmtest.Server, path, body string, header map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRefusedRequestsFailTheTest: a request OpenAI's published OpenAPI
// document does not admit, or one the provider refuses for today's models,
// is answered 400 as the provider does and fails the test that sent it.
func TestRefusedRequestsFailTheTest(t *testing.T) {
	anthropic := map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "k"}
	cases := []struct {
		name, path, body string
		header           map[string]string
		newServer        func(testing.TB) *llmtest.Server
		refused          bool // answered 400, as the provider would
		invalid          bool // not admitted by the provider's published document
	}{
		{"valid chat", "/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"temperature":0.5}`, nil, llmtest.NewOpenAI, false, false},
		{"unknown role", "/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"wizard","content":"hi"}]}`, nil, llmtest.NewOpenAI, false, true},
		{"temperature out of range", "/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"temperature":5}`, nil, llmtest.NewOpenAI, false, true},
		{"no messages", "/chat/completions", `{"model":"gpt-4o-mini"}`, nil, llmtest.NewOpenAI, false, true},
		{"reasoning model with temperature", "/chat/completions", `{"model":"o4-mini","messages":[{"role":"user","content":"hi"}],"temperature":0.5}`, nil, llmtest.NewOpenAI, true, false},
		{"reasoning model with max_tokens", "/chat/completions", `{"model":"gpt-5.6-terra","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`, nil, llmtest.NewOpenAI, true, false},
		{"valid embeddings", "/embeddings", `{"model":"text-embedding-3-small","input":["a","b"]}`, nil, llmtest.NewOpenAI, false, false},
		{"embeddings without input", "/embeddings", `{"model":"text-embedding-3-small"}`, nil, llmtest.NewOpenAI, true, true},
		{"valid message", "/messages", `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"temperature":0.5}`, anthropic, llmtest.NewAnthropic, false, false},
		{"no anthropic-version", "/messages", `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"x-api-key": "k"}, llmtest.NewAnthropic, true, false},
		{"member Anthropic does not have", "/messages", `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"frequency_penalty":0.5}`, anthropic, llmtest.NewAnthropic, true, false},
		{"temperature and top_p", "/messages", `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"temperature":0.5,"top_p":0.9}`, anthropic, llmtest.NewAnthropic, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &failures{TB: t}
			srv := tc.newServer(f)
			status := post(t, srv, tc.path, tc.body, tc.header)
			srv.Close()
			if refused := status == http.StatusBadRequest; refused != tc.refused || (f.count() > 0) != (tc.refused || tc.invalid) {
				t.Errorf("status %d, %d failures reported %q; want refused %v, invalid %v", status, f.count(), f.errors, tc.refused, tc.invalid)
			}
		})
	}
}
