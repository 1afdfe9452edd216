package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileAnswer answers one JSON-RPC request of method with id, or returns
// false to let the real server answer.
type hostileAnswer func(w http.ResponseWriter, method string, id json.RawMessage) bool

// startHostileMCPServer is startMCPServer's streamable server with some
// requests answered by answer instead.
func startHostileMCPServer(t *testing.T, answer hostileAnswer) *testMCPServer {
	t.Helper()
	ts := startMCPServer(t, mcpFlavourStreamable)
	real := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var msg struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.ID != nil && answer(w, msg.Method, msg.ID) {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		real.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	ts.url = hs.URL + "/mcp"
	return ts
}

// answerJSON answers with the JSON-RPC result, as JSON or as one SSE event.
func answerJSON(w http.ResponseWriter, id json.RawMessage, result string, sse bool) {
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, msg)
}

// fiveMiB is more than any one answer of an MCP server may be.
var fiveMiB = strings.Repeat("x", 5<<20)

// TestMCPAnswersAreBounded: a list or a call answered with more than 4 MiB,
// as one JSON body or one SSE event, fails with a short reason instead of
// being read whole; a server's error text is cut.
func TestMCPAnswersAreBounded(t *testing.T) {
	bigList := `{"tools":[{"name":"big","description":"` + fiveMiB + `","inputSchema":{"type":"object"}}]}`
	bigResult := `{"content":[{"type":"text","text":"` + fiveMiB + `"}]}`
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			mcpCheckLeaks(t)
			bigCall := false
			ts := startHostileMCPServer(t, func(w http.ResponseWriter, method string, id json.RawMessage) bool {
				switch {
				case method == "tools/list" && !bigCall:
					answerJSON(w, id, bigList, sse)
				case method == "tools/call":
					answerJSON(w, id, bigResult, sse)
				default:
					return false
				}
				return true
			})
			p := newTestMCPPool(t, nil)
			srv := ts.config()
			_, _, err := p.tools(context.Background(), mcpTestSpec, srv)
			if err == nil || err.Error() != "list tools: the MCP server's answer is over 4 MiB" {
				t.Errorf("tools error = %v, want the answer refused as over 4 MiB", err)
			}
			bigCall = true
			res := p.call(context.Background(), mcpTestSpec, srv, "srv__echo", json.RawMessage(`{"text":"hi"}`))
			if want := Failure("call failed: the MCP server's answer is over 4 MiB"); res != want {
				t.Errorf("call = %.200s, want %+v", res.Text, want)
			}
		})
	}
}

// TestMCPServerErrorTextIsCut: a JSON-RPC error of 1 MB reaches the
// errors of a listing cut to a few hundred characters.
func TestMCPServerErrorTextIsCut(t *testing.T) {
	mcpCheckLeaks(t)
	ts := startHostileMCPServer(t, func(w http.ResponseWriter, method string, id json.RawMessage) bool {
		if method != "tools/list" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"%s"}}`, id, strings.Repeat("E", 1<<20))
		return true
	})
	p := newTestMCPPool(t, nil)
	_, _, err := p.tools(context.Background(), mcpTestSpec, ts.config())
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "EEEE") {
		t.Errorf("tools error of %d bytes (%.100s…), want the server's text cut to a few hundred", len(fmt.Sprint(err)), err)
	}
}

// TestMCPToolsAreBounded: a tool whose schema is over 64 KiB is not
// offered and is named in the errors; descriptions are cut to 1 KiB; a
// server keeps at most 256 tools, the rest named in the errors.
func TestMCPToolsAreBounded(t *testing.T) {
	mcpCheckLeaks(t)
	ts := startMCPServer(t, mcpFlavourStreamable)
	huge := json.RawMessage(`{"type":"object","description":"` + strings.Repeat("s", 65<<10) + `"}`)
	ts.srv.AddTool(&mcp.Tool{Name: "huge", InputSchema: huge},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcpTextResult("", false), nil
		})
	ts.srv.AddTool(&mcp.Tool{Name: "wordy", Description: strings.Repeat("d", 5000), InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcpTextResult("", false), nil
		})
	s := New(Config{AllowPrivate: true})
	t.Cleanup(s.Close)
	spec := Spec{AgentID: "agent-1", Version: "v1", MCPServers: []MCPServer{ts.config()}}

	set := s.Set(context.Background(), spec)
	if set.Has("srv__huge") {
		t.Error("the tool with a 65 KiB schema is offered")
	}
	if errs := set.Errors(); len(errs) != 1 || errs[0].Server != "srv" || !strings.Contains(errs[0].Reason, `"huge"`) || !strings.Contains(errs[0].Reason, "64 KiB") {
		t.Errorf("errors = %+v, want one naming the tool huge and the 64 KiB bound", errs)
	}
	for _, tool := range set.Tools() {
		if tool.Name == "srv__wordy" && len(tool.Description) > 1024 {
			t.Errorf("wordy's description is %d bytes, want at most 1 KiB", len(tool.Description))
		}
	}

	for i := range 300 {
		ts.addRaw(fmt.Sprintf("many%03d", i), func(context.Context) *mcp.CallToolResult { return mcpTextResult("", false) })
	}
	set = s.Set(context.Background(), Spec{AgentID: "agent-2", Version: "v1", MCPServers: spec.MCPServers})
	if n := len(set.Tools()); n != maxMCPTools {
		t.Errorf("%d tools kept, want %d", n, maxMCPTools)
	}
	if errs := set.Errors(); len(errs) == 0 || !strings.Contains(errs[len(errs)-1].Reason, "256") {
		t.Errorf("errors = %+v, want one saying only 256 tools are kept", errs)
	}
}

// TestMCPErrorsNameNoAddress: a refused, blocked or failing server is
// reported in fixed words, without the dialer's or resolver's text.
func TestMCPErrorsNameNoAddress(t *testing.T) {
	mcpCheckLeaks(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "go away", http.StatusForbidden)
	}))
	defer forbidden.Close()
	guarded := New(Config{})
	t.Cleanup(guarded.Close)
	open := New(Config{AllowPrivate: true})
	t.Cleanup(open.Close)
	for _, tt := range []struct {
		name string
		s    *Service
		url  string
		want string
	}{
		{"refused", open, gone.URL, "connect: the MCP server refused the connection"},
		{"blocked", guarded, forbidden.URL, "connect: the MCP server's address is not allowed (loopback, private or other internal address)"},
		{"status", open, forbidden.URL, "connect: the MCP server answered HTTP status 403"},
	} {
		for _, transport := range []string{TransportStreamableHTTP, TransportSSE} {
			t.Run(tt.name+"/"+transport, func(t *testing.T) {
				srv := MCPServer{Name: "srv", Type: transport, URL: tt.url + "/mcp"}
				set := tt.s.Set(context.Background(), Spec{AgentID: tt.name + transport, Version: "v1", MCPServers: []MCPServer{srv}})
				if errs := set.Errors(); len(errs) != 1 || errs[0].Reason != tt.want {
					t.Errorf("errors = %+v, want %q", errs, tt.want)
				}
			})
		}
	}
}
