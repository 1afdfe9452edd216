package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/netguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of mcpConfig.
const (
	defaultMCPCacheTTL = 5 * time.Minute
	defaultMCPIdleTTL  = 10 * time.Minute
	defaultMCPTimeout  = 15 * time.Second
)

// Bounds on what one MCP server can make agentd read and keep, whatever
// it answers: a tenant chooses the server, and every turn, preview and
// List Tools asks it again.
const (
	// MaxMCPMessageBytes bounds each response body and each SSE event.
	MaxMCPMessageBytes = 4 << 20
	// MaxMCPSchemaBytes bounds a tool's inputSchema: a larger one is not
	// offered, as it would go to the model provider on every turn.
	MaxMCPSchemaBytes = 64 << 10
	// maxMCPTools is how many tools of one server are kept.
	maxMCPTools = 256
	// maxMCPDescription is where a tool's description is cut.
	maxMCPDescription = 1 << 10
	// maxMCPReason is where the server's own error text is cut.
	maxMCPReason = 300
)

// mcpConfig configures the pool.
type mcpConfig struct {
	// HTTPClient carries every HTTP request (SSRF guard, no redirects);
	// required.
	HTTPClient *http.Client
	// AllowStdio lets stdio servers run.
	AllowStdio bool
	// CacheTTL bounds how long a tool list is trusted (default 5 minutes).
	CacheTTL time.Duration
	// IdleTTL closes sessions unused this long (default 10 minutes).
	IdleTTL time.Duration
	// Timeout bounds connect, list and each call (default 15s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// withDefaults fills in the zero fields.
func (c mcpConfig) withDefaults() mcpConfig {
	if c.CacheTTL <= 0 {
		c.CacheTTL = defaultMCPCacheTTL
	}
	if c.IdleTTL <= 0 {
		c.IdleTTL = defaultMCPIdleTTL
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultMCPTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// errMCPPoolClosed is returned once close has been called.
var errMCPPoolClosed = errors.New("mcp: pool closed")

// mcpPool keeps one MCP client session per (agent, server), reused across
// turns. Sessions are opened on first use, replaced when the agent's
// version or the server's config changes, dropped after a transport
// failure, and closed when idle (swept lazily on each use, so the pool
// runs no goroutine of its own).
type mcpPool struct {
	cfg mcpConfig

	mu      sync.Mutex
	closed  bool
	entries map[mcpKey]*mcpEntry
	// closing counts the sessions being closed in the background.
	closing sync.WaitGroup
}

// mcpKey names the session of one server of one agent.
type mcpKey struct{ agent, server string }

// mcpEntry is the slot of one key. Its mutex serialises opening and listing
// so that concurrent callers never open two sessions for one key; calls
// themselves run outside it.
type mcpEntry struct {
	mu sync.Mutex
	// refs counts the callers holding or waiting for mu (guarded by
	// mcpPool.mu): an entry is removed from the map only at zero.
	refs int
	sess *mcpSession // guarded by mu
}

// mcpSession is one live client session and its tool list cache.
type mcpSession struct {
	key     mcpKey
	cs      *mcp.ClientSession
	version string // Spec.Version it was opened under
	config  string // mcpConfigHash of the server it was opened for

	// cancel ends the lifetime context of the transport (see
	// lifetimeTransport); done is closed once the SDK session has ended,
	// by us or by the server.
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	// watch is what its HTTP transport saw go wrong.
	watch *mcpWatch

	lastUsed atomic.Int64 // unix nanoseconds
	busy     atomic.Int32 // calls in flight
	// gen is bumped by notifications/tools/list_changed.
	gen atomic.Uint64

	// The cache, guarded by the entry's mu.
	list     []Tool
	names    map[string]string // exposed name -> the server's name
	notes    []string          // the tools of the list left out, and why
	listGen  uint64
	listedAt time.Time
}

// newMCPPool returns an empty pool. A nil HTTPClient is a bug: falling
// back to http.DefaultClient would bypass the SSRF guard.
func newMCPPool(cfg mcpConfig) *mcpPool {
	if cfg.HTTPClient == nil {
		panic("tools: mcpConfig.HTTPClient is nil")
	}
	return &mcpPool{cfg: cfg.withDefaults(), entries: make(map[mcpKey]*mcpEntry)}
}

// tools lists the tools of srv for the agent of spec, from the cache when
// it is still valid; notes say which tools the server listed were left out
// and why.
func (p *mcpPool) tools(ctx context.Context, spec Spec, srv MCPServer) (list []Tool, notes []string, err error) {
	p.sweep()
	e, err := p.acquire(mcpKey{spec.AgentID, srv.Name})
	if err != nil {
		return nil, nil, err
	}
	defer p.release(e)
	s, err := p.session(ctx, e, spec, srv)
	if err != nil {
		return nil, nil, err
	}
	list, err = p.listTools(ctx, s, srv)
	if err != nil {
		p.drop(e, s, spec, srv, err)
		return nil, nil, err
	}
	return slices.Clone(list), slices.Clone(s.notes), nil
}

// call runs the tool exposed as name with args (a JSON object).
func (p *mcpPool) call(ctx context.Context, spec Spec, srv MCPServer, name string, args json.RawMessage) Result {
	args, err := callArguments(args)
	if err != nil {
		return Failure(err.Error())
	}
	p.sweep()
	res, err := p.callOnce(ctx, spec, srv, name, args)
	if errors.Is(err, mcp.ErrSessionMissing) {
		// The server forgot the session (it restarted): it refused the call
		// without running it, so running it on a new session is safe.
		res, _ = p.callOnce(ctx, spec, srv, name, args)
	}
	return res
}

// callOnce runs one attempt of call; the error is the transport's, when the
// session was dropped for it.
func (p *mcpPool) callOnce(ctx context.Context, spec Spec, srv MCPServer, name string, args json.RawMessage) (Result, error) {
	e, s, tool, err := p.resolve(ctx, spec, srv, name)
	if err != nil {
		return Failure(err.Error()), nil
	}
	defer s.busy.Add(-1)

	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	s.lastUsed.Store(time.Now().UnixNano())
	if err != nil {
		return p.callFailure(ctx, e, s, spec, srv, err)
	}
	return Result{Text: resultText(res), OK: !res.IsError}, nil
}

// resolve finds the session and the server's own name of the tool exposed
// as name, and marks the session busy so that the idle sweep leaves it
// alone while the call runs (the caller decrements busy).
func (p *mcpPool) resolve(ctx context.Context, spec Spec, srv MCPServer, name string) (*mcpEntry, *mcpSession, string, error) {
	e, err := p.acquire(mcpKey{spec.AgentID, srv.Name})
	if err != nil {
		return nil, nil, "", err
	}
	defer p.release(e)
	s, err := p.session(ctx, e, spec, srv)
	if err != nil {
		return nil, nil, "", err
	}
	// The names of the last list are good enough to resolve a name even
	// once the cache is stale; re-list only for a name not seen yet.
	tool, ok := s.names[name]
	if !ok {
		if _, err := p.listTools(ctx, s, srv); err != nil {
			p.drop(e, s, spec, srv, err)
			return nil, nil, "", err
		}
		if tool, ok = s.names[name]; !ok {
			return nil, nil, "", fmt.Errorf("unknown tool %q", name)
		}
	}
	s.busy.Add(1)
	return e, s, tool, nil
}

// callFailure turns a CallTool error into a Result. A JSON-RPC error the
// server itself answered with (bad arguments, a failing handler) or the
// caller giving up (the SDK tells the server) leaves the session in place;
// anything else (timeout, lost connection, HTTP failure) drops it so that
// the next turn reconnects, and is returned.
func (p *mcpPool) callFailure(ctx context.Context, e *mcpEntry, s *mcpSession, spec Spec, srv MCPServer, err error) (Result, error) {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return Failure("call cancelled"), nil
	case errors.As(err, &rpcErr) && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) &&
		(rpcErr.Code == jsonrpc.CodeInvalidParams || rpcErr.Code == jsonrpc.CodeInternalError):
		return Failure("tool error: " + cut(redact(rpcErr, srv), maxMCPReason)), nil
	}
	p.lockEntry(e)
	p.drop(e, s, spec, srv, err)
	p.release(e)
	if ctx.Err() != nil {
		return Failure(fmt.Sprintf("call timed out after %s", p.cfg.Timeout)), err
	}
	return Failure("call failed: " + mcpReason(ctx, err, s.watch, srv)), err
}

// close closes every session and waits for them to be gone.
func (p *mcpPool) close() {
	p.mu.Lock()
	p.closed = true
	entries := p.entries
	p.entries = nil
	p.mu.Unlock()

	var wg sync.WaitGroup
	for _, e := range entries {
		p.lockEntry(e)
		s := e.sess
		e.sess = nil
		p.release(e)
		if s != nil {
			wg.Go(s.close)
		}
	}
	wg.Wait()
	p.closing.Wait()
}

// acquire locks the entry of key, creating it when needed.
func (p *mcpPool) acquire(key mcpKey) (*mcpEntry, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errMCPPoolClosed
	}
	e := p.entries[key]
	if e == nil {
		e = &mcpEntry{}
		p.entries[key] = e
	}
	e.refs++
	p.mu.Unlock()
	e.mu.Lock()
	return e, nil
}

