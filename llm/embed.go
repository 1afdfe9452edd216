package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

// DefaultEmbeddingModels are the default embedding models by provider;
// providers absent have no embeddings API (anthropic, groq).
var DefaultEmbeddingModels = map[string]string{
	ProviderOpenAI: "text-embedding-3-small",
	ProviderGoogle: "gemini-embedding-001",
	ProviderOllama: "nomic-embed-text",
}

// maxEmbeddingBatch bounds the texts of one embeddings request: Google's
// endpoint takes at most 100 inputs, OpenAI's 2048.
const maxEmbeddingBatch = 96

// embedder builds the langchaingo embedding client of a provider.
type embedder struct {
	// batch is how many texts one CreateEmbedding call gets. Each call is
	// one attempt, bounded by the Timeout, so it must be one HTTP request.
	batch int
	// newClient builds a client that embeds with model and sends through hc.
	newClient func(pc resolved, model string, hc *http.Client) (embeddings.EmbedderClient, error)
}

// embedders holds the embedder of every provider in DefaultEmbeddingModels.
// langchaingo v0.1.14's ollama client sends one request per text (ollama's
// /api/embed would take a list), so its calls get one text each.
var embedders = map[string]embedder{
	ProviderOpenAI: {batch: maxEmbeddingBatch, newClient: newOpenAIEmbedder},
	ProviderGoogle: {batch: maxEmbeddingBatch, newClient: newOpenAIEmbedder},
	ProviderOllama: {batch: 1, newClient: newOllamaEmbedder},
}

// newOpenAIEmbedder builds an OpenAI-format client; google's
// OpenAI-compatible endpoint serves /embeddings under the chat's base URL.
// The chat model is set too, so that none is read from OPENAI_MODEL.
func newOpenAIEmbedder(pc resolved, model string, hc *http.Client) (embeddings.EmbedderClient, error) {
	m, err := buildOpenAI(pc, hc, openai.WithModel(model), openai.WithEmbeddingModel(model))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newOllamaEmbedder builds an ollama client, which embeds with its model.
func newOllamaEmbedder(pc resolved, model string, hc *http.Client) (embeddings.EmbedderClient, error) {
	m, err := newOllama(pc, model, hc)
	if err != nil {
		return nil, err
	}
	return m.(*ollama.LLM), nil
}

// EmbeddingModel returns the embedding model of provider and whether the
// provider has an embeddings API: Config.EmbeddingModels when it names one,
// else DefaultEmbeddingModels.
func (c *Client) EmbeddingModel(provider string) (string, bool) {
	if _, ok := embedders[provider]; !ok {
		return "", false
	}
	model := strings.TrimSpace(c.cfg.EmbeddingModels[provider])
	if model == "" {
		model = DefaultEmbeddingModels[provider]
	}
	return model, model != ""
}

// Embed returns one vector per text, in the order of texts, computed by
// provider's embedding model, and that model's name as configured (store it
// with the vectors: only vectors of one model compare). apiKey is the
// caller's own key as in Request.APIKey: when not empty it replaces the
// configured one. Texts are sent in batches of at most 96 per request, each
// request bounded by the Timeout.
//
// A failure is an *Error: KindNotConfigured, without any request, when the
// provider has no embeddings API or no key, KindRequest for an empty text,
// else classified as for Generate. Cancellation by the caller is returned
// as for Generate. A failure is not retried: callers have full-text
// ranking to fall back on, which is better than a late answer.
func (c *Client) Embed(ctx context.Context, provider, apiKey string, texts []string) ([][]float32, string, error) {
	em, conf, model, err := c.embedTarget(provider, apiKey, texts)
	if err != nil {
		return nil, model, err
	}
	vecs := make([][]float32, 0, len(texts))
	for _, batch := range embeddings.BatchTexts(texts, em.batch) {
		got, err := c.embedBatch(ctx, provider, em, conf, model, batch)
		if err != nil {
			return nil, model, err
		}
		vecs = append(vecs, got...)
	}
	return vecs, model, nil
}

// embedTarget checks an Embed call and returns what it needs. A provider
// without an embeddings API is told before a missing key, which would
// suggest that setting one helps.
func (c *Client) embedTarget(provider, apiKey string, texts []string) (embedder, resolved, string, error) {
	fail := func(kind Kind, reason string) (embedder, resolved, string, error) {
		return embedder{}, resolved{}, "", &Error{Kind: kind, Provider: provider, Reason: reason}
	}
	model, ok := c.EmbeddingModel(provider)
	if _, known := adapters[provider]; known && !ok {
		return fail(KindNotConfigured, fmt.Sprintf("%s has no embeddings API", provider))
	}
	_, conf, err := c.provider(provider, apiKey)
	if err != nil {
		return embedder{}, resolved{}, "", err
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return fail(KindRequest, fmt.Sprintf("text %d to embed is empty", i))
		}
	}
	return embedders[provider], conf, model, nil
}

// embedBatch embeds one batch in one attempt. langchaingo's embedders hide
// the HTTP status in an error string, so the attempt's exchange records it
// and classify reads it as for a chat call.
func (c *Client) embedBatch(parent context.Context, provider string, em embedder, conf resolved, model string, texts []string) ([][]float32, error) {
	a := &attempt{provider: provider, adapter: adapters[provider], conf: conf, timeout: c.cfg.timeout()}
	ctx := a.start(parent)
	defer a.end()
	client, err := em.newClient(conf, model, a.httpClient(c.base, embeddingFormat{a.adapter.format}))
	if err != nil {
		return nil, &Error{Kind: KindNotConfigured, Provider: provider, Reason: "the provider client could not be built", Err: err}
	}
	vecs, err := client.CreateEmbedding(ctx, texts)
	a.timer.Stop() // a timeout firing from now on must not fail a finished call
	switch {
	case parent.Err() != nil:
		return nil, fmt.Errorf("llm: %s embeddings: %w", provider, parent.Err())
	case err != nil:
		e := a.classify(err)
		redactKey(e, conf.apiKey)
		return nil, e
	case len(vecs) != len(texts):
		return nil, &Error{Kind: KindRequest, Provider: provider,
			Reason: fmt.Sprintf("The model provider returned %d embeddings for %d texts.", len(vecs), len(texts))}
	}
	return vecs, nil
}

// embeddingFormat reads replies and error bodies as the provider's chat
// format does, and leaves the request body alone: the chat format's patch
// writes sampling options and tools, which an embeddings request has not.
type embeddingFormat struct{ wireFormat }

// patch implements wireFormat.
func (embeddingFormat) patch(map[string]json.RawMessage, *Request) error { return nil }
