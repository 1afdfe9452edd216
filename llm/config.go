package llm

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Provider names, as stored in an agent's modelProvider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderGroq      = "groq"
	ProviderGoogle    = "google"
	ProviderOllama    = "ollama"
)

// Providers names the five supported providers in this order: openai,
// anthropic, groq, google, ollama.
var Providers = []string{ProviderOpenAI, ProviderAnthropic, ProviderGroq, ProviderGoogle, ProviderOllama}

// DefaultModels are the models used when an agent names none: each
// provider's current small general model, one it serves today and will for
// a while (docs/models.md lists them with the date they were checked).
// Ollama serves whatever was pulled, so its default is only a common one.
var DefaultModels = map[string]string{
	ProviderOpenAI:    "gpt-5.6-terra",
	ProviderAnthropic: "claude-haiku-4-5",
	ProviderGroq:      "openai/gpt-oss-20b",
	ProviderGoogle:    "gemini-3.5-flash",
	ProviderOllama:    "llama3.2",
}

// DefaultTimeout bounds one provider call when Config.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// DefaultMaxIdleConnsPerHost is the idle pool per provider host when
// Config.MaxIdleConnsPerHost is zero.
const DefaultMaxIdleConnsPerHost = 100

// defaultBaseURLs are the providers' public endpoints, used unless
// <PROVIDER>_BASE_URL is set.
var defaultBaseURLs = map[string]string{
	ProviderOpenAI:    "https://api.openai.com/v1",
	ProviderAnthropic: "https://api.anthropic.com/v1",
	ProviderGroq:      "https://api.groq.com/openai/v1",
	ProviderGoogle:    "https://generativelanguage.googleapis.com/v1beta/openai",
	ProviderOllama:    "http://127.0.0.1:11434",
}

// DefaultBaseURL returns the base URL used for provider when its
// ProviderConfig.BaseURL is empty, or "" for an unknown provider.
func DefaultBaseURL(provider string) string {
	return defaultBaseURLs[provider]
}

// ProviderConfig is the configuration of one provider.
type ProviderConfig struct {
	// APIKey is the provider's API key (unused for ollama).
	APIKey string
	// BaseURL overrides DefaultBaseURL(provider) when not empty. For ollama
	// it is OLLAMA_HOST, which may omit the scheme ("host:port").
	BaseURL string
}

// Config configures a Client: one ProviderConfig per provider, filled by
// cmd/agentd from OPENAI_API_KEY/OPENAI_BASE_URL, ANTHROPIC_*, GROQ_*,
// GOOGLE_*, OLLAMA_HOST and AGENTD_PROVIDER_TIMEOUT.
type Config struct {
	OpenAI    ProviderConfig
	Anthropic ProviderConfig
	Groq      ProviderConfig
	Google    ProviderConfig
	// Ollama uses BaseURL only (OLLAMA_HOST).
	Ollama ProviderConfig

	// Timeout bounds one provider call: a whole Generate attempt, and in
	// Stream the wait for the first fragment and between two fragments.
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient is the client whose transport, jar and redirect policy the
	// provider calls use; nil means a client over a clone of
	// http.DefaultTransport keeping MaxIdleConnsPerHost idle connections.
	HTTPClient *http.Client
	// MaxIdleConnsPerHost is how many idle connections to each provider are
	// kept for reuse when HTTPClient is nil; size it to the calls expected
	// at once. Zero means DefaultMaxIdleConnsPerHost.
	MaxIdleConnsPerHost int
	// EmbeddingModels are the embedding models by provider, overriding
	// DefaultEmbeddingModels (cmd/agentd fills it from
	// AGENTD_EMBEDDING_MODEL_<PROVIDER>). A provider without an embeddings
	// API gains none by being named here.
	EmbeddingModels map[string]string
}

// provider returns the configuration of the named provider.
func (c Config) provider(name string) (ProviderConfig, bool) {
	switch name {
	case ProviderOpenAI:
		return c.OpenAI, true
	case ProviderAnthropic:
		return c.Anthropic, true
	case ProviderGroq:
		return c.Groq, true
	case ProviderGoogle:
		return c.Google, true
	case ProviderOllama:
		return c.Ollama, true
	}
	return ProviderConfig{}, false
}

// Validate reports configuration that can never work: a negative timeout or
// idle pool, or a base URL that is not an absolute http(s) URL. A missing API
// key is not an error here: that provider's calls fail with KindNotConfigured.
func (c Config) Validate() error {
	var errs []error
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("provider timeout %s is negative", c.Timeout))
	}
	if c.MaxIdleConnsPerHost < 0 {
		errs = append(errs, fmt.Errorf("provider idle connections per host %d is negative", c.MaxIdleConnsPerHost))
	}
	for _, name := range Providers {
		pc, _ := c.provider(name)
		if pc.BaseURL == "" {
			continue
		}
		if _, err := baseURL(name, pc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// baseURL returns the provider's base URL, the default when none is set.
// ollama's OLLAMA_HOST convention allows "host", "host:port" and a missing
// scheme, so those are completed the way the ollama CLI does.
func baseURL(name string, pc ProviderConfig) (string, error) {
	raw := strings.TrimSpace(pc.BaseURL)
	if raw == "" {
		return DefaultBaseURL(name), nil
	}
	if name == ProviderOllama && !strings.Contains(raw, "://") {
		raw = "http://" + raw
		if u, err := url.Parse(raw); err == nil && u.Port() == "" {
			u.Host += ":11434"
			raw = u.String()
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s is not an absolute http(s) URL: %q", baseURLVar(name), pc.BaseURL)
	}
	return strings.TrimSuffix(raw, "/"), nil
}

// APIKeyVar names the environment variable holding the provider's key
// (OPENAI_API_KEY, ...), for messages that tell an operator what to set; an
// agent's own key is the secret of the same name in its settings.secrets.
func APIKeyVar(provider string) string {
	return strings.ToUpper(provider) + "_API_KEY"
}

// baseURLVar names the environment variable holding the provider's base URL.
func baseURLVar(provider string) string {
	if provider == ProviderOllama {
		return "OLLAMA_HOST"
	}
	return strings.ToUpper(provider) + "_BASE_URL"
}

// timeout returns the configured per-call timeout or the default.
func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// maxIdleConnsPerHost returns the configured idle pool per host or the
// default.
func (c Config) maxIdleConnsPerHost() int {
	if c.MaxIdleConnsPerHost > 0 {
		return c.MaxIdleConnsPerHost
	}
	return DefaultMaxIdleConnsPerHost
}
