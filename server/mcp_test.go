package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an API key to every request of the MCP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the Go SDK's client to the harness's /v1/mcp with key.
func (h *harness) mcpSession(t *testing.T, key string) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(h.srv.Handler())
	t.Cleanup(srv.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: srv.URL + "/v1/mcp", HTTPClient: &http.Client{Transport: bearer{key}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// toolText calls tool and returns its first text and whether it failed.
func toolText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// A read key lists agents but cannot send; a message is checked as Send
// Message's body is, naming the member.
func TestMCPToolsRefuseWhatSendMessageRefuses(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Ada"})
	read := h.mcpSession(t, h.readKey)
	if text, failed := toolText(t, read, "list_agents", nil); failed || !strings.Contains(text, id) {
		t.Errorf("list_agents with a read key = %q, %v", text, failed)
	}
	if text, failed := toolText(t, read, "send_message", map[string]any{"agentId": id, "text": "hi"}); !failed || !strings.Contains(text, "INSUFFICIENT_PERMISSIONS") {
		t.Errorf("send_message with a read key = %q, %v", text, failed)
	}
	write := h.mcpSession(t, h.writeKey)
	long := strings.Repeat("x", 16001)
	if text, failed := toolText(t, write, "send_message", map[string]any{"agentId": id, "text": long}); !failed || !strings.Contains(text, "INVALID_REQUEST") || !strings.Contains(text, "text") {
		t.Errorf("send_message with a text too long = %q, %v", text, failed)
	}
	if text, failed := toolText(t, write, "send_message", map[string]any{"agentId": id, "text": "hi", "roomId": "a\x01b"}); !failed || !strings.Contains(text, "roomId") {
		t.Errorf("send_message with a bad roomId = %q, %v", text, failed)
	}
}

// TestMCPSendMessageCountsOnTheAgentsLimit: send_message counts on the
// agent's one message counter, with Send Message and the other paths, and
// a refusal names RATE_LIMIT_EXCEEDED.
func TestMCPSendMessageCountsOnTheAgentsLimit(t *testing.T) {
	counter := limit.NewMemoryCounter()
	h := newHarness(t, func(c *harnessConfig) { c.Counter = counter })
	account := h.newAccount("std", domain.TierStandard)
	key := h.newKey("std", domain.ScopeWrite)
	res := h.do(request{method: "POST", path: "/v1/agents", key: key, body: map[string]any{"name": "Ada"}})
	if res.Code != http.StatusCreated {
		t.Fatalf("create agent: %d %s", res.Code, res.Body)
	}
	id := res.Data(t)["id"].(string)
	cs := h.mcpSession(t, key)
	inOneWindow(15 * time.Second)
	if text, failed := toolText(t, cs, "send_message", map[string]any{"agentId": id, "text": "hi"}); failed {
		t.Fatalf("first send_message = %q", text)
	}
	// The 59 Send Messages left of the agent's 60 a minute.
	for range 59 {
		if res, err := limit.Check(context.Background(), counter, limit.Rule{Key: "msg:" + account.ID + ":" + id, Limit: 60}); err != nil || !res.Allowed {
			t.Fatalf("counting a message: %+v %v", res, err)
		}
	}
	if text, failed := toolText(t, cs, "send_message", map[string]any{"agentId": id, "text": "hi"}); !failed || !strings.Contains(text, "RATE_LIMIT_EXCEEDED") {
		t.Errorf("send_message past the agent's limit = %q, %v", text, failed)
	}
}

// TestMCPSendMessageOutputMatchesItsSchema: the structured output of a
// turn that ran a tool validates against the output schema the server
// lists.
func TestMCPSendMessageOutputMatchesItsSchema(t *testing.T) {
	h := newHarness(t)
	handler := newPriceHandler(t)
	id := h.toolAgent(handler.URL)
	h.openai.Respond(llmtest.Reply{Text: "SOL is at 142."})
	h.openai.Enqueue(priceCall)
	cs := h.mcpSession(t, h.writeKey)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"agentId": id, "text": "price of SOL?"}})
	if err != nil || res.IsError {
		t.Fatalf("send_message: %v %+v", err, res)
	}
	schemas := map[string]any{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = tool.OutputSchema
	}
	validateOutput(t, schemas["send_message"], res.StructuredContent)
	if got := h.runsOf(id); got != "mcp completed" {
		t.Errorf("send_message's run: %s", got)
	}
	list, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_agents"})
	if err != nil {
		t.Fatal(err)
	}
	validateOutput(t, schemas["list_agents"], list.StructuredContent)
	var agents struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	raw, _ := json.Marshal(schemas["list_agents"])
	if err := json.Unmarshal(raw, &agents); err != nil || agents.Properties["agents"].Type != "array" {
		t.Errorf("list_agents types agents as %v, want array", agents.Properties["agents"].Type)
	}
}

// validateOutput fails the test unless out validates against schema, both
// as a client gets them.
func validateOutput(t *testing.T, schema, out any) {
	t.Helper()
	var s jsonschema.Schema
	raw, _ := json.Marshal(schema)
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("output schema: %v", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve the output schema: %v", err)
	}
	var instance any
	raw, _ = json.Marshal(out)
	_ = json.Unmarshal(raw, &instance)
	if err := resolved.Validate(instance); err != nil {
		t.Errorf("output %s does not validate: %v", raw, err)
	}
}

// TestMCPServerPolish: the server names its version, and a 401 says how to
// authenticate.
func TestMCPServerPolish(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.Version = "1.2.3" })
	cs := h.mcpSession(t, h.readKey)
	if v := cs.InitializeResult().ServerInfo.Version; v != "1.2.3" {
		t.Errorf("serverInfo.version = %q, want the binary's", v)
	}
	res := h.do(request{method: "POST", path: "/v1/mcp", body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}})
	if res.Code != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no key: %d, WWW-Authenticate %q", res.Code, res.Header.Get("WWW-Authenticate"))
	}
}
