package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of mcpConfig.
const (
	defaultMCPCacheTTL = 5 * time.Minute
	defaultMCPIdleTTL  = 10 * time.Minute
	defaultMCPTimeout  = 15 * time.Second
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

	lastUsed atomic.Int64 // unix nanoseconds
	busy     atomic.Int32 // calls in flight
	// gen is bumped by notifications/tools/list_changed.
	gen atomic.Uint64

	// The cache, guarded by the entry's mu.
	list     []Tool
	names    map[string]string // exposed name -> the server's name
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
// it is still valid.
func (p *mcpPool) tools(ctx context.Context, spec Spec, srv MCPServer) ([]Tool, error) {
	p.sweep()
	e, err := p.acquire(mcpKey{spec.AgentID, srv.Name})
	if err != nil {
		return nil, err
	}
	defer p.release(e)
	s, err := p.session(ctx, e, spec, srv)
	if err != nil {
		return nil, err
	}
	list, err := p.listTools(ctx, s, srv)
	if err != nil {
		p.drop(e, s, spec, srv, err)
		return nil, err
	}
	return slices.Clone(list), nil
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
		return Failure("tool error: " + redact(rpcErr, srv).Error()), nil
	}
	p.lockEntry(e)
	p.drop(e, s, spec, srv, err)
	p.release(e)
	if ctx.Err() != nil {
		return Failure(fmt.Sprintf("call timed out after %s", p.cfg.Timeout)), err
	}
	return Failure("call failed: " + redact(err, srv).Error()), err
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
	p.cfg.Logger.Warn("mcp: session dropped", "agent", spec.AgentID, "server", srv.Name, "error", redact(err, srv))
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
	transport, err := p.transport(srv)
	if err != nil {
		return nil, err
	}
	s := &mcpSession{done: make(chan struct{})}
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
		return nil, fmt.Errorf("connect: %w", redact(err, srv))
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

// transport builds the SDK transport of srv.
func (p *mcpPool) transport(srv MCPServer) (mcp.Transport, error) {
	switch srv.Type {
	case TransportStreamableHTTP, "http":
		if err := checkMCPURL(srv.URL); err != nil {
			return nil, err
		}
		return &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: sessionHTTPClient(p.cfg.HTTPClient, srv.Headers)}, nil
	case TransportSSE:
		if err := checkMCPURL(srv.URL); err != nil {
			return nil, err
		}
		return &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: sessionHTTPClient(p.cfg.HTTPClient, srv.Headers)}, nil
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
	for tool, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", redact(err, srv))
		}
		t := mcpTool(srv.Name, tool)
		if _, dup := names[t.Name]; dup {
			p.cfg.Logger.WarnContext(ctx, "mcp: tool name collides after sanitising, skipped", "server", srv.Name, "tool", tool.Name)
			continue
		}
		names[t.Name] = tool.Name
		list = append(list, t)
	}
	// A list_changed that arrived while listing leaves gen ahead of listGen,
	// so the next use lists again.
	s.list, s.names, s.listGen, s.listedAt = list, names, gen, time.Now()
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
		Description: desc,
		Parameters:  toolParameters(tool.InputSchema),
		Source:      SourceMCP,
		Server:      server,
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
// is no content at all.
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
			return string(raw)
		}
	}
	return strings.Join(parts, "\n")
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
// on every request. base's per-request Timeout is dropped because it would
// cut the long-lived event streams of SSE sessions; every exchange is
// bounded by its context instead. The rest (dialer guard, no redirects)
// is kept.
func sessionHTTPClient(base *http.Client, headers map[string]string) *http.Client {
	c := *base
	c.Timeout = 0
	if len(headers) > 0 {
		rt := base.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		c.Transport = &headerTransport{base: rt, headers: maps.Clone(headers)}
	}
	return &c
}

// headerTransport sets the configured headers on every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

// RoundTrip sends a clone of req (a RoundTripper must not modify its
// request) with the headers set. The SDK's own headers (session id,
// protocol version, content negotiation) win over configured ones.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		if req.Header.Get(k) == "" {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
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

// redactedError is an error whose message went through redact; Unwrap
// still gives errors.Is and errors.As the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// minSecretLen is the shortest header or env value scrubbed from messages:
// shorter ones ("1", "on") are no secrets and would mangle the message.
const minSecretLen = 4

// urlPattern finds URLs in error messages.
var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// redact rewrites the message of err so that it names no secret of srv:
// header and env values are replaced with "[redacted]" and every URL is cut
// to its scheme and host (paths and queries may carry tokens).
func redact(err error, srv MCPServer) error {
	if err == nil {
		return nil
	}
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
	return &redactedError{msg: msg, err: err}
}

// Interface checks.
var (
	_ mcp.Transport     = (*lifetimeTransport)(nil)
	_ http.RoundTripper = (*headerTransport)(nil)
)
