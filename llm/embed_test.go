package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
)

// embedCase is a provider with an embeddings API and its test server.
type embedCase struct {
	provider  string
	newServer func(testing.TB) *llmtest.Server
	// perText: langchaingo's ollama client sends one request per text.
	perText bool
}

var embedCases = []embedCase{
	{llm.ProviderOpenAI, llmtest.NewOpenAI, false},
	{llm.ProviderGoogle, llmtest.NewOpenAI, false},
	{llm.ProviderOllama, llmtest.NewOllama, true},
}

// forEachEmbedder runs f for every provider with an embeddings API, with
// its own server, transport and client (cfg changed by edit when not nil),
// then checks that nothing leaked.
func forEachEmbedder(t *testing.T, edit func(*llm.Config), f func(t *testing.T, ec embedCase, srv *llmtest.Server, c *llm.Client)) {
	for _, ec := range embedCases {
		t.Run(ec.provider, func(t *testing.T) {
			srv := ec.newServer(t)
			tr := newTransport(t)
			cfg := configFor(ec.provider, srv.URL, 0, &http.Client{Transport: tr})
			if edit != nil {
				edit(&cfg)
			}
			f(t, ec, srv, llm.New(cfg))
			verifyNoLeaks(t, srv, tr)
		})
	}
}

// cosine is the cosine similarity of two vectors of unit length.
func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}

func TestEmbedCasesCoverDefaults(t *testing.T) {
	if len(embedCases) != len(llm.DefaultEmbeddingModels) {
		t.Fatalf("%d embed cases for %d providers with embeddings", len(embedCases), len(llm.DefaultEmbeddingModels))
	}
	c := llm.New(llm.Config{})
	for _, ec := range embedCases {
		if m, ok := c.EmbeddingModel(ec.provider); !ok || m != llm.DefaultEmbeddingModels[ec.provider] {
			t.Errorf("%s: EmbeddingModel = %q, %v; want the default", ec.provider, m, ok)
		}
	}
}

func TestEmbedOrderAndSimilarity(t *testing.T) {
	texts := []string{"The cat sat on the mat.", "Quarterly revenue grew in Europe.", "A cat on a mat, sleeping."}
	forEachEmbedder(t, nil, func(t *testing.T, ec embedCase, _ *llmtest.Server, c *llm.Client) {
		vecs, _, err := c.Embed(context.Background(), ec.provider, "", texts)
		if err != nil {
			t.Fatal(err)
		}
		if len(vecs) != len(texts) {
			t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
		}
		for i, text := range texts {
			if !reflect.DeepEqual(vecs[i], llmtest.Embedding(text)) {
				t.Errorf("vector %d is not the one of %q", i, text)
			}
		}
		if near, far := cosine(vecs[0], vecs[2]), cosine(vecs[0], vecs[1]); near <= far || far > 0.2 {
			t.Errorf("cosine to a similar text %.2f, to an unrelated one %.2f", near, far)
		}
	})
}

func TestEmbedBatches(t *testing.T) {
	texts := make([]string, 100)
	for i := range texts {
		texts[i] = fmt.Sprintf("note %d about topic%d", i, i)
	}
	forEachEmbedder(t, nil, func(t *testing.T, ec embedCase, srv *llmtest.Server, c *llm.Client) {
		vecs, _, err := c.Embed(context.Background(), ec.provider, "", texts)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		var sent []string
		for _, r := range srv.EmbeddingRequests() {
			sizes = append(sizes, len(r.EmbeddingInputs()))
			sent = append(sent, r.EmbeddingInputs()...)
		}
		want := []int{96, 4}
		if ec.perText {
			want = slicesOf(1, len(texts))
		}
		if !reflect.DeepEqual(sizes, want) || !reflect.DeepEqual(sent, texts) {
			t.Errorf("batch sizes %v, want %v; texts sent in order: %v", sizes, want, reflect.DeepEqual(sent, texts))
		}
		for i, text := range texts {
			if !reflect.DeepEqual(vecs[i], llmtest.Embedding(text)) {
				t.Fatalf("vector %d is not the one of %q", i, text)
			}
		}
	})
}

