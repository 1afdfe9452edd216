package tools

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/netguard"
	"github.com/agentd/agentd/telemetry"
)

// DefaultTimeout bounds an action call, and each MCP connect, list and
// call, when Config.Timeout is not set (AGENTD_TOOL_TIMEOUT).
const DefaultTimeout = 15 * time.Second

// Config is what a Service needs.
type Config struct {
	// Timeout bounds each call (DefaultTimeout when 0).
	Timeout time.Duration
	// AllowPrivate lifts the guard against internal addresses
	// (AGENTD_ALLOW_PRIVATE_NETWORKS).
	AllowPrivate bool
	// AllowStdio lets MCP servers of type stdio run (AGENTD_MCP_STDIO).
	AllowStdio bool
	Logger     *slog.Logger
	// Now is the clock of action call timestamps (time.Now when nil).
	Now func() time.Time
}

// Service makes the tool sets of agents and keeps their MCP sessions. It is
// safe for concurrent use.
type Service struct {
	cfg    Config
	client *http.Client
	mcp    *mcpPool
}

// New returns a Service; Close ends its MCP sessions.
func New(cfg Config) *Service {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := netguard.NewClient(cfg.Timeout, cfg.AllowPrivate)
	// Action handlers and MCP servers get the call's traceparent.
	client.Transport = telemetry.Transport(client.Transport)
	return &Service{cfg: cfg, client: client, mcp: newMCPPool(mcpConfig{
		HTTPClient: client, AllowStdio: cfg.AllowStdio, Timeout: cfg.Timeout, Logger: cfg.Logger,
	})}
}

// Close ends every MCP session.
func (s *Service) Close() { s.mcp.close() }

// ServerError is an MCP server whose tools could not be listed; Reason
// carries no credential.
type ServerError struct {
	Server, Reason string
}

// Set is the tools of one agent for one turn, by name order.
type Set struct {
	tools  []Tool
	errors []ServerError
	run    map[string]func(ctx context.Context, c Call) Result
}

// Set lists the tools of the agent of spec: its action handlers and the
// tools each MCP server lists now (the servers are asked in parallel; one
// that fails is reported in Errors and its tools are left out, as are the
// tools past the bounds of one server, each reported in Errors too). A
// name given twice keeps its first owner in that order.
func (s *Service) Set(ctx context.Context, spec Spec) *Set {
	set := &Set{run: map[string]func(context.Context, Call) Result{}}
	for _, a := range spec.Actions {
		set.add(actionTool(a), func(ctx context.Context, c Call) Result { return s.callAction(ctx, spec, a, c) })
	}
	s.addMCP(ctx, spec, set)
	set.sort()
	return set
}

// NewSet is a set of the tools of list, each run by run, for tools that
// come from neither an action nor an MCP server (the fakes of tests). A
// name given twice keeps its first.
func NewSet(list []Tool, run func(ctx context.Context, c Call) Result) *Set {
	set := &Set{run: map[string]func(context.Context, Call) Result{}}
	for _, t := range list {
		set.add(t, run)
	}
	set.sort()
	return set
}

// sort puts the tools in name order.
func (set *Set) sort() {
	slices.SortFunc(set.tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
}

// addMCP lists every MCP server of spec at once and adds their tools in
// server order.
func (s *Service) addMCP(ctx context.Context, spec Spec, set *Set) {
	lists := make([][]Tool, len(spec.MCPServers))
	notes := make([][]string, len(spec.MCPServers))
	errs := make([]error, len(spec.MCPServers))
	var wg sync.WaitGroup
	for i, srv := range spec.MCPServers {
		wg.Go(func() { lists[i], notes[i], errs[i] = s.mcp.tools(ctx, spec, srv) })
	}
	wg.Wait()
	for i, srv := range spec.MCPServers {
		if errs[i] != nil {
			set.errors = append(set.errors, ServerError{Server: srv.Name, Reason: errs[i].Error()})
			continue
		}
		for _, note := range notes[i] {
			set.errors = append(set.errors, ServerError{Server: srv.Name, Reason: note})
		}
		for _, t := range lists[i] {
			set.add(t, func(ctx context.Context, c Call) Result {
				return s.mcp.call(ctx, spec, srv, t.Name, c.Arguments)
			})
		}
	}
}

// add offers t unless its name is taken.
func (set *Set) add(t Tool, run func(context.Context, Call) Result) {
	if _, taken := set.run[t.Name]; taken {
		return
	}
	set.tools = append(set.tools, t)
	set.run[t.Name] = run
}

// Tools returns the tools by name order.
func (set *Set) Tools() []Tool { return set.tools }

// Errors returns the MCP servers that could not be listed, and the tools
// of MCP servers that are not offered.
func (set *Set) Errors() []ServerError { return set.errors }

// Has reports whether the set offers a tool named name.
func (set *Set) Has(name string) bool {
	_, ok := set.run[name]
	return ok
}

// Call runs c; an unknown name is a failed call.
func (set *Set) Call(ctx context.Context, c Call) Result {
	run, ok := set.run[c.Name]
	if !ok {
		return Failure("unknown tool")
	}
	return run(ctx, c)
}
