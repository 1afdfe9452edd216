package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/secretbox"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
)

// withSecrets is an agent body whose settings hold secrets.
func withSecrets(name string, secrets map[string]any) map[string]any {
	return map[string]any{"name": name, "settings": map[string]any{"secrets": secrets}}
}

func TestAgentOwnProviderKey(t *testing.T) {
	noEnvKey := func(c *llm.Config) { c.OpenAI.APIKey = "" }
	for _, tc := range []struct {
		name     string
		tweakLLM func(*llm.Config)
		envKey   string // "" when the environment has none
	}{{"env key set", nil, "sk-test"}, {"no env key", noEnvKey, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessAt(t, filepath.Join(t.TempDir(), "agentd.db"), []store.Option{store.WithSecretBox(storetest.Box(t))}, tc.tweakLLM)
			h.openai.Respond(llmtest.Reply{Text: "ok"})
			own := h.createAgent(withSecrets("own", map[string]any{"OPENAI_API_KEY": "sk-agent-own"}))
			res := h.send(own, map[string]any{"text": "hi"})
			if res.Code != http.StatusOK {
				t.Fatalf("own key: %d %s", res.Code, res.Body)
			}
			if got := h.openai.Last(t).Header.Get("Authorization"); got != "Bearer sk-agent-own" {
				t.Errorf("Authorization %q, want the agent's key", got)
			}
			if g := h.do(request{method: "GET", path: "/v1/agents/" + own, key: h.readKey}); strings.Contains(string(g.Body), "sk-agent-own") {
				t.Error("Get Agent shows the key")
			}

			other := h.createAgent(map[string]any{"name": "env"})
			res = h.send(other, map[string]any{"text": "hi"})
			if tc.envKey != "" {
				if res.Code != http.StatusOK || h.openai.Last(t).Header.Get("Authorization") != "Bearer "+tc.envKey {
					t.Errorf("env key: %d %s, sent %q", res.Code, res.Body, h.openai.Last(t).Header.Get("Authorization"))
				}
				return
			}
			want := "OPENAI_API_KEY is not set: set it in the server environment or in the agent's settings.secrets"
			if res.Code != http.StatusServiceUnavailable || res.ErrorCode(t) != "AGENT_UNAVAILABLE" || res.Details(t)["reason"] != want {
				t.Errorf("no key anywhere: %d %s", res.Code, res.Body)
			}
		})
	}
}

func TestUndecryptableSecretsRefuseOnlyThatAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	h := newHarnessAt(t, path, []store.Option{store.WithSecretBox(storetest.Box(t))}, nil)
	other := storetest.Open(t, path, store.WithSecretBox(storetest.Box(t)))
	fields := map[string]json.RawMessage{"name": []byte(`"old-key"`), "modelProvider": []byte(`"openai"`), "model": []byte(`"gpt-4o-mini"`),
		"settings": []byte(`{"secrets":{"OPENAI_API_KEY":"sk-under-another-key"}}`)}
	agent, err := other.Agents().CreateAgent(context.Background(), domain.Agent{AccountID: h.account.ID, Fields: fields}, -1)
	if err != nil {
		t.Fatal(err)
	}
	fine := h.createAgent(map[string]any{"name": "fine"})
	h.openai.Respond(llmtest.Reply{Text: "ok"})

	for _, path := range []string{"", "/stream"} {
		res := h.do(request{method: "POST", path: "/v1/agents/" + agent.ID + "/messages" + path, key: h.writeKey, body: map[string]any{"text": "hi"}})
		reason, _ := res.Details(t)["reason"].(string)
		if res.Code != http.StatusServiceUnavailable || res.ErrorCode(t) != "AGENT_UNAVAILABLE" || !strings.Contains(reason, "AGENTD_SECRET_KEY") {
			t.Errorf("undecryptable%s: %d %s", path, res.Code, res.Body)
		}
		if strings.Contains(string(res.Body), "sk-under-another-key") || strings.Contains(string(res.Body), secretbox.Prefix) {
			t.Errorf("error body shows the secret: %s", res.Body)
		}
	}
	if h.openai.Count() != 0 {
		t.Errorf("the provider was called %d times", h.openai.Count())
	}
	got := h.do(request{method: "GET", path: "/v1/agents/" + agent.ID, key: h.readKey})
	if got.Code != http.StatusOK || got.Data(t)["status"] != "active" || strings.Contains(string(got.Body), secretbox.Prefix) {
		t.Errorf("Get Agent: %d %s", got.Code, got.Body)
	}
	if res := h.do(request{method: "GET", path: "/v1/agents", key: h.readKey}); res.Code != http.StatusOK {
		t.Errorf("list: %d %s", res.Code, res.Body)
	}
	if res := h.send(fine, map[string]any{"text": "hi"}); res.Code != http.StatusOK {
		t.Errorf("other agent: %d %s", res.Code, res.Body)
	}
}