// lockEntry locks an entry the caller already knows of; refs keeps the
// sweep off it meanwhile.
func (p *mcpPool) lockEntry(e *mcpEntry) {
	p.mu.Lock()
	e.refs++
	p.mu.Unlock()
	e.mu.Lock()
}

// release unlocks an entry locked by acquire or lockEntry.
func (p *mcpPool) release(e *mcpEntry) {
	e.mu.Unlock()
	p.mu.Lock()
	e.refs--
	p.mu.Unlock()
}

// sweep closes the sessions unused for IdleTTL and forgets empty entries.
// Only entries nobody holds are looked at, so reading e.sess under p.mu
// alone is safe.
func (p *mcpPool) sweep() {
	deadline := time.Now().Add(-p.cfg.IdleTTL).UnixNano()
	p.mu.Lock()
	var idle []*mcpSession
	for key, e := range p.entries {
		if e.refs > 0 {
			continue
		}
		s := e.sess
		if s != nil && s.busy.Load() == 0 && (s.lastUsed.Load() < deadline || s.ended()) {
			idle = append(idle, s)
			s = nil
		}
		if s == nil {
			delete(p.entries, key)
		}
	}
	p.mu.Unlock()
	for _, s := range idle {
		p.cfg.Logger.Debug("mcp: closing idle session", "agent", s.key.agent, "server", s.key.server)
		p.retire(s)
	}
}

