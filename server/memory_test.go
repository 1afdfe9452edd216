package server

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store/storetest"
)

// TestMemoryAPI: memories are created, listed (newest first, by user,
// ranked by q), deleted one by one and per user; a read key lists but
// does not write; another account sees none; an unknown one is 404.
func TestMemoryAPI(t *testing.T) {
	for name, h := range map[string]*harness{"sqlite": newHarness(t), "postgres": newHarnessPostgres(t)} {
		t.Run(name, func(t *testing.T) { memoryAPI(t, h.with(t)) })
	}
}

func memoryAPI(t *testing.T, h *harness) {
	id := h.createAgent(map[string]any{"name": "Rememberer", "modelProvider": "anthropic", "model": "claude-haiku-4-5"})
	base := "/v1/agents/" + id + "/memories"
	for _, m := range []map[string]any{
		{"text": "Ann is learning Rust", "userId": "ann"},
		{"text": "Ann drinks green tea", "userId": "ann"},
		{"text": "Bob plays chess", "userId": "bob"},
		{"text": "The office closes at six"},
	} {
		h.created(t, base, m)
	}
	list := func(query string) []string {
		var texts []string
		for _, it := range h.items(h.get(base + query)) {
			texts = append(texts, it["text"].(string))
		}
		return texts
	}
	if got := list(""); strings.Join(got, "|") != "The office closes at six|Bob plays chess|Ann drinks green tea|Ann is learning Rust" {
		t.Errorf("newest first: %q", got)
	}
	if got := list("?userId=ann"); len(got) != 2 {
		t.Errorf("ann's: %q", got)
	}
	if got := list("?q=rust+programming"); len(got) != 1 || got[0] != "Ann is learning Rust" {
		t.Errorf("ranked by q: %q", got)
	}
	if res := h.do(request{method: "POST", path: base, key: h.readKey, body: map[string]any{"text": "x"}}); res.Code != http.StatusForbidden {
		t.Errorf("read key create: %d", res.Code)
	}
	other := h.newKey(h.newAccount("other-"+t.Name(), domain.TierEnterprise).Name, domain.ScopeWrite)
	if res := h.do(request{method: "GET", path: base, key: other}); res.Code != http.StatusNotFound || res.ErrorCode(t) != "AGENT_NOT_FOUND" {
		t.Errorf("other account: %d %s", res.Code, res.Body)
	}
	res := h.do(request{method: "DELETE", path: base + "?userId=ann", key: h.writeKey})
	if res.Code != 200 || res.Data(t)["deleted"] != float64(2) || len(list("")) != 2 {
		t.Errorf("forget ann: %d %s", res.Code, res.Body)
	}
	if res := h.do(request{method: "DELETE", path: base + "/mem_missing", key: h.writeKey}); res.Code != 404 || res.ErrorCode(t) != "MEMORY_NOT_FOUND" {
		t.Errorf("unknown memory: %d %s", res.Code, res.Body)
	}
	first := h.items(h.get(base))[0]["id"].(string)
	if res := h.do(request{method: "DELETE", path: base + "/" + first, key: h.writeKey}); res.Code != 200 || res.Data(t)["id"] != first {
		t.Errorf("delete: %d %s", res.Code, res.Body)
	}
	totals := h.get("/v1/agents/" + id + "/analytics").Data(t)["totals"].(map[string]any)
	if totals["memoriesSaved"] != float64(4) {
		t.Errorf("memoriesSaved = %v", totals["memoriesSaved"])
	}
}

// TestKnowledgeAPI: a document is chunked and listed; the chunk about the
// message is in the context preview with its name, another document's is
// not; too long a text is 400 naming text; delete, then 404.
func TestKnowledgeAPI(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Knower", "modelProvider": "anthropic", "model": "claude-haiku-4-5"})
	base := "/v1/agents/" + id + "/knowledge"
	fees := strings.Repeat("Every trade costs a fee of 0.1 percent. ", 20) + "\n\n" + strings.Repeat("Withdrawals are free. ", 20)
	res := h.do(request{method: "POST", path: base, key: h.writeKey, body: map[string]any{"name": "fees.md", "text": fees}})
	if res.Code != 201 || res.Data(t)["chunks"] != float64(2) || res.Data(t)["bytes"] != float64(len(fees)) {
		t.Fatalf("create: %d %s", res.Code, res.Body)
	}
	doc := res.Data(t)["id"].(string)
	h.created(t, base, map[string]any{"name": "trails.md", "text": "The northern trail climbs through pine forest."})
	preview := h.do(request{method: "POST", path: "/v1/agents/" + id + "/context-preview", key: h.readKey,
		body: map[string]any{"text": "What fee does a trade cost?", "userId": "u1"}})
	if preview.Code != 200 {
		t.Fatalf("preview: %d %s", preview.Code, preview.Body)
	}
	p := preview.Data(t)
	chunks := p["knowledge"].([]any)
	if len(chunks) == 0 || chunks[0].(map[string]any)["name"] != "fees.md" || !strings.Contains(p["system"].(string), "Relevant knowledge:\n[fees.md]") ||
		strings.Contains(p["system"].(string), "pine forest") || p["estimatedTokens"].(float64) <= 0 {
		t.Errorf("preview = %v", p)
	}
	if len(h.anthropic.Requests()) != 0 {
		t.Error("the preview called the model")
	}
	tooLong := h.do(request{method: "POST", path: base, key: h.writeKey, body: map[string]any{"name": "big", "text": strings.Repeat("x", 1_000_001)}})
	if tooLong.Code != 400 || tooLong.Details(t)["field"] != "text" {
		t.Errorf("too long: %d %s", tooLong.Code, tooLong.Body)
	}
	if res := h.do(request{method: "DELETE", path: base + "/" + doc, key: h.writeKey}); res.Code != 200 {
		t.Errorf("delete: %d %s", res.Code, res.Body)
	}
	if res := h.do(request{method: "DELETE", path: base + "/" + doc, key: h.writeKey}); res.Code != 404 || res.ErrorCode(t) != "KNOWLEDGE_NOT_FOUND" {
		t.Errorf("deleted again: %d %s", res.Code, res.Body)
	}
	if items := h.items(h.get(base)); len(items) != 1 || items[0]["name"] != "trails.md" {
		t.Errorf("list: %v", items)
	}
}

