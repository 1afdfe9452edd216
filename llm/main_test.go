package llm_test

import (
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
)

// TestMain fails the package if any test leaves a goroutine behind.
// Retries pause briefly here; TestRetryBackoff checks the real pauses.
func TestMain(m *testing.M) {
	llm.SetRetryBackoff(time.Millisecond, 2*time.Millisecond)
	goleak.VerifyTestMain(m)
}

// providerCase is one provider and the test server speaking its format.
type providerCase struct {
	provider  string
	model     string
	newServer func(testing.TB) *llmtest.Server
}

// providerCases covers all five providers; groq uses the OpenAI format
// server under its own name, google the same with Google's error bodies.
var providerCases = []providerCase{
	{llm.ProviderOpenAI, "gpt-4o-mini", llmtest.NewOpenAI},
	{llm.ProviderAnthropic, "claude-haiku-4-5", llmtest.NewAnthropic},
	{llm.ProviderGroq, "openai/gpt-oss-20b", llmtest.NewOpenAI},
	{llm.ProviderGoogle, "gemini-3.5-flash", llmtest.NewGoogle},
	{llm.ProviderOllama, "llama3.2", llmtest.NewOllama},
}

// forEachProvider runs f once per provider with a fresh server and client.
func forEachProvider(t *testing.T, f func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client)) {
	for _, pc := range providerCases {
		t.Run(pc.provider, func(t *testing.T) {
			srv := pc.newServer(t)
			f(t, pc, srv, newClient(t, pc.provider, srv.URL, 0))
		})
	}
}

// newClient returns a client whose provider points at url. It uses its own
// transport, whose idle connections are closed when the test ends so that
// leak checks see no keep-alive goroutines.
func newClient(t testing.TB, provider, url string, timeout time.Duration) *llm.Client {
	return llm.New(configFor(provider, url, timeout, &http.Client{Transport: newTransport(t)}))
}

// newTransport returns a transport whose idle connections are closed when
// the test ends.
func newTransport(t testing.TB) *http.Transport {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// verifyNoLeaks shuts down srv and tr and checks that no goroutine is left,
// in particular none of langchaingo's stream readers.
func verifyNoLeaks(t *testing.T, srv *llmtest.Server, tr *http.Transport) {
	t.Helper()
	srv.Close()
	tr.CloseIdleConnections()
	goleak.VerifyNone(t)
}

// configFor configures provider with a test key and url.
func configFor(provider, url string, timeout time.Duration, hc *http.Client) llm.Config {
	cfg := llm.Config{Timeout: timeout, HTTPClient: hc}
	setProvider(&cfg, provider, url)
	return cfg
}

// setProvider points provider at url with a test key.
func setProvider(cfg *llm.Config, provider, url string) {
	pc := llm.ProviderConfig{APIKey: "test-key-" + provider, BaseURL: url}
	switch provider {
	case llm.ProviderOpenAI:
		cfg.OpenAI = pc
	case llm.ProviderAnthropic:
		cfg.Anthropic = pc
	case llm.ProviderGroq:
		cfg.Groq = pc
	case llm.ProviderGoogle:
		cfg.Google = pc
	case llm.ProviderOllama:
		cfg.Ollama = llm.ProviderConfig{BaseURL: url}
	}
}

// request is a small request for pc.
func request(pc providerCase) llm.Request {
	return llm.Request{Provider: pc.provider, Model: pc.model, System: "You are a test agent.", Text: "Hello?"}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
