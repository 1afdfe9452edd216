package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/price"
	"github.com/agentd/agentd/recall"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/turn"
	"github.com/prometheus/client_golang/prometheus"
)

// Turns runs agents' turns; *turn.Service implements it.
type Turns interface {
	// Prepare and Stream are A2A's streamed send's.
	Prepare(ctx context.Context, in turn.Input) (*turn.Turn, error)
	Stream(ctx context.Context, t *turn.Turn, emit func(turn.Event) error) (turn.Result, error)
	ListTools(ctx context.Context, accountID, agentID string) (turn.ToolListing, error)
	Preview(ctx context.Context, in turn.Input) (turn.Preview, error)
	RecallAgent(ctx context.Context, accountID, agentID string) (recall.Agent, error)
	// Providers says which model providers the server can call.
	Providers() []turn.ProviderState
	// Accept, Detach, Wait and Cancel are the runs' other ways.
	Accept(ctx context.Context, in turn.Input) (*turn.Turn, error)
	Detach(ctx context.Context, t *turn.Turn, emit func(turn.Event) error) <-chan turn.Outcome
	Wait(ctx context.Context, accountID, agentID, id string, limit time.Duration) (domain.Run, error)
	WaitEnd(ctx context.Context, accountID, agentID, id string) (domain.Run, error)
	Cancel(ctx context.Context, accountID, agentID, id string) (domain.Run, error)
	// Decide records decisions on the calls a run waits for.
	Decide(ctx context.Context, accountID, agentID, id string, decisions []domain.Decision, all bool) (domain.Run, error)
	// Follow passes on the events of a run going on here after a wait.
	Follow(id string, emit func(turn.Event)) (stop func())
}

var _ Turns = (*turn.Service)(nil)

// Config is everything the HTTP layer needs; cmd/agentd fills it from the
// environment and flags, tests fill it directly.
type Config struct {
	// PublicURL is {base_url}, ending in /v1, used to build apiEndpoint.
	PublicURL string
	// Version is the binary's version, as the MCP server names it ("dev"
	// when empty).
	Version string
	// DefaultProvider is used when an agent names no modelProvider.
	DefaultProvider string
	// DefaultModels maps a provider to the model used when none is given;
	// a provider absent or empty keeps llm.DefaultModels'.
	DefaultModels map[string]string

	// Store is persistence, one face per resource.
	Store Stores
	// Turns answers Send Message and its stream.
	Turns Turns
	// Counter holds the rate limits (in memory or Redis).
	Counter limit.Counter
	// Streams keeps streamed replies where every replica reads them
	// (Redis); nil keeps them in Store.Streams.
	Streams streamlog.Backend
	// MaxStreamBytes bounds a streamed reply's events; past it the reply
	// is cut as by a cancel (streamlog.DefaultMaxStreamBytes when 0).
	MaxStreamBytes int
	// UnwatchedStream bounds how long a streamed reply runs on with no
	// client following it on this replica (the provider timeout, 60s).
	UnwatchedStream time.Duration
	// RunWait is how long a synchronous Send Message waits for its run
	// (queue included) before it answers 202 with the run, which goes on:
	// twice the provider timeout (2m when 0).
	RunWait time.Duration
	// ReplicaLostAfter is how long a replica may go without renewing its
	// streamed replies and A2A tasks before the others take it for dead:
	// its streams end with a STREAM_LOST error, its working tasks fail
	// (20s when 0). It renews every quarter (streams) or third (tasks)
	// of it; the replicas' clocks must agree within a fraction of it.
	ReplicaLostAfter time.Duration

	Logger *slog.Logger
	// Registry receives the service's Prometheus collectors; nil means a new one.
	Registry *prometheus.Registry
	// ServeMetrics mounts GET /metrics on the API handler; false when the
	// metrics have a listener of their own (AGENTD_METRICS_ADDR).
	ServeMetrics bool

	// PingInterval is the gap between ": ping" comments on a waiting stream (15s).
	PingInterval time.Duration
	// StreamWriteTimeout bounds the write of each frame of a stream (10s): a
	// client that stops reading is then taken as gone instead of holding
	// the stream, its provider call and its concurrency slot forever.
	StreamWriteTimeout time.Duration
	// IdempotencyLease is how long a request with an Idempotency-Key holds
	// its key past the last renewal (30s); the request renews it every third
	// of a lease while it runs. A repeat after the lease ran out, the first
	// request's replica taken for dead, runs afresh. Replicas compare their
	// own clocks with the lease: they must agree within two thirds of it.
	IdempotencyLease time.Duration
	// MaxBodyBytes caps request bodies (1 MiB).
	MaxBodyBytes int64
	// AllowPrivateNetworks accepts URLs with literal internal addresses
	// (AGENTD_ALLOW_PRIVATE_NETWORKS, or AGENTD_WEBHOOK_ALLOW_PRIVATE for
	// webhooks), for tests and closed networks.
	AllowPrivateNetworks bool
	// ToolRules check the action handlers and MCP servers of characters.
	ToolRules agent.ToolRules
	// Recall stores and ranks memories and knowledge.
	Recall Recall
	// Prices is the price table in force (price.Builtin when zero).
	Prices price.Table
	// Tracing makes each request a server span of the trace its
	// traceparent names (a new one without it); false starts none.
	Tracing bool
}

// withDefaults fills the zero members of c with the documented defaults.
func (c Config) withDefaults() Config {
	if c.DefaultProvider == "" {
		c.DefaultProvider = "openai"
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://localhost:8080/v1"
	}
	models := make(map[string]string, len(llm.DefaultModels))
	for p, m := range llm.DefaultModels {
		models[p] = m
	}
	for p, m := range c.DefaultModels {
		if m != "" {
			models[p] = m
		}
	}
	c.DefaultModels = models
	if c.Prices.IsZero() {
		c.Prices = price.Builtin()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.PingInterval <= 0 {
		c.PingInterval = 15 * time.Second
	}
	if c.IdempotencyLease <= 0 {
		c.IdempotencyLease = 30 * time.Second
	}
	if c.RunWait <= 0 {
		c.RunWait = 2 * time.Minute
	}
	if c.StreamWriteTimeout <= 0 {
		c.StreamWriteTimeout = 10 * time.Second
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.Counter == nil {
		c.Counter = limit.NewMemoryCounter()
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}
