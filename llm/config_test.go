package llm

import (
	"errors"
	"strings"
	"testing"
)

func TestConfiguredNeedsNoCall(t *testing.T) {
	c := New(Config{Anthropic: ProviderConfig{APIKey: "k"}})
	var le *Error
	if err := c.Configured("openai", ""); !errors.As(err, &le) || le.Kind != KindNotConfigured || !strings.Contains(le.Reason, "OPENAI_API_KEY") {
		t.Errorf("openai without a key: %v", err)
	}
	if err := c.Configured("akash", ""); !errors.As(err, &le) || le.Kind != KindRequest {
		t.Errorf("unknown provider: %v", err)
	}
	for _, p := range []string{"anthropic", "ollama"} {
		if err := c.Configured(p, ""); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
