package llm_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
)

// callMode runs a request with Generate or Stream.
type callMode struct {
	name string
	call func(c *llm.Client, ctx context.Context, req llm.Request) (llm.Reply, error)
}

var callModes = []callMode{
	{"generate", func(c *llm.Client, ctx context.Context, req llm.Request) (llm.Reply, error) {
		return c.Generate(ctx, req)
	}},
	{"stream", func(c *llm.Client, ctx context.Context, req llm.Request) (llm.Reply, error) {
		return c.Stream(ctx, req, func(string) error { return nil })
	}},
}

// asError returns err as an *llm.Error or fails the test.
func asError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return e
}

func TestHTTPErrors(t *testing.T) {
	cases := []struct {
		name       string
		reply      llmtest.Reply
		kind       llm.Kind
		requests   int
		retryAfter time.Duration
		reason     string
	}{
		{"rate limited", llmtest.Reply{Status: 429, RetryAfter: "7"}, llm.KindRateLimited, 1, 7 * time.Second, "HTTP 429"},
		{"bad key", llmtest.Reply{Status: 401}, llm.KindAuth, 1, 0, "HTTP 401"},
		{"forbidden", llmtest.Reply{Status: 403}, llm.KindAuth, 1, 0, "HTTP 403"},
		{"server error", llmtest.Reply{Status: 500}, llm.KindUnavailable, 3, 0, "HTTP 500"},
		{"unavailable", llmtest.Reply{Status: 503, RetryAfter: "2"}, llm.KindUnavailable, 3, 2 * time.Second, "HTTP 503"},
		{"bad request", llmtest.Reply{Status: 400}, llm.KindRequest, 1, 0, "HTTP 400"},
		{"unknown model", llmtest.Reply{Status: 404}, llm.KindRequest, 1, 0, "HTTP 404"},
		{"unprocessable", llmtest.Reply{Status: 422, ErrorMessage: "bad parameter"}, llm.KindRequest, 1, 0, "HTTP 422"},
	}
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		for _, tc := range cases {
			for _, mode := range callModes {
				t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
					srv.Respond(tc.reply)
					before := srv.Count()
					_, err := mode.call(c, context.Background(), request(pc))
					e := asError(t, err)
					if e.Kind != tc.kind || e.Provider != pc.provider || e.RetryAfter != tc.retryAfter {
						t.Errorf("got kind %v, provider %q, retry-after %v; want %v, %q, %v (%v)",
							e.Kind, e.Provider, e.RetryAfter, tc.kind, pc.provider, tc.retryAfter, e)
					}
					if !strings.Contains(e.Reason, tc.reason) || strings.Contains(e.Reason, "test-key") {
						t.Errorf("reason %q does not mention %q or leaks the key", e.Reason, tc.reason)
					}
					if tc.reply.ErrorMessage != "" && !strings.Contains(e.Detail, tc.reply.ErrorMessage) {
						t.Errorf("detail %q lacks the provider's text %q", e.Detail, tc.reply.ErrorMessage)
					}
					if got := srv.Count() - before; got != tc.requests {
						t.Errorf("server got %d requests, want %d", got, tc.requests)
					}
				})
			}
		}
	})
}

// TestUnknownModelDetail: each provider's answer that the model does not
// exist (its 404 with its own error body) is an unknown model, named with
// the provider's words (naming the model) in Detail; Reason is the fixed
// sentence with the status. Another refusal, or a 404 that is not the
// provider's (a wrong base URL), is not.
func TestUnknownModelDetail(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		req := request(pc)
		req.Model = "no-such-model"
		for _, mode := range callModes {
			srv.Respond(llmtest.Reply{Status: http.StatusNotFound})
			_, err := mode.call(c, context.Background(), req)
			e := asError(t, err)
			if e.Kind != llm.KindRequest || e.Status != http.StatusNotFound || !strings.Contains(e.Detail, "no-such-model") {
				t.Errorf("%s: got %v (status %d, detail %q), want KindRequest, 404, naming the model", mode.name, e, e.Status, e.Detail)
			}
			if !e.UnknownModel || e.Model != "no-such-model" || strings.HasPrefix(e.Detail, "[") || strings.HasPrefix(e.Detail, "{") {
				t.Errorf("%s: unknown model %v, model %q, detail %q; want the model and the provider's message", mode.name, e.UnknownModel, e.Model, e.Detail)
			}
			if want := "The model provider rejected the request (HTTP 404)."; e.Reason != want {
				t.Errorf("reason %q, want %q", e.Reason, want)
			}
		}
		srv.Respond(llmtest.Reply{Status: http.StatusBadRequest})
		_, err := c.Generate(context.Background(), req)
		if e := asError(t, err); e.UnknownModel {
			t.Errorf("a 400 %q counts as an unknown model", e.Detail)
		}
	})
	wrongPath := httptest.NewServer(http.NotFoundHandler())
	defer wrongPath.Close()
	c := newClient(t, llm.ProviderOpenAI, wrongPath.URL, 0)
	_, err := c.Generate(context.Background(), request(providerCases[0]))
	if e := asError(t, err); e.UnknownModel || e.Status != http.StatusNotFound {
		t.Errorf("a plain 404 (status %d) counts as an unknown model", e.Status)
	}
}

// TestDecommissionedModel: Groq answers a model it has shut down with a
// 400 whose code is model_decommissioned: an unknown model too.
func TestDecommissionedModel(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.Respond(llmtest.Reply{Status: http.StatusBadRequest, ErrorType: "model_decommissioned",
		ErrorMessage: "The model `llama-3.1-8b-instant` has been decommissioned and is no longer supported."})
	c := newClient(t, llm.ProviderGroq, srv.URL, 0)
	_, err := c.Generate(context.Background(), llm.Request{Provider: llm.ProviderGroq, Model: "llama-3.1-8b-instant", Text: "hi"})
	if e := asError(t, err); !e.UnknownModel || e.Model != "llama-3.1-8b-instant" || !strings.Contains(e.Detail, "decommissioned") {
		t.Errorf("unknown model %v, model %q, detail %q", e.UnknownModel, e.Model, e.Detail)
	}
}

