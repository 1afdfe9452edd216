package llm_test

import (
	"testing"

	"github.com/agentd/agentd/llm"
)

// retiredModels are model names their providers have shut down, or have
// announced they will shut down within months: no default may name one,
// since an agent created without a model would fail on its first message.
var retiredModels = map[string]bool{
	// OpenAI
	"gpt-3.5-turbo": true, "gpt-4": true, "gpt-4-turbo": true, "gpt-4o": true, "gpt-4o-mini": true,
	"gpt-4.1": true, "gpt-4.1-mini": true, "gpt-4.1-nano": true, "o1": true, "o1-mini": true, "o3-mini": true,
	"o4-mini": true, "gpt-5": true, "gpt-5-mini": true, "gpt-5-nano": true, "o3": true,
	"text-embedding-ada-002": true,
	// Anthropic
	"claude-3-5-haiku-latest": true, "claude-3-5-haiku-20241022": true, "claude-3-haiku-20240307": true,
	"claude-3-5-sonnet-latest": true, "claude-3-5-sonnet-20241022": true, "claude-3-7-sonnet-latest": true,
	"claude-3-opus-latest": true, "claude-3-opus-20240229": true,
	// Groq
	"llama-3.1-8b-instant": true, "llama-3.3-70b-versatile": true, "llama3-8b-8192": true,
	"llama3-70b-8192": true, "mixtral-8x7b-32768": true, "gemma2-9b-it": true,
	// Google
	"gemini-1.5-flash": true, "gemini-1.5-pro": true, "gemini-2.0-flash": true, "gemini-2.0-flash-001": true,
	"gemini-2.0-flash-lite": true, "gemini-2.5-flash": true, "gemini-2.5-pro": true, "gemini-2.5-flash-lite": true,
	"text-embedding-004": true, "embedding-001": true,
}

func TestDefaultModelsAreServed(t *testing.T) {
	for provider, model := range llm.DefaultModels {
		if retiredModels[model] {
			t.Errorf("the default model of %s, %q, is retired", provider, model)
		}
	}
	for provider, model := range llm.DefaultEmbeddingModels {
		if retiredModels[model] {
			t.Errorf("the default embedding model of %s, %q, is retired", provider, model)
		}
	}
	for _, provider := range llm.Providers {
		if llm.DefaultModels[provider] == "" {
			t.Errorf("%s has no default model", provider)
		}
	}
}
