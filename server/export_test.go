package server

import (
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
)

// exportedAgent is an agent body using every kind of member an export has
// to carry: ElizaOS shorthands, secrets, MCP headers, deleteProtection and
// members the API does not describe.
func exportedAgent() map[string]any {
	return map[string]any{
		"name":        "Mover",
		"bio":         "Moves between servers",
		"personality": map[string]any{"traits": []any{"calm"}, "tone": "friendly"},
		"knowledge":   []any{"Logistics"},
		"clients":     []any{"discord"},
		"settings": map[string]any{
			"discord": map[string]any{"channels": []any{"moves"}, "respondToMentions": true},
			"secrets": map[string]any{"OPENAI_API_KEY": "sk-must-not-leave"},
			"mcp": map[string]any{"servers": map[string]any{"docs": map[string]any{
				"type": "streamable-http", "url": "https://docs.example/mcp",
				"headers": map[string]any{"Authorization": "Bearer hdr-must-not-leave"}}}},
		},
		"plugins":          []any{"@elizaos/plugin-solana", map[string]any{"name": "@elizaos/plugin-two", "enabled": false, "config": map[string]any{"a": 1.5}}},
		"deleteProtection": true,
		"lore":             []any{"Born on a truck"},
		"customMember":     map[string]any{"nested": []any{1.0, "two", nil}},
	}
}

// withoutSecrets removes what an export leaves out of a Get Agent document:
// the service's members and every secret group.
func withoutSecrets(doc map[string]any) map[string]any {
	for _, m := range []string{"id", "status", "createdAt", "updatedAt", "metrics"} {
		delete(doc, m)
	}
	settings, _ := doc["settings"].(map[string]any)
	delete(settings, "secrets")
	if mcp, ok := settings["mcp"].(map[string]any); ok {
		servers, _ := mcp["servers"].(map[string]any)
		for _, s := range servers {
			delete(s.(map[string]any), "headers")
		}
	}
	return doc
}

// TestExportImportRoundTrip: the export carries every member but the
// service's and the secrets, and Create Agent takes it as it is to an
// agent equal on every member, secrets excepted.
func TestExportImportRoundTrip(t *testing.T) {
	h := newHarnessAt(t, filepath.Join(t.TempDir(), "agentd.db"), []store.Option{store.WithSecretBox(storetest.Box(t))}, nil)
	id := h.createAgent(exportedAgent())
	exp := h.do(request{method: "GET", path: "/v1/agents/" + id + "/export", key: h.readKey})
	if exp.Code != http.StatusOK {
		t.Fatalf("export: %d %s", exp.Code, exp.Body)
	}
	for _, leak := range []string{"must-not-leave", store.SecretMask, `"secrets"`, `"headers"`, id} {
		if strings.Contains(string(exp.Body), leak) {
			t.Errorf("export contains %q: %s", leak, exp.Body)
		}
	}
	file := exp.Data(t)
	for _, m := range []string{"id", "status", "createdAt", "updatedAt", "metrics", "apiEndpoint"} {
		if _, ok := file[m]; ok {
			t.Errorf("export has %s", m)
		}
	}
	if file["deleteProtection"] != true || file["customMember"] == nil {
		t.Errorf("export lost a stored member: %s", exp.Body)
	}

	imported := h.createAgent(file)
	get := func(id string) map[string]any {
		res := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey})
		if res.Code != http.StatusOK {
			t.Fatalf("get %s: %d %s", id, res.Code, res.Body)
		}
		return withoutSecrets(res.Data(t))
	}
	if before, after := get(id), get(imported); !reflect.DeepEqual(before, after) {
		t.Errorf("round trip changed the agent:\nbefore %v\nafter  %v", before, after)
	}
	again := h.do(request{method: "GET", path: "/v1/agents/" + imported + "/export", key: h.readKey})
	if !reflect.DeepEqual(again.Data(t), file) {
		t.Errorf("export of the import differs:\n%s\n%s", exp.Body, again.Body)
	}
}

func TestExportAgentErrors(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "mine"})
	h.newAccount("other", "standard")
	otherKey := h.newKey("other", "read")
	for _, tc := range []struct {
		name   string
		req    request
		status int
		code   string
	}{
		{"foreign", request{method: "GET", path: "/v1/agents/" + id + "/export", key: otherKey}, 404, "AGENT_NOT_FOUND"},
		{"missing", request{method: "GET", path: "/v1/agents/agent_01jd3v8m4q2x7k9w5t6r0yzabc/export", key: h.readKey}, 404, "AGENT_NOT_FOUND"},
		{"no key", request{method: "GET", path: "/v1/agents/" + id + "/export"}, 401, "UNAUTHORIZED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.do(tc.req)
			if res.Code != tc.status || res.ErrorCode(t) != tc.code {
				t.Errorf("%d %s, want %d %s", res.Code, res.Body, tc.status, tc.code)
			}
		})
	}
}
