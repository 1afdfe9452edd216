package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"
)

// The secrets of the test servers: they must never show in an error.
const (
	mcpTestAPIKey   = "key-one-secret"
	mcpTestURLToken = "url-secret"
)

// testMCPServer is a real MCP server of the SDK behind httptest. It counts
// the MCP methods it receives and records the X-Api-Key of every HTTP
// request.
type testMCPServer struct {
	srv *mcp.Server
	url string
	// transport is the MCPServer.Type that reaches it.
	transport string
	// handshake is the method that opens a session on it.
	handshake string
	// down makes every HTTP request fail with 503 while set.
	down atomic.Bool
	// release unblocks the slow tool (closed by unblock).
	release     chan struct{}
	releaseOnce sync.Once

	mu      sync.Mutex
	methods map[string]int
	keys    []string
	// traceparents are the traceparent headers received, "" for none.
	traceparents []string
}

// The mcpFlavours of test server: the SDK's stateful streamable handler and
// its SSE handler speak the 2025-11-25 protocol (they decline the client's
// server/discover probe, and the client falls back to initialize); the
// stateless streamable handler speaks 2026-07-28, where list_changed comes
// through a subscriptions/listen stream.
const (
	mcpFlavourStreamable = "streamable"
	mcpFlavourStateless  = "stateless"
	mcpFlavourSSE        = "sse"
)

// mcpFlavours are the server mcpFlavours every test over HTTP runs on.
var mcpFlavours = []string{mcpFlavourStreamable, mcpFlavourStateless, mcpFlavourSSE}

// startMCPServer serves the test tools as flavour; the server is closed
// when the test ends.
func startMCPServer(t *testing.T, flavour string) *testMCPServer {
	t.Helper()
	ts := &testMCPServer{methods: map[string]int{}, release: make(chan struct{})}
	ts.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ts.srv.AddReceivingMiddleware(ts.count)
	ts.addTools()

	getServer := func(*http.Request) *mcp.Server { return ts.srv }
	var h http.Handler
	switch flavour {
	case mcpFlavourStreamable:
		h = mcp.NewStreamableHTTPHandler(getServer, nil)
		ts.transport, ts.handshake = TransportStreamableHTTP, "initialize"
	case mcpFlavourStateless:
		h = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true})
		ts.transport, ts.handshake = "http", "server/discover"
	case mcpFlavourSSE:
		h = mcp.NewSSEHandler(getServer, nil)
		ts.transport, ts.handshake = TransportSSE, "initialize"
	default:
		t.Fatalf("unknown flavour %q", flavour)
	}
	hs := httptest.NewServer(ts.record(h))
	t.Cleanup(func() {
		ts.unblock()
		hs.Close()
	})
	ts.url = hs.URL + "/mcp?token=" + mcpTestURLToken
	return ts
}

// addTools adds echo (text), fail (isError), mixed (text and an image),
// structured (structured content only) and slow (blocks until cancelled).
func (ts *testMCPServer) addTools() {
	type echoIn struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "echo", Description: "Echoes text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return mcpTextResult(in.Text, false), nil, nil
		})
	ts.addRaw("fail", func(context.Context) *mcp.CallToolResult { return mcpTextResult("it broke", true) })
	ts.addRaw("mixed", func(context.Context) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "caption"},
			&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"},
		}}
	})
	ts.addRaw("structured", func(context.Context) *mcp.CallToolResult {
		return &mcp.CallToolResult{StructuredContent: map[string]int{"sum": 3}}
	})
	ts.addRaw("slow", func(ctx context.Context) *mcp.CallToolResult {
		select {
		case <-ctx.Done():
		case <-ts.release:
		}
		return mcpTextResult("late", false)
	})
}

// addRaw adds a tool without arguments whose result is res.
func (ts *testMCPServer) addRaw(name string, res func(context.Context) *mcp.CallToolResult) {
	tool := &mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}
	ts.srv.AddTool(tool, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return res(ctx), nil
	})
}

// unblock lets the calls of the slow tool return.
func (ts *testMCPServer) unblock() { ts.releaseOnce.Do(func() { close(ts.release) }) }

// mcpTextResult is a result of one text.
func mcpTextResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
}

// count is a receiving middleware counting the methods the server gets.
func (ts *testMCPServer) count(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ts.mu.Lock()
		ts.methods[method]++
		ts.mu.Unlock()
		return next(ctx, method, req)
	}
}