// retire closes s in the background, so a turn never waits for another
// session's goodbye; close waits for these.
func (p *mcpPool) retire(s *mcpSession) {
	p.mu.Lock()
	if p.closed {
		// close is already waiting or done: Add must not race its Wait.
		p.mu.Unlock()
		s.close()
		return
	}
	p.closing.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.closing.Done()
		s.close()
	}()
}

// drop forgets the session s of the locked entry e after err and closes it.
func (p *mcpPool) drop(e *mcpEntry, s *mcpSession, spec Spec, srv MCPServer, err error) {
	if e.sess == s {
		e.sess = nil
	}
	p.cfg.Logger.Warn("mcp: session dropped", "agent", spec.AgentID, "server", srv.Name, "error", mcpReason(context.Background(), err, s.watch, srv))
	p.retire(s)
}

// session returns the session of the locked entry e, opening it when there
// is none or the one there was opened under another version or config, or
// has ended.
func (p *mcpPool) session(ctx context.Context, e *mcpEntry, spec Spec, srv MCPServer) (*mcpSession, error) {
	config := mcpConfigHash(srv)
	if s := e.sess; s != nil {
		if s.version == spec.Version && s.config == config && !s.ended() {
			s.lastUsed.Store(time.Now().UnixNano())
			return s, nil
		}
		e.sess = nil
		p.retire(s)
	}
	s, err := p.open(ctx, srv)
	if err != nil {
		return nil, err
	}
	s.key, s.version, s.config = mcpKey{spec.AgentID, srv.Name}, spec.Version, config

	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		// close ran while we were connecting and will not see s.
		s.close()
		return nil, errMCPPoolClosed
	}
	e.sess = s
	p.cfg.Logger.InfoContext(ctx, "mcp: session opened", "agent", spec.AgentID, "server", srv.Name, "transport", srv.Type)
	return s, nil
}

