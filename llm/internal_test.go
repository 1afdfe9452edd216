package llm

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
	}
	for _, tc := range cases {
		if got := parseRetryAfter(tc.header, now); got != tc.want {
			t.Errorf("parseRetryAfter(%v) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

func TestBaseURL(t *testing.T) {
	cases := []struct {
		provider, raw, want string
	}{
		{ProviderOpenAI, "", "https://api.openai.com/v1"},
		{ProviderAnthropic, "", "https://api.anthropic.com/v1"},
		{ProviderGroq, "", "https://api.groq.com/openai/v1"},
		{ProviderGoogle, "", "https://generativelanguage.googleapis.com/v1beta/openai"},
		{ProviderOllama, "", "http://127.0.0.1:11434"},
		{ProviderOpenAI, "https://proxy.example/v1/", "https://proxy.example/v1"},
		{ProviderOllama, "gpu-box:8080", "http://gpu-box:8080"},
		{ProviderOllama, "gpu-box", "http://gpu-box:11434"},
		{ProviderOllama, "https://ollama.example", "https://ollama.example"},
	}
	for _, tc := range cases {
		got, err := baseURL(tc.provider, ProviderConfig{BaseURL: tc.raw})
		if err != nil || got != tc.want {
			t.Errorf("baseURL(%s, %q) = %q, %v; want %q", tc.provider, tc.raw, got, err, tc.want)
		}
	}
	for _, bad := range []string{"ftp://x", "not a url", "http://"} {
		if _, err := baseURL(ProviderOpenAI, ProviderConfig{BaseURL: bad}); err == nil || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
			t.Errorf("baseURL(%q) error = %v, want one naming OPENAI_BASE_URL", bad, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("empty config: %v", err)
	}
	err := Config{Timeout: -time.Second, Ollama: ProviderConfig{BaseURL: "http://[::1"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "OLLAMA_HOST") || !strings.Contains(err.Error(), "negative") {
		t.Errorf("Validate() = %v, want errors for the timeout and OLLAMA_HOST", err)
	}
	if got := (Config{}).timeout(); got != DefaultTimeout {
		t.Errorf("default timeout = %v", got)
	}
	if err := (Config{MaxIdleConnsPerHost: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "idle connections") {
		t.Errorf("negative idle pool: Validate() = %v", err)
	}
	if got := (Config{}).maxIdleConnsPerHost(); got != DefaultMaxIdleConnsPerHost {
		t.Errorf("default idle pool = %d", got)
	}
}

func TestCutAtWord(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"héllo", 0, "héllo"},
		{"héllo", 2, "hé"}, // one word longer than the cap: cut inside
		{"héllo", 5, "héllo"},
		{"héllo", 9, "héllo"},
		{"👋🏽 hi", 1, "👋"}, // the emoji alone is longer than the cap
		{"👋🏽👋🏽", 3, "👋🏽"}, // never the next emoji without its skin tone
		{"e\u0301e\u0301e\u0301", 3, "e\u0301"},
		{"👨\u200d👩\u200d👧👍", 4, "👨\u200d👩"}, // within the cap, cut before the joined part
		{"Hello there. General Kenobi", 20, "Hello there. General"},
		{"Hello there. General Kenobi", 19, "Hello there."},
		{"Hello there. General Kenobi", 12, "Hello there."},
		{"Hello there. General Kenobi", 11, "Hello"},
		{"  lead", 4, "  le"},
	}
	for _, tc := range cases {
		if got := CutAtWord(tc.s, tc.n); got != tc.want {
			t.Errorf("CutAtWord(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestUsageFrom(t *testing.T) {
	cases := []struct {
		info map[string]any
		want Usage
		ok   bool
	}{
		{map[string]any{"PromptTokens": 3, "CompletionTokens": 4, "TotalTokens": 7}, Usage{3, 4, 7}, true},
		{map[string]any{"InputTokens": 3, "OutputTokens": 4}, Usage{3, 4, 7}, true},
		{map[string]any{"PromptTokens": int64(3), "CompletionTokens": float64(4)}, Usage{3, 4, 7}, true},
		{map[string]any{"PromptTokens": 0, "CompletionTokens": 0, "TotalTokens": 0}, Usage{}, false},
		{nil, Usage{}, false},
	}
	for _, tc := range cases {
		if got, ok := usageFrom(tc.info); got != tc.want || ok != tc.ok {
			t.Errorf("usageFrom(%v) = %v, %v; want %v, %v", tc.info, got, ok, tc.want, tc.ok)
		}
	}
}

func TestKindForStatus(t *testing.T) {
	cases := map[int]Kind{
		400: KindRequest, 401: KindAuth, 402: KindRateLimited, 403: KindAuth, 404: KindRequest, 408: KindUnavailable,
		413: KindRequest, 422: KindRequest, 429: KindRateLimited, 500: KindUnavailable, 503: KindUnavailable, 529: KindUnavailable,
	}
	for status, want := range cases {
		if got := kindForStatus(status); got != want {
			t.Errorf("kindForStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"Incorrect API key provided: sk-abc1****************1234. See the docs.": "Incorrect API key provided: [redacted]. See the docs.",
		"key sk-proj-AbC_dEf-123 and sk-ant-api03-xyz":                           "key [redacted] and [redacted]",
		"groq gsk_0123abcd, google AIzaSyA-1_b":                                  "groq [redacted], google [redacted]",
		"in organization org-abc123 on requests per min":                         "in organization [redacted] on requests per min",
		"token 0123456789abcdef0123456789abcdef0123 here":                        "token [redacted] here",
		"Rate limit reached for gpt-4o-mini; ask-me task-force":                  "Rate limit reached for gpt-4o-mini; ask-me task-force",
	}
	for in, want := range cases {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