// record is an HTTP middleware keeping the X-Api-Key of every request and
// failing them all while down is set.
func (ts *testMCPServer) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		ts.keys = append(ts.keys, r.Header.Get("X-Api-Key"))
		ts.traceparents = append(ts.traceparents, r.Header.Get("Traceparent"))
		ts.mu.Unlock()
		if ts.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// received is how many HTTP requests the server received.
func (ts *testMCPServer) received() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.keys)
}

// calls is how many times the server received method.
func (ts *testMCPServer) calls(method string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.methods[method]
}

// methodCounts is how many times the server received each method.
func (ts *testMCPServer) methodCounts() map[string]int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return maps.Clone(ts.methods)
}

// opens is how many sessions clients opened.
func (ts *testMCPServer) opens() int {
	return ts.calls(ts.handshake)
}

// apiKeys are the X-Api-Key headers the server saw, one per request.
func (ts *testMCPServer) apiKeys() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.keys)
}

// config is the agent's configuration of the server.
func (ts *testMCPServer) config() MCPServer {
	return MCPServer{Name: "srv", Type: ts.transport, URL: ts.url, Headers: map[string]string{"X-Api-Key": mcpTestAPIKey}}
}

// mcpTestSpec is the agent all tests use unless they need another.
var mcpTestSpec = Spec{AgentID: "agent-1", Version: "v1"}

// newTestMCPPool returns a pool closed when the test ends; tune adjusts its
// config. Its HTTP client is built like netguard's, timeout per request
// included, minus the address guard (httptest is on loopback).
func newTestMCPPool(t *testing.T, tune func(*mcpConfig)) *mcpPool {
	t.Helper()
	client := &http.Client{
		Transport:     &http.Transport{},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	cfg := mcpConfig{HTTPClient: client, Timeout: 5 * time.Second}
	if tune != nil {
		tune(&cfg)
	}
	client.Timeout = cfg.Timeout
	p := newMCPPool(cfg)
	t.Cleanup(func() {
		p.close()
		client.CloseIdleConnections()
	})
	return p
}

// mcpCheckLeaks fails the test when goroutines started during it outlive it.
// Call it first: cleanups run last-in first-out, so the check runs after
// the pools and servers the test made are closed.
// The test servers' own session readers are left out: they belong to the
// SDK's server, not to the client under test, and on a loaded machine one
// may end a moment after the check (a server notices the client gone only
// at its next read).
func mcpCheckLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	server := goleak.IgnoreTopFunction("github.com/modelcontextprotocol/go-sdk/mcp.(*streamableServerConn).Read")
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, server) })
}

// mcpSessionOf is the current session of (agent, server), nil when none.
func mcpSessionOf(p *mcpPool, agent, server string) *mcpSession {
	p.mu.Lock()
	e := p.entries[mcpKey{agent, server}]
	p.mu.Unlock()
	if e == nil {
		return nil
	}
	p.lockEntry(e)
	defer p.release(e)
	return e.sess
}

// mustMCPTools lists the tools of srv or fails the test.
func mustMCPTools(t *testing.T, p *mcpPool, spec Spec, srv MCPServer) []Tool {
	t.Helper()
	list, _, err := p.tools(context.Background(), spec, srv)
	if err != nil {
		t.Fatalf("tools: %v", err)
	}
	return list
}

// mcpToolNames are the names of list.
func mcpToolNames(list []Tool) []string {
	names := make([]string, len(list))
	for i, tool := range list {
		names[i] = tool.Name
	}
	return names
}

