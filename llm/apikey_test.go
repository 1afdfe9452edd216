package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
)

// sentKey returns the API key a request carried in its provider's header.
func sentKey(provider string, r llmtest.Recorded) string {
	if provider == llm.ProviderAnthropic {
		return r.Header.Get("x-api-key")
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func TestAgentKeyWinsOverConfiguredKey(t *testing.T) {
	for _, pc := range providerCases[:4] { // ollama takes no key
		t.Run(pc.provider, func(t *testing.T) {
			srv := pc.newServer(t)
			withEnv := newClient(t, pc.provider, srv.URL, 0)
			envOnly := request(pc)
			own := request(pc)
			own.APIKey = "agent-own-key"
			for _, c := range []struct {
				req  llm.Request
				want string
			}{{envOnly, "test-key-" + pc.provider}, {own, "agent-own-key"}} {
				if _, err := withEnv.Generate(context.Background(), c.req); err != nil {
					t.Fatal(err)
				}
				if got := sentKey(pc.provider, srv.Last(t)); got != c.want {
					t.Errorf("key on the wire %q, want %q", got, c.want)
				}
			}

			noEnv := llm.New(withoutKeys(configFor(pc.provider, srv.URL, 0, &http.Client{Transport: newTransport(t)})))
			var le *llm.Error
			err := noEnv.Configured(pc.provider, "")
			if !errors.As(err, &le) || le.Kind != llm.KindNotConfigured ||
				le.Reason != llm.APIKeyVar(pc.provider)+" is not set: set it in the server environment or in the agent's settings.secrets" {
				t.Errorf("no key anywhere: %v", err)
			}
			if err := noEnv.Configured(pc.provider, "agent-own-key"); err != nil {
				t.Errorf("agent key without env key: %v", err)
			}
			if _, err := noEnv.Generate(context.Background(), own); err != nil {
				t.Fatalf("agent key without env key: %v", err)
			}
			if got := sentKey(pc.provider, srv.Last(t)); got != "agent-own-key" {
				t.Errorf("key on the wire %q, want the agent's", got)
			}
		})
	}
}

func TestRejectedKeyIsNotQuoted(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.Respond(llmtest.Reply{Status: http.StatusUnauthorized, ErrorType: "invalid_api_key",
		ErrorMessage: "Incorrect API key provided: agent-own-key."})
	req := request(providerCases[0])
	req.APIKey = "agent-own-key"
	_, err := newClient(t, llm.ProviderOpenAI, srv.URL, 0).Generate(context.Background(), req)
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindAuth {
		t.Fatalf("err = %v, want KindAuth", err)
	}
	if strings.Contains(le.Reason, "agent-own-key") || strings.Contains(le.Detail, "agent-own-key") ||
		!strings.Contains(le.Detail, "Incorrect API key") {
		t.Errorf("reason %q, detail %q: want the provider's words without the key, in the detail only", le.Reason, le.Detail)
	}
}

// withoutKeys removes every configured API key.
func withoutKeys(cfg llm.Config) llm.Config {
	for _, pc := range []*llm.ProviderConfig{&cfg.OpenAI, &cfg.Anthropic, &cfg.Groq, &cfg.Google} {
		pc.APIKey = ""
	}
	return cfg
}
