package server

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/recall"
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
	for _, leak := range []string{"must-not-leave", domain.SecretMask, `"secrets"`, `"headers"`, id} {
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

// TestExportImportWithBundle: memories, knowledge and history exported
// with include come back equal from Create Agent, on every member.
func TestExportImportWithBundle(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) { testExportImportWithBundle(t, newHarnessAt(t, dsn, nil, nil)) })
}

func testExportImportWithBundle(t *testing.T, h *harness) {
	h.openai.Respond(llmtest.Reply{Text: "noted"})
	id := h.createAgent(map[string]any{"name": "Mover", "deleteProtection": true})
	h.sendApart(id,
		map[string]any{"text": "hi all", "userId": "ann", "roomId": "lobby"},
		map[string]any{"text": "just me", "userId": "bob"},
		map[string]any{"text": "me too", "userId": "bob", "roomId": "lobby"})
	for _, m := range []map[string]any{{"text": "Likes tea", "userId": "ann"}, {"text": "Speaks French"}} {
		if res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/memories", key: h.writeKey, body: m}); res.Code != http.StatusCreated {
			t.Fatalf("memory: %d %s", res.Code, res.Body)
		}
	}
	doc := map[string]any{"name": "handbook.md", "text": "# Moving\n\nPack light.\n\nLabel every box."}
	if res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/knowledge", key: h.writeKey, body: doc}); res.Code != http.StatusCreated {
		t.Fatalf("knowledge: %d %s", res.Code, res.Body)
	}

	export := func(id string) map[string]any {
		res := h.do(request{method: "GET", path: "/v1/agents/" + id + "/export?include=memories,knowledge,history", key: h.readKey})
		if res.Code != http.StatusOK {
			t.Fatalf("export %s: %d %s", id, res.Code, res.Body)
		}
		return res.Data(t)
	}
	file := export(id)
	bundle, _ := file["agentd"].(map[string]any)
	if n := len(bundle["memories"].([]any)); n != 2 {
		t.Errorf("%d memories exported, want 2: %v", n, bundle)
	}
	if k := bundle["knowledge"].([]any); len(k) != 1 || k[0].(map[string]any)["text"] != "# Moving\n\nPack light.\n\nLabel every box." {
		t.Errorf("knowledge exported: %v", k)
	}
	if hist := bundle["history"].([]any); len(hist) != 2 || len(hist[1].(map[string]any)["messages"].([]any)) != 4 {
		t.Errorf("history exported: %v", hist)
	}

	imported := h.createAgent(file)
	if again := export(imported); !reflect.DeepEqual(again, file) {
		t.Errorf("round trip changed the agent:\nbefore %v\nafter  %v", file, again)
	}
	convs := h.items(h.get("/v1/agents/" + imported + "/conversations"))
	if got := field(convs, "messageCount"); got != "4,2" {
		t.Errorf("imported conversations' message counts: %s", got)
	}
	if res := h.do(request{method: "DELETE", path: "/v1/agents/" + imported, key: h.writeKey}); res.Code != http.StatusForbidden && res.Code != http.StatusConflict {
		t.Errorf("the import lost deleteProtection: %d %s", res.Code, res.Body)
	}
}

func TestExportIncludeValidation(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "mine"})
	for _, q := range []string{"include=everything", "include=memories,secrets", "include=memories,knowledge,history,memories"} {
		res := h.do(request{method: "GET", path: "/v1/agents/" + id + "/export?" + q, key: h.readKey})
		if res.Code != http.StatusBadRequest || res.Details(t)["field"] != "include" {
			t.Errorf("%s: %d %s", q, res.Code, res.Body)
		}
	}
	res := h.do(request{method: "GET", path: "/v1/agents/" + id + "/export?include=history", key: h.readKey})
	if res.Code != http.StatusOK || res.Data(t)["agentd"] == nil {
		t.Errorf("include=history: %d %s", res.Code, res.Body)
	}
	bad := map[string]any{"name": "x", "agentd": map[string]any{"history": []any{map[string]any{"messages": []any{map[string]any{"role": "user", "text": "hi"}}}}}}
	if res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: bad}); res.Code != http.StatusBadRequest || res.Details(t)["field"] != "agentd.history[0]" {
		t.Errorf("unnamed conversation: %d %s", res.Code, res.Body)
	}
	if res := h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: map[string]any{"agentd": map[string]any{}}}); res.Code != http.StatusBadRequest {
		t.Errorf("agentd in a PATCH: %d %s", res.Code, res.Body)
	}
}