// TestErrorTextMasked: OpenAI's 401 and 429 texts carry the ends of the key
// and the organization id; the Reason has none of the provider's text and
// the Detail has them masked.
func TestErrorTextMasked(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	c := newClient(t, llm.ProviderOpenAI, srv.URL, 0)
	for status, want := range map[int]string{
		http.StatusUnauthorized:    "The model provider rejected the credentials (HTTP 401).",
		http.StatusTooManyRequests: "The model provider is rate limiting requests (HTTP 429).",
	} {
		srv.Respond(llmtest.Reply{Status: status})
		_, err := c.Generate(context.Background(), request(providerCases[0]))
		e := asError(t, err)
		if e.Reason != want {
			t.Errorf("%d: reason %q, want %q", status, e.Reason, want)
		}
		if e.Detail == "" || strings.Contains(e.Detail, "org-abc123") || strings.Contains(e.Detail, "sk-abc1") || strings.Contains(e.Detail, "*1234") {
			t.Errorf("%d: detail %q is empty or unmasked", status, e.Detail)
		}
	}
}

func TestRetryThenSuccess(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Text: "Recovered."})
		srv.Enqueue(llmtest.Reply{Status: 502}, llmtest.Reply{Status: 503})
		reply, err := c.Stream(context.Background(), request(pc), nil)
		if err != nil || reply.Text != "Recovered." {
			t.Fatalf("got %q, %v; want the third attempt's reply", reply.Text, err)
		}
		if srv.Count() != 3 {
			t.Errorf("server got %d requests, want 3", srv.Count())
		}
	})
}

func TestTimeout(t *testing.T) {
	for _, pc := range providerCases {
		for _, mode := range callModes {
			t.Run(pc.provider+"/"+mode.name, func(t *testing.T) {
				srv := pc.newServer(t)
				srv.Respond(llmtest.Reply{Hang: true})
				c := newClient(t, pc.provider, srv.URL, 100*time.Millisecond)
				start := time.Now()
				_, err := mode.call(c, context.Background(), request(pc))
				e := asError(t, err)
				if e.Kind != llm.KindUnavailable || !strings.Contains(e.Reason, "did not answer within 100ms") {
					t.Errorf("got %v, want KindUnavailable for the timeout", e)
				}
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("a provider timeout must not look like the caller's cancellation: %v", err)
				}
				if srv.Count() != 3 {
					t.Errorf("server got %d requests, want 3 (two retries)", srv.Count())
				}
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("took %v", d)
				}
			})
		}
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	for _, pc := range providerCases {
		t.Run(pc.provider, func(t *testing.T) {
			c := newClient(t, pc.provider, url+"/v1", 0)
			_, err := c.Generate(context.Background(), request(pc))
			e := asError(t, err)
			if e.Kind != llm.KindUnavailable || !strings.Contains(e.Reason, "connection refused") {
				t.Errorf("got %v, want KindUnavailable, connection refused", e)
			}
			if !errors.Is(e, e.Err) || e.Err == nil {
				t.Errorf("Err = %v, want the transport error", e.Err)
			}
		})
	}
}

func TestNotConfigured(t *testing.T) {
	vars := map[string]string{
		llm.ProviderOpenAI: "OPENAI_API_KEY", llm.ProviderAnthropic: "ANTHROPIC_API_KEY",
		llm.ProviderGroq: "GROQ_API_KEY", llm.ProviderGoogle: "GOOGLE_API_KEY",
	}
	c := llm.New(llm.Config{})
	for provider, name := range vars {
		_, err := c.Generate(context.Background(), llm.Request{Provider: provider, Model: "m", Text: "hi"})
		e := asError(t, err)
		if e.Kind != llm.KindNotConfigured || !strings.HasPrefix(e.Reason, name+" is not set") {
			t.Errorf("%s: got %v, want KindNotConfigured starting %q", provider, e, name+" is not set")
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	c := newClient(t, llm.ProviderOpenAI, srv.URL, 0)
	cases := map[string]llm.Request{
		"empty model":      {Provider: llm.ProviderOpenAI, Text: "hi"},
		"empty text":       {Provider: llm.ProviderOpenAI, Model: "gpt-4o-mini", Text: "  "},
		"unknown provider": {Provider: "akash_chat_api", Model: "m", Text: "hi"},
		"unknown role":     {Provider: llm.ProviderOpenAI, Model: "gpt-4o-mini", Text: "hi", History: []llm.Message{{Role: "system", Content: "x"}}},
	}
	for name, req := range cases {
		_, err := c.Generate(context.Background(), req)
		if e := asError(t, err); e.Kind != llm.KindRequest {
			t.Errorf("%s: got %v, want KindRequest", name, e)
		}
	}
	if srv.Count() != 0 {
		t.Errorf("server got %d requests, want none", srv.Count())
	}
}

func TestErrorMessage(t *testing.T) {
	e := &llm.Error{Kind: llm.KindRateLimited, Provider: "openai", Reason: "The model provider is rate limiting requests (HTTP 429).", Err: errors.New("boom")}
	if got, want := e.Error(), "llm: openai: rate limited: The model provider is rate limiting requests (HTTP 429)."; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if errors.Unwrap(e).Error() != "boom" {
		t.Errorf("Unwrap lost the cause")
	}
}