func TestMaskForMissingSecretIsRefused(t *testing.T) {
	h := newHarness(t)
	masked := withSecrets("m", map[string]any{"NEW": secretMask})
	res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: masked})
	if res.Code != http.StatusBadRequest || res.ErrorCode(t) != "INVALID_REQUEST" || res.Details(t)["field"] != "settings.secrets.NEW" {
		t.Errorf("create: %d %s", res.Code, res.Body)
	}
	id := h.createAgent(withSecrets("s", map[string]any{"TOKEN": "hunter2"}))
	res = h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey,
		body: map[string]any{"settings": map[string]any{"secrets": map[string]any{"TOKEN": secretMask, "NEW": secretMask}}}})
	if res.Code != http.StatusBadRequest || res.ErrorCode(t) != "INVALID_REQUEST" || res.Details(t)["field"] != "settings.secrets.NEW" {
		t.Errorf("update: %d %s", res.Code, res.Body)
	}
	agent, err := h.store.Agents().GetAgent(context.Background(), h.account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(agent.Fields["settings"]); s != `{"secrets":{"TOKEN":"hunter2"}}` {
		t.Errorf("stored settings %s", s)
	}
}

// TestConcurrentPatchKeepsMaskedSecret races a PATCH that changes a secret
// with one that sends it back masked: the masked one must keep the value
// stored when it is applied, never an older one.
func TestConcurrentPatchKeepsMaskedSecret(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(withSecrets("s", map[string]any{"TOKEN": "v0"}))
	for i := 1; i <= 20; i++ {
		value := fmt.Sprintf("v%d", i)
		var wg sync.WaitGroup
		for _, secrets := range []map[string]any{{"TOKEN": value}, {"TOKEN": secretMask}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey,
					body: map[string]any{"settings": map[string]any{"secrets": secrets}}})
				if res.Code != http.StatusOK {
					t.Errorf("patch: %d %s", res.Code, res.Body)
				}
			}()
		}
		wg.Wait()
		agent, err := h.store.Agents().GetAgent(context.Background(), h.account.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		secrets, err := h.store.Agents().Secrets(agent)
		if err != nil {
			t.Fatal(err)
		}
		if got := secrets.String("TOKEN"); got != value {
			t.Fatalf("round %d: TOKEN = %q, want %q: a masked PATCH restored an older value", i, got, value)
		}
	}
}

// withMCPHeaders is an agent body whose settings hold the MCP server docs
// sending headers.
func withMCPHeaders(name string, headers map[string]any) map[string]any {
	return map[string]any{"name": name, "settings": map[string]any{"mcp": map[string]any{"servers": map[string]any{
		"docs": map[string]any{"type": "streamable-http", "url": "https://docs.example/mcp", "headers": headers}}}}}
}

func TestMCPHeadersAreSecrets(t *testing.T) {
	h := newHarnessAt(t, filepath.Join(t.TempDir(), "agentd.db"), []store.Option{store.WithSecretBox(storetest.Box(t))}, nil)
	id := h.createAgent(withMCPHeaders("m", map[string]any{"Authorization": "Bearer hdr-1"}))
	patch := func(headers map[string]any) response {
		return h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: withMCPHeaders("m", headers)})
	}
	if res := patch(map[string]any{"Authorization": secretMask}); res.Code != http.StatusOK {
		t.Errorf("masked patch: %d %s", res.Code, res.Body)
	}
	res := patch(map[string]any{"Authorization": secretMask, "X-New": secretMask})
	if res.Code != http.StatusBadRequest || res.Details(t)["field"] != "settings.mcp.servers.docs.headers.X-New" {
		t.Errorf("mask of a missing header: %d %s", res.Code, res.Body)
	}
	g := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey})
	if g.Code != http.StatusOK || strings.Contains(string(g.Body), "hdr-1") || !strings.Contains(string(g.Body), `"Authorization":"`+secretMask+`"`) {
		t.Errorf("Get Agent: %d %s", g.Code, g.Body)
	}
	agent, err := h.store.Agents().GetAgent(context.Background(), h.account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := h.store.Agents().Secrets(agent)
	if err != nil {
		t.Fatal(err)
	}
	if got := secrets.String(domain.HeaderSecretName("docs", "Authorization")); got != "Bearer hdr-1" {
		t.Errorf("header = %q, want the value created", got)
	}
}
