package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