// open connects to srv, bounded by cfg.Timeout.
func (p *mcpPool) open(ctx context.Context, srv MCPServer) (*mcpSession, error) {
	watch := &mcpWatch{}
	transport, err := p.transport(srv, watch)
	if err != nil {
		return nil, err
	}
	s := &mcpSession{done: make(chan struct{}), watch: watch}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.gen.Add(1) },
	})

	// The transport lives as long as the session, not as long as this
	// turn's context; the connect timeout only ends it while connecting.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ctx, cancelTimeout := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancelTimeout()
	stop := context.AfterFunc(ctx, cancel)
	cs, err := client.Connect(ctx, &lifetimeTransport{inner: transport, life: life}, nil)
	if !stop() && err == nil {
		// The deadline struck between the handshake and here.
		_ = cs.Close()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, &reasonError{"connect: " + mcpReason(ctx, err, watch, srv), err}
	}
	s.cs, s.cancel = cs, cancel
	s.lastUsed.Store(time.Now().UnixNano())
	go func() {
		// Wait returns when the session ends, ours or the server's doing.
		_ = cs.Wait()
		close(s.done)
	}()
	return s, nil
}

// transport builds the SDK transport of srv; its HTTP requests report to
// watch.
func (p *mcpPool) transport(srv MCPServer, watch *mcpWatch) (mcp.Transport, error) {
	switch srv.Type {
	case TransportStreamableHTTP, "http":
		if err := checkMCPURL(srv.URL); err != nil {
			return nil, err
		}
		return &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxEventSize: MaxMCPMessageBytes,
			HTTPClient: sessionHTTPClient(p.cfg.HTTPClient, srv.Headers, watch)}, nil
	case TransportSSE:
		if err := checkMCPURL(srv.URL); err != nil {
			return nil, err
		}
		return &mcp.SSEClientTransport{Endpoint: srv.URL, MaxEventSize: MaxMCPMessageBytes,
			HTTPClient: sessionHTTPClient(p.cfg.HTTPClient, srv.Headers, watch)}, nil
	case TransportStdio:
		if !p.cfg.AllowStdio {
			return nil, errors.New("stdio servers are not allowed on this host")
		}
		if srv.Command == "" {
			return nil, errors.New("stdio server has no command")
		}
		cmd := exec.Command(srv.Command, srv.Args...)
		cmd.Env = stdioEnv(srv.Env)
		return &mcp.CommandTransport{Command: cmd}, nil
	default:
		return nil, fmt.Errorf("unknown MCP transport %q", srv.Type)
	}
}

// stdioInherited are the only variables of agentd's environment a stdio
// server gets: the rest holds agentd's own secrets (provider keys, the
// database URL, the encryption key), which are not the tenant's.
var stdioInherited = []string{"PATH", "HOME", "LANG", "TZ"}

// stdioEnv is the environment of a stdio server: stdioInherited from
// agentd's, then the server's own env.
func stdioEnv(own map[string]string) []string {
	env := []string{}
	for _, k := range stdioInherited {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		env = append(env, k+"="+own[k])
	}
	return env
}

// checkMCPURL accepts absolute http and https URLs; its errors name no
// more than the scheme.
func checkMCPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("invalid server URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
	return nil
}