// mcpEventually polls cond for up to 5 seconds.
func mcpEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMCPToolName(t *testing.T) {
	long := strings.Repeat("t", 80)
	tests := []struct {
		server, tool, want string
	}{
		{"fs", "read_file", "fs__read_file"},
		{"fs", "read-file", "fs__read-file"},
		{"fs", "read.file/v2 ü", "fs__read_file_v2__"},
		{"fs", strings.Repeat("a", 60), "fs__" + strings.Repeat("a", 60)}, // 64 exactly stays whole
	}
	for _, tt := range tests {
		if got := mcpToolName(tt.server, tt.tool); got != tt.want {
			t.Errorf("mcpToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}

	a, b := mcpToolName("fs", long+"a"), mcpToolName("fs", long+"b")
	for _, name := range []string{a, b} {
		if len(name) != 64 || !NamePattern.MatchString(name) {
			t.Errorf("long name %q: length %d, want 64 matching NamePattern", name, len(name))
		}
	}
	if a == b {
		t.Errorf("long names collide: %q", a)
	}
	if !strings.HasPrefix(a, ("fs__" + long)[:56]+"_") {
		t.Errorf("long name %q does not keep the first 56 characters", a)
	}
}

func TestMCPToolParameters(t *testing.T) {
	tests := []struct {
		schema any
		want   string
	}{
		{nil, `{"type":"object"}`},
		{"nonsense", `{"type":"object"}`},
		{map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`},
		{map[string]any{"type": "object", "required": []string{"a"}}, `{"required":["a"],"type":"object"}`},
	}
	for _, tt := range tests {
		if got := string(toolParameters(tt.schema)); got != tt.want {
			t.Errorf("toolParameters(%v) = %s, want %s", tt.schema, got, tt.want)
		}
	}
}

func TestMCPTools(t *testing.T) {
	for _, flavour := range mcpFlavours {
		t.Run(flavour, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, flavour)
			p := newTestMCPPool(t, nil)

			list := mustMCPTools(t, p, mcpTestSpec, ts.config())
			want := []string{"srv__echo", "srv__fail", "srv__mixed", "srv__slow", "srv__structured"}
			if got := mcpToolNames(list); !slices.Equal(got, want) {
				t.Fatalf("names = %v, want %v", got, want)
			}
			echo := list[0]
			if echo.Source != SourceMCP || echo.Server != "srv" || echo.Description != "Echoes text" {
				t.Errorf("echo = %+v", echo)
			}
			var schema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(echo.Parameters, &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil {
				t.Errorf("echo parameters = %s (%v)", echo.Parameters, err)
			}
		})
	}
}

func TestMCPCall(t *testing.T) {
	image, _ := json.Marshal(&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"})
	tests := []struct {
		tool, args string
		want       Result
	}{
		{"srv__echo", `{"text":"hi"}`, Result{Text: "hi", OK: true}},
		{"srv__fail", ``, Result{Text: "it broke"}},
		{"srv__mixed", `{}`, Result{Text: "caption\n" + string(image), OK: true}},
		{"srv__structured", `{}`, Result{Text: `{"sum":3}`, OK: true}},
		{"srv__nope", `{}`, Failure(`unknown tool "srv__nope"`)},
		{"srv__echo", `[1]`, Failure("arguments must be a JSON object")},
	}
	for _, flavour := range mcpFlavours {
		t.Run(flavour, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, flavour)
			p := newTestMCPPool(t, nil)
			srv := ts.config()

			for _, tt := range tests {
				got := p.call(context.Background(), mcpTestSpec, srv, tt.tool, json.RawMessage(tt.args))
				if got != tt.want {
					t.Errorf("call(%s, %s) = %+v, want %+v", tt.tool, tt.args, got, tt.want)
				}
			}
			mustMCPTools(t, p, mcpTestSpec, srv)
			// One session and one list served every call: the unknown
			// name was not worth a second list while the cache is fresh.
			if opens, lists := ts.opens(), ts.calls("tools/list"); opens != 1 || lists != 1 {
				t.Errorf("server saw %d session opens and %d lists, want 1 and 1", opens, lists)
			}
		})
	}
}

func TestMCPSlowCall(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want Result
		// keep says whether the session survives.
		keep bool
	}{
		{"timeout", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
			Failure("call timed out after 300ms"), false},
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, Failure("call cancelled"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, mcpFlavourStreamable)
			p := newTestMCPPool(t, func(c *mcpConfig) { c.Timeout = 300 * time.Millisecond })
			srv := ts.config()
			mustMCPTools(t, p, mcpTestSpec, srv)
			old := mcpSessionOf(p, mcpTestSpec.AgentID, "srv")

			ctx, cancel := tt.ctx()
			defer cancel()
			if got := p.call(ctx, mcpTestSpec, srv, "srv__slow", nil); got != tt.want {
				t.Errorf("slow call = %+v, want %+v", got, tt.want)
			}
			if kept := mcpSessionOf(p, mcpTestSpec.AgentID, "srv") == old; kept != tt.keep {
				t.Errorf("session kept = %v, want %v", kept, tt.keep)
			}
			// The SDK tells the server of the cancellation asynchronously:
			// when our close (DELETE) overtakes it, the server holds the
			// DELETE until the handler returns, up to the SDK's 5s bound.
			// Let the handler go.
			ts.unblock()
		})
	}
}

func TestMCPServerFailureDropsSession(t *testing.T) {
	for _, flavour := range mcpFlavours {
		t.Run(flavour, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, flavour)
			p := newTestMCPPool(t, nil)
			srv := ts.config()
			echo := func() Result {
				return p.call(context.Background(), mcpTestSpec, srv, "srv__echo", json.RawMessage(`{"text":"hi"}`))
			}

			if got := echo(); !got.OK {
				t.Fatalf("first call = %+v", got)
			}
			old := mcpSessionOf(p, mcpTestSpec.AgentID, "srv")
			ts.down.Store(true)
			if got := echo(); got.OK || !strings.Contains(got.Text, "call failed") {
				t.Errorf("call to a failing server = %+v, want a failure", got)
			}
			if s := mcpSessionOf(p, mcpTestSpec.AgentID, "srv"); s != nil {
				t.Errorf("the session survived a transport failure")
			}
			ts.down.Store(false)
			if got := echo(); !got.OK {
				t.Errorf("call after the server came back = %+v", got)
			}
			if s := mcpSessionOf(p, mcpTestSpec.AgentID, "srv"); s == nil || s == old {
				t.Errorf("no new session after the failure")
			}
			if opens := ts.opens(); opens != 2 {
				t.Errorf("server saw %d session opens, want 2", opens)
			}
		})
	}
}

func TestMCPServerForgetsSession(t *testing.T) {
	for _, flavour := range mcpFlavours {
		t.Run(flavour, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, flavour)
			p := newTestMCPPool(t, nil)
			srv := ts.config()
			mustMCPTools(t, p, mcpTestSpec, srv)
			old := mcpSessionOf(p, mcpTestSpec.AgentID, "srv")

			// As after a restart: the server no longer knows the session.
			// Over streamable HTTP the next request meets a 404 (the SDK's
			// ErrSessionMissing) and is retried on a new session; over SSE
			// the event stream ends with the server's session, which ends
			// the client's.
			for ss := range ts.srv.Sessions() {
				_ = ss.Close()
			}
			if flavour == mcpFlavourSSE {
				mcpEventually(t, "the end of the SSE session", old.ended)
			}
			got := p.call(context.Background(), mcpTestSpec, srv, "srv__echo", json.RawMessage(`{"text":"hi"}`))
			if got != (Result{Text: "hi", OK: true}) {
				t.Errorf("call after the server forgot the session = %+v", got)
			}
		})
	}
}

func TestMCPListChanged(t *testing.T) {
	for _, flavour := range mcpFlavours {
		t.Run(flavour, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, flavour)
			p := newTestMCPPool(t, func(c *mcpConfig) { c.CacheTTL = time.Hour })
			srv := ts.config()
			mustMCPTools(t, p, mcpTestSpec, srv)

			ts.addRaw("added", func(context.Context) *mcp.CallToolResult { return mcpTextResult("new", false) })
			mcpEventually(t, "the added tool", func() bool {
				return slices.Contains(mcpToolNames(mustMCPTools(t, p, mcpTestSpec, srv)), "srv__added")
			})
			if got := p.call(context.Background(), mcpTestSpec, srv, "srv__added", nil); got != (Result{Text: "new", OK: true}) {
				t.Errorf("call of the added tool = %+v", got)
			}
			if opens := ts.opens(); opens != 1 {
				t.Errorf("server saw %d session opens, want 1", opens)
			}
		})
	}
}

func TestMCPSessionOutlivesTimeout(t *testing.T) {
	for _, flavour := range mcpFlavours {
		t.Run(flavour, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, flavour)
			// Long enough for a connect on a loaded machine with the race
			// detector: a shorter one fails the connect, not the session.
			p := newTestMCPPool(t, func(c *mcpConfig) { c.Timeout = time.Second })
			srv := ts.config()
			mustMCPTools(t, p, mcpTestSpec, srv)

			// The timeout bounds connecting and each request, not the
			// session's event streams.
			time.Sleep(1200 * time.Millisecond)
			if got := p.call(context.Background(), mcpTestSpec, srv, "srv__echo", json.RawMessage(`{"text":"hi"}`)); !got.OK {
				t.Errorf("call = %+v", got)
			}
			if opens := ts.opens(); opens != 1 {
				t.Errorf("server saw %d session opens, want 1; methods %v", opens, ts.methodCounts())
			}
		})
	}
}

func TestMCPCacheTTL(t *testing.T) {
	mcpCheckLeaks(t)
	ts := startMCPServer(t, mcpFlavourStreamable)
	p := newTestMCPPool(t, func(c *mcpConfig) { c.CacheTTL = 500 * time.Millisecond })
	srv := ts.config()

	mustMCPTools(t, p, mcpTestSpec, srv)
	mustMCPTools(t, p, mcpTestSpec, srv)
	if lists := ts.calls("tools/list"); lists != 1 {
		t.Fatalf("server saw %d lists within the TTL, want 1", lists)
	}
	time.Sleep(600 * time.Millisecond)
	mustMCPTools(t, p, mcpTestSpec, srv)
	if lists := ts.calls("tools/list"); lists != 2 {
		t.Errorf("server saw %d lists after the TTL, want 2", lists)
	}
}

func TestMCPReplacesSession(t *testing.T) {
	const newKey = "key-two-secret"
	tests := []struct {
		name   string
		change func(*Spec, *MCPServer)
		key    string // the X-Api-Key of the new session
	}{
		{"version", func(s *Spec, _ *MCPServer) { s.Version = "v2" }, mcpTestAPIKey},
		{"headers", func(_ *Spec, m *MCPServer) { m.Headers = map[string]string{"X-Api-Key": newKey} }, newKey},
		{"url", func(_ *Spec, m *MCPServer) { m.URL += "&v=2" }, mcpTestAPIKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, mcpFlavourStreamable)
			p := newTestMCPPool(t, nil)
			spec, srv := mcpTestSpec, ts.config()

			mustMCPTools(t, p, spec, srv)
			old := mcpSessionOf(p, spec.AgentID, "srv")
			tt.change(&spec, &srv)
			mustMCPTools(t, p, spec, srv)

			if s := mcpSessionOf(p, spec.AgentID, "srv"); s == nil || s == old {
				t.Fatalf("the session was not replaced")
			}
			p.closing.Wait()
			if !old.ended() {
				t.Errorf("the old session is still open")
			}
			// The new session's requests carry the key; the old session's
			// close may reach the server after them, with its own key.
			if keys := ts.apiKeys(); !slices.Contains(keys[1:], tt.key) {
				t.Errorf("requests after the first carried X-Api-Key %q, none %q", keys[1:], tt.key)
			}
			if opens := ts.opens(); opens != 2 {
				t.Errorf("server saw %d session opens, want 2", opens)
			}
		})
	}
}

func TestMCPHeadersOnEveryRequest(t *testing.T) {
	for _, flavour := range mcpFlavours {
		t.Run(flavour, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, flavour)
			p := newTestMCPPool(t, nil)
			srv := ts.config()

			mustMCPTools(t, p, mcpTestSpec, srv)
			p.call(context.Background(), mcpTestSpec, srv, "srv__echo", json.RawMessage(`{"text":"hi"}`))
			keys := ts.apiKeys()
			if len(keys) < 3 {
				t.Fatalf("server saw %d requests, want at least 3", len(keys))
			}
			for i, key := range keys {
				if key != mcpTestAPIKey {
					t.Errorf("request %d carried X-Api-Key %q", i, key)
				}
			}
		})
	}
}

func TestMCPErrorsHideSecrets(t *testing.T) {
	mcpCheckLeaks(t)
	// gone is a server that no longer listens; echo answers every request
	// with a JSON-RPC error quoting the request's key.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"bad key Bearer %s"}}`, r.Header.Get("X-Api-Key"))
	}))
	defer echo.Close()

	for name, base := range map[string]string{"unreachable": gone.URL, "echoing": echo.URL} {
		for _, transport := range []string{TransportStreamableHTTP, TransportSSE} {
			t.Run(name+"/"+transport, func(t *testing.T) {
				p := newTestMCPPool(t, nil)
				srv := MCPServer{
					Name: "srv", Type: transport, URL: base + "/mcp/" + mcpTestURLToken + "?token=" + mcpTestURLToken,
					Headers: map[string]string{"X-Api-Key": mcpTestAPIKey},
				}
				_, _, err := p.tools(context.Background(), mcpTestSpec, srv)
				if err == nil || !strings.HasPrefix(err.Error(), "connect: ") {
					t.Fatalf("tools error = %v, want a connect error", err)
				}
				res := p.call(context.Background(), mcpTestSpec, srv, "srv__echo", nil)
				for _, msg := range []string{err.Error(), res.Text} {
					if strings.Contains(msg, mcpTestAPIKey) || strings.Contains(msg, mcpTestURLToken) {
						t.Errorf("error leaks a secret: %s", msg)
					}
				}
			})
		}
	}
}

func TestMCPStdioRefused(t *testing.T) {
	p := newTestMCPPool(t, nil)
	srv := MCPServer{Name: "local", Type: TransportStdio, Command: "mcp-server", Env: map[string]string{"TOKEN": "x"}}
	_, _, err := p.tools(context.Background(), mcpTestSpec, srv)
	if err == nil || err.Error() != "stdio servers are not allowed on this host" {
		t.Errorf("tools error = %v", err)
	}
	if got, want := p.call(context.Background(), mcpTestSpec, srv, "local__x", nil), Failure("stdio servers are not allowed on this host"); got != want {
		t.Errorf("call = %+v, want %+v", got, want)
	}
}

func TestMCPIdleSessionsClosed(t *testing.T) {
	mcpCheckLeaks(t)
	ts := startMCPServer(t, mcpFlavourStreamable)
	p := newTestMCPPool(t, func(c *mcpConfig) { c.IdleTTL = 100 * time.Millisecond })
	srv := ts.config()

	mustMCPTools(t, p, mcpTestSpec, srv)
	idle := mcpSessionOf(p, mcpTestSpec.AgentID, "srv")
	time.Sleep(150 * time.Millisecond)
	// Any use sweeps: here another agent's.
	mustMCPTools(t, p, Spec{AgentID: "agent-2", Version: "v1"}, srv)
	p.closing.Wait()
	if !idle.ended() || mcpSessionOf(p, mcpTestSpec.AgentID, "srv") != nil {
		t.Errorf("the idle session was not closed")
	}
}

func TestMCPConcurrentCallersShareSession(t *testing.T) {
	mcpCheckLeaks(t)
	ts := startMCPServer(t, mcpFlavourStreamable)
	p := newTestMCPPool(t, nil)
	srv := ts.config()

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, _, err := p.tools(context.Background(), mcpTestSpec, srv); err != nil {
				t.Errorf("tools: %v", err)
			}
			p.call(context.Background(), mcpTestSpec, srv, "srv__echo", json.RawMessage(`{"text":"hi"}`))
		})
	}
	wg.Wait()
	if opens := ts.opens(); opens != 1 {
		t.Errorf("server saw %d session opens, want 1", opens)
	}
}