// TestImportRefusesTimesOutsideIDs: a bundle time before 1970 or after 9999
// in UTC, which no id can carry or no timestamp show, is 400 naming its
// member, and the import stores nothing: not even the agent.
func TestImportRefusesTimesOutsideIDs(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarnessAt(t, dsn, nil, nil)
		msg := func(createdAt string) map[string]any {
			return map[string]any{"role": "user", "text": "hi", "createdAt": createdAt}
		}
		history := func(createdAt ...string) map[string]any {
			var msgs []any
			for _, c := range createdAt {
				msgs = append(msgs, msg(c))
			}
			return map[string]any{"history": []any{map[string]any{"userId": "ann", "messages": msgs}}}
		}
		memories := func(createdAt string) map[string]any {
			return map[string]any{"memories": []any{map[string]any{"text": "fine"}, map[string]any{"text": "odd", "createdAt": createdAt}}}
		}
		for _, c := range []struct {
			bundle map[string]any
			field  string
		}{
			{history("1969-12-31T23:59:59.999Z"), "agentd.history[0].messages[0].createdAt"},
			{history("2020-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00"), "agentd.history[0].messages[1].createdAt"},
			{memories("9999-12-31T23:59:59-23:59"), "agentd.memories[1].createdAt"},
			{memories("0000-01-01T00:00:00Z"), "agentd.memories[1].createdAt"},
		} {
			h.with(t).checkError(t, errorCase{name: c.field, req: request{method: "POST", path: "/v1/agents", key: h.writeKey,
				body: map[string]any{"name": "Dated", "agentd": c.bundle}}, status: 400, code: "INVALID_REQUEST", field: c.field})
		}
		if n := h.agentCount(); n != 0 {
			t.Errorf("refused imports left %v agents behind", n)
		}
		id := h.createAgent(map[string]any{"name": "Edges", "agentd": history("1970-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z")})
		if res := h.get("/v1/agents/" + id + "/export?include=history"); res.Code != 200 {
			t.Errorf("export of the years' ends: %d %s", res.Code, res.Body)
		}
	})
}

// panickyRecall is a Recall whose knowledge import panics.
type panickyRecall struct{ Recall }

func (panickyRecall) AddKnowledge(context.Context, recall.Agent, string, string) (domain.KnowledgeDoc, error) {
	panic("add knowledge")
}

// TestImportThatPanicsLeavesNoAgent: an import stops whole, even when it
// stops by a panic, which the server answers as any internal error.
func TestImportThatPanicsLeavesNoAgent(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.Recall = panickyRecall{c.Recall} })
	res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: map[string]any{"name": "Doomed",
		"agentd": map[string]any{"knowledge": []any{map[string]any{"name": "a.md", "text": "text"}}}}})
	if res.Code != http.StatusInternalServerError {
		t.Fatalf("import that panics: %d %s", res.Code, res.Body)
	}
	if n := h.agentCount(); n != 0 {
		t.Errorf("the import that panicked left its agent: %v agents", n)
	}
}

// agentCount is how many agents the harness's account has.
func (h *harness) agentCount() int {
	h.t.Helper()
	n, _ := h.get("/v1/agents").Data(h.t)["pagination"].(map[string]any)["totalItems"].(float64)
	return int(n)
}

// TestExportOfUnshowableTimeIsAnError: a stored time no timestamp can show
// (kept from before imports were bounded) makes the export fail as an
// error, not as a panic of the server.
func TestExportOfUnshowableTimeIsAnError(t *testing.T) {
	var logs testutil.SyncBuffer
	h := newHarnessAt(t, storetest.PostgresDSN(t), nil, nil, func(c *harnessConfig) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	id := h.createAgent(map[string]any{"name": "Old"})
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := h.store.Memories().CreateMemory(context.Background(), h.account.ID,
		domain.Memory{AgentID: id, Text: "late", Source: domain.MemorySourceAPI, CreatedAt: late}, "late", false); err != nil {
		t.Fatal(err)
	}
	res := h.get("/v1/agents/" + id + "/export?include=memories")
	if res.Code != http.StatusInternalServerError {
		t.Errorf("export: %d %s", res.Code, res.Body)
	}
	if strings.Contains(logs.String(), "panic") {
		t.Errorf("the export panicked: %s", logs.String())
	}
}