// ended reports whether the SDK session is over (closed by us or lost).
func (s *mcpSession) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// close ends the session and waits for its watcher. The transport's
// lifetime is cancelled only after Close, which may still need it to tell
// the server goodbye (streamable DELETE).
func (s *mcpSession) close() {
	s.closeOnce.Do(func() {
		_ = s.cs.Close()
		s.cancel()
		<-s.done
	})
}

// listTools returns the session's tools, listing them anew when the cache
// is older than CacheTTL or the server said its list changed. The caller
// holds the entry's lock.
func (p *mcpPool) listTools(ctx context.Context, s *mcpSession, srv MCPServer) ([]Tool, error) {
	gen := s.gen.Load()
	if s.list != nil && s.listGen == gen && time.Since(s.listedAt) < p.cfg.CacheTTL {
		return s.list, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	list := []Tool{}
	names := map[string]string{}
	var notes []string
	for tool, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, &reasonError{"list tools: " + mcpReason(ctx, err, s.watch, srv), err}
		}
		if len(list) == maxMCPTools {
			// Stop reading: a server may page on forever.
			notes = append(notes, fmt.Sprintf("the server lists more than %d tools; the first %d are kept", maxMCPTools, maxMCPTools))
			break
		}
		t := mcpTool(srv.Name, tool)
		if len(t.Parameters) > MaxMCPSchemaBytes {
			notes = append(notes, fmt.Sprintf("tool %q is not offered: its input schema is over %d KiB", cut(tool.Name, mcpToolNameMax), MaxMCPSchemaBytes>>10))
			continue
		}
		if _, dup := names[t.Name]; dup {
			p.cfg.Logger.WarnContext(ctx, "mcp: tool name collides after sanitising, skipped", "server", srv.Name, "tool", cut(tool.Name, mcpToolNameMax))
			continue
		}
		names[t.Name] = tool.Name
		list = append(list, t)
	}
	// A list_changed that arrived while listing leaves gen ahead of listGen,
	// so the next use lists again.
	s.list, s.names, s.notes, s.listGen, s.listedAt = list, names, notes, gen, time.Now()
	return list, nil
}

// mcpTool is the Tool the model sees for tool of server.
func mcpTool(server string, tool *mcp.Tool) Tool {
	desc := tool.Description
	if desc == "" {
		desc = tool.Title
	}
	return Tool{
		Name:        mcpToolName(server, tool.Name),
		Description: cut(desc, maxMCPDescription),
		Parameters:  toolParameters(tool.InputSchema),
		Source:      SourceMCP,
		Server:      server,
		Original:    tool.Name,
	}
}

// emptyObjectSchema is the schema of a tool that declares none.
var emptyObjectSchema = json.RawMessage(`{"type":"object"}`)

// toolParameters is the inputSchema as JSON, always an object of type
// object, as model providers reject anything else.
func toolParameters(schema any) json.RawMessage {
	raw, err := json.Marshal(schema)
	if err != nil {
		return emptyObjectSchema
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return emptyObjectSchema
	}
	if _, ok := obj["type"]; ok {
		return raw
	}
	obj["type"] = json.RawMessage(`"object"`)
	raw, _ = json.Marshal(obj)
	return raw
}

// callArguments checks that args is a JSON object; none means {}.
func callArguments(args json.RawMessage) (json.RawMessage, error) {
	if len(strings.TrimSpace(string(args))) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return nil, errors.New("arguments must be a JSON object")
	}
	return args, nil
}

// resultText is what the model sees of a result: the text contents, other
// contents as their JSON, one per line; the structured content when there
// is no content at all; cut to MaxResultBytes, as an action's answer is.
func resultText(res *mcp.CallToolResult) string {
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		raw, err := json.Marshal(c)
		if err != nil {
			raw = []byte(fmt.Sprintf("%q", fmt.Sprintf("unencodable %T content", c)))
		}
		parts = append(parts, string(raw))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			return cut(string(raw), MaxResultBytes)
		}
	}
	return cut(strings.Join(parts, "\n"), MaxResultBytes)
}

// mcpToolNameMax is the longest name model providers accept (NamePattern).
const mcpToolNameMax = 64