// TestMemoryThroughTurns: an agent with long-term memory saves a memory
// through its tool in one conversation and the context preview of another
// conversation of the same user shows it; the history lists the tool call.
// The memory names the conversation, though it was saved in its first
// exchange.
func TestMemoryThroughTurns(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Keeper", "modelProvider": "openai", "model": "gpt-4o-mini",
		"memory": map[string]any{"longTermEnabled": true}})
	h.openai.Respond(llmtest.Reply{Text: "I will remember."})
	h.openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "memory_save", Arguments: `{"text":"Ann's favourite colour is teal"}`}}})
	if res := h.send(id, map[string]any{"text": "My favourite colour is teal", "userId": "ann"}); res.Code != 200 {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	saved := h.items(h.get("/v1/agents/" + id + "/memories"))
	convs := h.items(h.get("/v1/agents/" + id + "/conversations"))
	if len(saved) != 1 || len(convs) != 1 || saved[0]["conversationId"] != convs[0]["id"] {
		t.Errorf("memory saved in the first exchange: %v; conversations %v", saved, convs)
	}
	p := h.do(request{method: "POST", path: "/v1/agents/" + id + "/context-preview", key: h.readKey,
		body: map[string]any{"text": "What is my favourite colour?", "userId": "ann", "roomId": "lobby"}}).Data(t)
	mems := p["memories"].([]any)
	if len(mems) != 1 || mems[0].(map[string]any)["text"] != "Ann's favourite colour is teal" {
		t.Errorf("preview memories = %v", mems)
	}
	tools := p["tools"].([]any)
	if len(tools) != 2 || tools[0].(map[string]any)["source"] != "builtin" {
		t.Errorf("preview tools = %v", tools)
	}
	bob := h.do(request{method: "POST", path: "/v1/agents/" + id + "/context-preview", key: h.readKey,
		body: map[string]any{"text": "What is my favourite colour?", "userId": "bob"}}).Data(t)
	if len(bob["memories"].([]any)) != 0 {
		t.Errorf("bob's preview shows %v", bob["memories"])
	}
}

// TestImportEmbedsMemoriesInBatches: an import's memories are embedded in
// requests of many texts each, not one request per memory, and all stored.
func TestImportEmbedsMemoriesInBatches(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarnessAt(t, dsn, nil, nil)
		mems := make([]any, 250)
		for i := range mems {
			mems[i] = map[string]any{"text": fmt.Sprint("fact ", i)}
		}
		id := h.createAgent(map[string]any{"name": "Mover", "modelProvider": "openai", "agentd": map[string]any{"memories": mems}})
		if n := len(h.openai.EmbeddingRequests()); n != 3 {
			t.Errorf("%d embedding requests for 250 memories, want 3", n)
		}
		total := h.get("/v1/agents/" + id + "/memories").Data(t)["pagination"].(map[string]any)["totalItems"]
		if total != 250.0 {
			t.Errorf("%v memories stored, want 250", total)
		}
	})
}

// TestMemorySearchShowsWhatTheListShows: a memory found by q, ranked by
// vectors (openai) or by its terms (anthropic, which embeds nothing), has
// the members it has in the plain list.
func TestMemorySearchShowsWhatTheListShows(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarnessAt(t, dsn, nil, nil)
		for _, provider := range []string{"openai", "anthropic"} {
			id := h.createAgent(map[string]any{"name": "Keeper", "modelProvider": provider})
			for _, m := range []map[string]any{{"text": "Ann likes green tea", "userId": "ann"}, {"text": "The office opens at nine"}} {
				if res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/memories", key: h.writeKey, body: m}); res.Code != http.StatusCreated {
					t.Fatalf("memory: %d %s", res.Code, res.Body)
				}
			}
			listed := map[any]map[string]any{}
			for _, m := range h.items(h.get("/v1/agents/" + id + "/memories")) {
				listed[m["id"]] = m
			}
			found := h.items(h.get("/v1/agents/" + id + "/memories?q=green+tea"))
			if len(found) == 0 {
				t.Fatalf("%s: q found nothing", provider)
			}
			for _, m := range found {
				if !reflect.DeepEqual(m, listed[m["id"]]) {
					t.Errorf("%s: found %v, listed %v", provider, m, listed[m["id"]])
				}
			}
		}
	})
}