// slicesOf returns n copies of v.
func slicesOf(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestEmbedModel(t *testing.T) {
	for _, override := range []string{"", "custom-embed"} {
		t.Run("override="+override, func(t *testing.T) {
			edit := func(cfg *llm.Config) {
				cfg.EmbeddingModels = map[string]string{llm.ProviderOpenAI: override, llm.ProviderGoogle: override, llm.ProviderOllama: override}
			}
			forEachEmbedder(t, edit, func(t *testing.T, ec embedCase, srv *llmtest.Server, c *llm.Client) {
				want := override
				if want == "" {
					want = llm.DefaultEmbeddingModels[ec.provider]
				}
				_, model, err := c.Embed(context.Background(), ec.provider, "", []string{"hello"})
				if err != nil {
					t.Fatal(err)
				}
				sent, _ := srv.EmbeddingRequests()[0].Body["model"].(string)
				if m, _ := c.EmbeddingModel(ec.provider); model != want || sent != want || m != want {
					t.Errorf("model returned %q, sent %q, EmbeddingModel %q; want %q", model, sent, m, want)
				}
			})
		})
	}
}

func TestEmbedAgentKey(t *testing.T) {
	for _, ec := range embedCases[:2] { // ollama takes no key
		t.Run(ec.provider, func(t *testing.T) {
			srv := ec.newServer(t)
			cfg := configFor(ec.provider, srv.URL, 0, &http.Client{Transport: newTransport(t)})
			for _, k := range []struct {
				cfg         llm.Config
				agent, want string
			}{
				{cfg, "", "test-key-" + ec.provider},
				{cfg, "agent-own-key", "agent-own-key"},
				{withoutKeys(cfg), "agent-own-key", "agent-own-key"},
			} {
				if _, _, err := llm.New(k.cfg).Embed(context.Background(), ec.provider, k.agent, []string{"hi"}); err != nil {
					t.Fatal(err)
				}
				reqs := srv.EmbeddingRequests()
				if got := sentKey(ec.provider, reqs[len(reqs)-1]); got != k.want {
					t.Errorf("key on the wire %q, want %q", got, k.want)
				}
			}
			_, _, err := llm.New(withoutKeys(cfg)).Embed(context.Background(), ec.provider, "", []string{"hi"})
			if e := asError(t, err); e.Kind != llm.KindNotConfigured || !strings.HasPrefix(e.Reason, llm.APIKeyVar(ec.provider)) {
				t.Errorf("no key anywhere: %v", e)
			}
			if n := len(srv.EmbeddingRequests()); n != 3 {
				t.Errorf("server got %d requests, want 3", n)
			}
		})
	}
}

func TestEmbedWithoutEmbeddingsAPI(t *testing.T) {
	for _, pc := range []providerCase{providerCases[1], providerCases[2]} { // anthropic, groq
		t.Run(pc.provider, func(t *testing.T) {
			srv := pc.newServer(t)
			c := newClient(t, pc.provider, srv.URL, 0)
			if m, ok := c.EmbeddingModel(pc.provider); ok {
				t.Errorf("EmbeddingModel = %q, true; want none", m)
			}
			_, _, err := c.Embed(context.Background(), pc.provider, "agent-own-key", []string{"hi"})
			if e := asError(t, err); e.Kind != llm.KindNotConfigured || e.Reason != pc.provider+" has no embeddings API" {
				t.Errorf("got %v, want KindNotConfigured", e)
			}
			if srv.Count() != 0 || len(srv.EmbeddingRequests()) != 0 {
				t.Errorf("server got requests")
			}
		})
	}
	_, _, err := llm.New(llm.Config{}).Embed(context.Background(), "akash_chat_api", "", []string{"hi"})
	if e := asError(t, err); e.Kind != llm.KindRequest {
		t.Errorf("unknown provider: got %v, want KindRequest", e)
	}
}

func TestEmbedNothing(t *testing.T) {
	forEachEmbedder(t, nil, func(t *testing.T, ec embedCase, srv *llmtest.Server, c *llm.Client) {
		vecs, model, err := c.Embed(context.Background(), ec.provider, "", nil)
		if err != nil || len(vecs) != 0 || model == "" {
			t.Errorf("no texts: got %d vectors, model %q, %v", len(vecs), model, err)
		}
		_, _, err = c.Embed(context.Background(), ec.provider, "", []string{"fine", " \n"})
		if e := asError(t, err); e.Kind != llm.KindRequest || e.Reason != "text 1 to embed is empty" {
			t.Errorf("empty text: got %v, want KindRequest", e)
		}
		if n := len(srv.EmbeddingRequests()); n != 0 {
			t.Errorf("server got %d requests, want none", n)
		}
	})
}

func TestEmbedFailures(t *testing.T) {
	cases := []struct {
		reply      llmtest.Reply
		kind       llm.Kind
		retryAfter time.Duration
	}{
		{llmtest.Reply{Status: http.StatusInternalServerError}, llm.KindUnavailable, 0},
		{llmtest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "7"}, llm.KindRateLimited, 7 * time.Second},
		{llmtest.Reply{Status: http.StatusUnauthorized, ErrorMessage: "Incorrect API key provided: agent-own-key."}, llm.KindAuth, 0},
	}
	forEachEmbedder(t, nil, func(t *testing.T, ec embedCase, srv *llmtest.Server, c *llm.Client) {
		for _, tc := range cases {
			before := len(srv.EmbeddingRequests())
			srv.RespondEmbeddings(tc.reply)
			_, _, err := c.Embed(context.Background(), ec.provider, "agent-own-key", []string{"a", "b"})
			e := asError(t, err)
			want := fmt.Sprintf("HTTP %d", tc.reply.Status)
			if e.Kind != tc.kind || e.Status != tc.reply.Status || e.RetryAfter != tc.retryAfter || !strings.Contains(e.Reason, want) {
				t.Errorf("%d: got %v (status %d, retry after %v), want %v", tc.reply.Status, e, e.Status, e.RetryAfter, tc.kind)
			}
			if e.Detail == "" || strings.Contains(e.Detail+e.Error(), "agent-own-key") || strings.Contains(e.Detail, "org-abc123") {
				t.Errorf("%d: detail %q is empty or unmasked", tc.reply.Status, e.Detail)
			}
			if n := len(srv.EmbeddingRequests()) - before; n != 1 {
				t.Errorf("%d: server got %d requests, want 1: embeddings are not retried", tc.reply.Status, n)
			}
		}
		srv.FailEmbeddings(0)
		if _, _, err := c.Embed(context.Background(), ec.provider, "", []string{"a"}); err != nil {
			t.Errorf("after FailEmbeddings(0): %v", err)
		}
	})
}

func TestEmbedTimeoutAndCancel(t *testing.T) {
	edit := func(cfg *llm.Config) { cfg.Timeout = 100 * time.Millisecond }
	forEachEmbedder(t, edit, func(t *testing.T, ec embedCase, srv *llmtest.Server, c *llm.Client) {
		srv.RespondEmbeddings(llmtest.Reply{Hang: true})
		_, _, err := c.Embed(context.Background(), ec.provider, "", []string{"a"})
		if e := asError(t, err); e.Kind != llm.KindUnavailable || !strings.Contains(e.Reason, "did not answer within 100ms") {
			t.Errorf("got %v, want KindUnavailable for the timeout", e)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, _, err = c.Embed(ctx, ec.provider, "", []string{"a"})
		var e *llm.Error
		if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &e) {
			t.Errorf("caller's deadline: got %v, want context.DeadlineExceeded, no *llm.Error", err)
		}
	})
}