// badNameChars are the characters NamePattern refuses.
var badNameChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// mcpToolName is the name the model sees: server + "__" + tool, with the
// characters NamePattern refuses replaced by "_", and when longer than 64
// characters its first 56 + "_" + 7 hex digits of the sha256 of the full
// name, which keeps long names distinct.
func mcpToolName(server, tool string) string {
	full := server + "__" + tool
	name := badNameChars.ReplaceAllString(server, "_") + "__" + badNameChars.ReplaceAllString(tool, "_")
	if len(name) <= mcpToolNameMax {
		return name
	}
	sum := sha256.Sum256([]byte(full))
	return name[:mcpToolNameMax-8] + "_" + hex.EncodeToString(sum[:])[:7]
}

// mcpConfigHash identifies the connection settings of srv: a session opened
// for other settings must be replaced. Only the hash is kept, not the
// secrets.
func mcpConfigHash(srv MCPServer) string {
	typ := srv.Type
	if typ == "http" {
		typ = TransportStreamableHTTP
	}
	// json.Marshal sorts map keys, so equal configs hash equally.
	raw, _ := json.Marshal(struct {
		Type, URL, Command string
		Headers, Env       map[string]string
		Args               []string
	}{typ, srv.URL, srv.Command, srv.Headers, srv.Env, srv.Args})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// sessionHTTPClient is the client of one session: base with srv's headers
// on every request, its answers bounded and watched. base's per-request
// Timeout is dropped because it would cut the long-lived event streams of
// SSE sessions; every exchange is bounded by its context instead. The
// rest (dialer guard, no redirects) is kept.
func sessionHTTPClient(base *http.Client, headers map[string]string, watch *mcpWatch) *http.Client {
	c := *base
	c.Timeout = 0
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &sessionTransport{base: rt, headers: maps.Clone(headers), watch: watch}
	return &c
}

// sessionTransport sets the configured headers on every request, bounds
// every JSON answer at MaxMCPMessageBytes (the SDK reads one whole) and
// tells watch what went wrong. Event streams are left whole: they live as
// long as the session, and the SDK bounds each of their events.
type sessionTransport struct {
	base    http.RoundTripper
	headers map[string]string
	watch   *mcpWatch
}

// RoundTrip sends a clone of req (a RoundTripper must not modify its
// request) with the headers set. The SDK's own headers (session id,
// protocol version, content negotiation) win over configured ones.
func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		if req.Header.Get(k) == "" {
			req.Header.Set(k, v)
		}
	}
	res, err := t.base.RoundTrip(req)
	if err != nil {
		t.watch.saw(err, 0)
		return nil, err
	}
	ok := res.StatusCode >= 200 && res.StatusCode < 300
	if ok {
		t.watch.saw(nil, 0)
	} else {
		t.watch.saw(nil, res.StatusCode)
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b := &boundedBody{ReadCloser: res.Body, left: MaxMCPMessageBytes}
		if ok {
			// Only an answer the SDK reads as a message fails the session;
			// an error page past the bound is just cut.
			b.over = t.watch.overflowed
		}
		res.Body = b
	}
	return res, nil
}

// errMCPTooLarge is what reading past MaxMCPMessageBytes of an answer
// gives.
var errMCPTooLarge = fmt.Errorf("the MCP server's answer is over %d MiB", MaxMCPMessageBytes>>20)

// boundedBody fails once more than left bytes are read, calling over.
type boundedBody struct {
	io.ReadCloser
	left int64
	over func()
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errMCPTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		if b.over != nil {
			b.over()
		}
		return n + int(b.left), errMCPTooLarge
	}
	return n, err
}

// mcpWatch is what a session's HTTP transport saw go wrong. The SDK turns
// the errors of its HTTP exchanges into text, addresses and all, and keeps
// no status code: the reason of a failure is read here instead.
type mcpWatch struct {
	mu sync.Mutex
	// err and status are those of the last exchange that failed, cleared
	// by one that succeeds.
	err    error
	status int
	// overflow is set once an answer went past MaxMCPMessageBytes; the
	// SDK then ends the session, so it is never cleared.
	overflow bool
}

