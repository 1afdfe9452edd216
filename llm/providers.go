package llm

import (
	"fmt"
	"net/http"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

// defaultAnthropicMaxTokens is sent when a request sets no MaxTokens:
// Anthropic requires max_tokens. langchaingo applies the same default; it
// is set here so the choice is ours and visible.
const defaultAnthropicMaxTokens = 2048

// adapter knows how to build the langchaingo model for one provider.
type adapter struct {
	format wireFormat
	// needsKey: calls fail with KindNotConfigured without an API key.
	needsKey bool
	// newModel builds a langchaingo model that sends through hc.
	newModel func(pc resolved, model string, hc *http.Client) (llms.Model, error)
	// callOptions are provider-specific call options.
	callOptions func(o Options) []llms.CallOption
	// wireTools: langchaingo cannot send tools or tool steps for this
	// provider, so its wire format writes them (ollama).
	wireTools bool
	// toolsWhenDone: the last call of a turn with tool steps must still
	// define the tools (Anthropic refuses tool_use blocks otherwise).
	toolsWhenDone bool
}

// resolved is a provider configuration with its base URL filled in.
type resolved struct {
	apiKey, baseURL string
}

// adapters holds the adapter of every supported provider.
var adapters = map[string]adapter{
	ProviderOpenAI:    openaiAdapter(false),
	ProviderGroq:      openaiAdapter(true),
	ProviderGoogle:    openaiAdapter(true),
	ProviderAnthropic: {format: anthropicFormat{}, needsKey: true, newModel: newAnthropic, callOptions: anthropicOptions, toolsWhenDone: true},
	ProviderOllama:    {format: ollamaFormat{}, newModel: newOllama, callOptions: maxTokensOption, wireTools: true},
}

// openaiAdapter speaks the OpenAI chat-completions format. OpenAI itself
// gets max_completion_tokens, the current field and the only one its
// reasoning models accept; groq and google get max_tokens
// (legacyMaxTokens), the field their OpenAI-compatible endpoints document.
func openaiAdapter(legacyMaxTokens bool) adapter {
	return adapter{
		format:   openaiFormat{},
		needsKey: true,
		newModel: newOpenAI,
		callOptions: func(o Options) []llms.CallOption {
			opts := maxTokensOption(o)
			if legacyMaxTokens && len(opts) > 0 {
				opts = append(opts, openai.WithLegacyMaxTokensField())
			}
			return opts
		},
	}
}

// newOpenAI builds an OpenAI-format chat client.
func newOpenAI(pc resolved, model string, hc *http.Client) (llms.Model, error) {
	m, err := buildOpenAI(pc, hc, openai.WithModel(model))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// buildOpenAI builds an OpenAI-format client with opts. Every option
// langchaingo would otherwise read from the environment (OPENAI_*) is set
// explicitly.
func buildOpenAI(pc resolved, hc *http.Client, opts ...openai.Option) (*openai.LLM, error) {
	m, err := openai.New(append([]openai.Option{
		openai.WithToken(pc.apiKey),
		openai.WithBaseURL(pc.baseURL),
		openai.WithOrganization(""),
		openai.WithHTTPClient(hc),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("build openai client: %w", err)
	}
	return m, nil
}

// newAnthropic builds an Anthropic Messages client.
func newAnthropic(pc resolved, model string, hc *http.Client) (llms.Model, error) {
	m, err := anthropic.New(
		anthropic.WithToken(pc.apiKey),
		anthropic.WithModel(model),
		anthropic.WithBaseURL(pc.baseURL),
		anthropic.WithHTTPClient(hc),
	)
	if err != nil {
		return nil, fmt.Errorf("build anthropic client: %w", err)
	}
	return m, nil
}

// newOllama builds an ollama client. The URL was validated by baseURL, so
// ollama.WithServerURL, which calls log.Fatal on a bad URL, cannot fail.
func newOllama(pc resolved, model string, hc *http.Client) (llms.Model, error) {
	m, err := ollama.New(
		ollama.WithServerURL(pc.baseURL),
		ollama.WithModel(model),
		ollama.WithHTTPClient(hc),
	)
	if err != nil {
		return nil, fmt.Errorf("build ollama client: %w", err)
	}
	return m, nil
}

// maxTokensOption passes MaxTokens when set. The other sampling options are
// written into the request body by the wire format's patch, the one place
// that decides what reaches the wire.
func maxTokensOption(o Options) []llms.CallOption {
	if o.MaxTokens == nil || *o.MaxTokens <= 0 {
		return nil
	}
	return []llms.CallOption{llms.WithMaxTokens(*o.MaxTokens)}
}

// anthropicOptions always sets max_tokens, which Anthropic requires.
func anthropicOptions(o Options) []llms.CallOption {
	if opts := maxTokensOption(o); opts != nil {
		return opts
	}
	return []llms.CallOption{llms.WithMaxTokens(defaultAnthropicMaxTokens)}
}