func TestMCPClosedPool(t *testing.T) {
	mcpCheckLeaks(t)
	ts := startMCPServer(t, mcpFlavourStreamable)
	p := newTestMCPPool(t, nil)
	srv := ts.config()
	mustMCPTools(t, p, mcpTestSpec, srv)
	s := mcpSessionOf(p, mcpTestSpec.AgentID, "srv")

	p.close()
	if !s.ended() {
		t.Errorf("close left the session open")
	}
	if _, _, err := p.tools(context.Background(), mcpTestSpec, srv); err != errMCPPoolClosed {
		t.Errorf("tools after close: %v", err)
	}
	if got := p.call(context.Background(), mcpTestSpec, srv, "srv__echo", nil); got.OK {
		t.Errorf("call after close = %+v", got)
	}
}

// TestMCPCallCarriesTraceparent: the requests of a traced tool call carry
// its trace to the MCP server, on every transport.
func TestMCPCallCarriesTraceparent(t *testing.T) {
	before := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(before) })
	for _, flavour := range mcpFlavours {
		t.Run(flavour, func(t *testing.T) {
			mcpCheckLeaks(t)
			ts := startMCPServer(t, flavour)
			s := New(Config{AllowPrivate: true})
			t.Cleanup(s.Close)
			set := s.Set(context.Background(), Spec{AgentID: "agent-1", Version: "v1", MCPServers: []MCPServer{ts.config()}})
			listed := ts.received()
			ctx, span := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "execute_tool")
			defer span.End()
			if res := set.Call(ctx, Call{Name: "srv__echo", Arguments: json.RawMessage(`{"text":"hi"}`)}); !res.OK {
				t.Fatalf("call: %+v", res)
			}
			ts.mu.Lock()
			during := slices.Clone(ts.traceparents[listed:])
			ts.mu.Unlock()
			trace := span.SpanContext().TraceID().String()
			if len(during) == 0 {
				t.Fatal("the call made no request")
			}
			for _, tp := range during {
				if !strings.Contains(tp, "-"+trace+"-") {
					t.Errorf("a request of the call carried traceparent %q; want trace %s", tp, trace)
				}
			}
		})
	}
}