// saw records the outcome of one exchange: its error, or its status when
// not 2xx; both zero for one that succeeded.
func (w *mcpWatch) saw(err error, status int) {
	w.mu.Lock()
	w.err, w.status = err, status
	w.mu.Unlock()
}

func (w *mcpWatch) overflowed() {
	w.mu.Lock()
	w.overflow = true
	w.mu.Unlock()
}

// mcpSeen is what an mcpWatch saw last: a transport error, an HTTP status
// or an answer over the bound.
type mcpSeen struct {
	err      error
	status   int
	overflow bool
}

func (w *mcpWatch) last() mcpSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return mcpSeen{w.err, w.status, w.overflow}
}

// sseTooLarge is how the SDK says an SSE event went past MaxEventSize; it
// keeps no error to match with errors.Is.
const sseTooLarge = "SSE event exceeded"

// mcpReason says why an exchange with srv failed, in words that name no
// address nor resolver, and no secret of srv; the server's own error text
// is cut to maxMCPReason.
func mcpReason(ctx context.Context, err error, watch *mcpWatch, srv MCPServer) string {
	const who = "the MCP server"
	seen := watch.last()
	var rpcErr *jsonrpc.Error
	var netErr net.Error
	switch {
	case seen.overflow || errors.Is(err, errMCPTooLarge) || strings.Contains(err.Error(), sseTooLarge):
		return errMCPTooLarge.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return who + " did not answer in time"
	case seen.err != nil:
		return netguard.Reason(seen.err, who)
	case errors.As(err, &rpcErr):
		return who + " answered: " + cut(redact(rpcErr, srv), maxMCPReason)
	case seen.status != 0:
		return fmt.Sprintf("%s answered HTTP status %d", who, seen.status)
	case errors.Is(err, netguard.ErrBlocked), errors.As(err, &netErr):
		return netguard.Reason(err, who)
	}
	return cut(redact(err, srv), maxMCPReason)
}

// reasonError is an error whose message is a reason of mcpReason, which
// names no secret nor address; Unwrap still gives errors.Is and errors.As
// the original.
type reasonError struct {
	msg string
	err error
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.err }

// cut shortens s to at most n bytes, on a character boundary, marking the
// cut with an ellipsis.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	end := n - len(ellipsis)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ellipsis
}

// lifetimeTransport connects inner with the session's lifetime context
// instead of the caller's: the SDK's SSE transport ties its event stream to
// the context given to Connect, so a connect timeout would otherwise end
// the session as soon as it fires.
type lifetimeTransport struct {
	inner mcp.Transport
	life  context.Context
}

func (t *lifetimeTransport) Connect(context.Context) (mcp.Connection, error) {
	return t.inner.Connect(t.life)
}

// minSecretLen is the shortest header or env value scrubbed from messages:
// shorter ones ("1", "on") are no secrets and would mangle the message.
const minSecretLen = 4

// urlPattern finds URLs in error messages.
var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// redact is the message of err naming no secret of srv:
// header and env values are replaced with "[redacted]" and every URL is cut
// to its scheme and host (paths and queries may carry tokens).
func redact(err error, srv MCPServer) string {
	msg := err.Error()
	for _, v := range slices.Concat(slices.Collect(maps.Values(srv.Headers)), slices.Collect(maps.Values(srv.Env))) {
		for _, secret := range append(strings.Fields(v), v) {
			if len(secret) >= minSecretLen {
				msg = strings.ReplaceAll(msg, secret, "[redacted]")
			}
		}
	}
	msg = urlPattern.ReplaceAllStringFunc(msg, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return "[url]"
		}
		return u.Scheme + "://" + u.Host
	})
	return msg
}

// Interface checks.
var (
	_ mcp.Transport     = (*lifetimeTransport)(nil)
	_ http.RoundTripper = (*sessionTransport)(nil)
)
