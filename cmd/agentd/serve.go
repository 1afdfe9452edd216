package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/recall"
	"github.com/agentd/agentd/schedule"
	"github.com/agentd/agentd/tools"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/connect/discord"
	"github.com/agentd/agentd/connect/telegram"
	"github.com/agentd/agentd/connect/x"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/server"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/telemetry"
	"github.com/agentd/agentd/turn"
	"github.com/agentd/agentd/webhook"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// HTTP server limits. WriteTimeout bounds whole JSON responses (a send
// message waits for the provider); the stream writer clears its own
// deadline, so streams are not cut by it.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	minWriteTimeout   = 90 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
	// shutdownTimeout is how long in-flight requests may finish after a
	// stop signal before their contexts are cancelled.
	shutdownTimeout = 30 * time.Second
	// handOverAfter is how long a stopping process lets its runs finish
	// before it hands the others over to be resumed elsewhere: within
	// shutdownTimeout, so a request waiting for its run still answers.
	handOverAfter = shutdownTimeout - 5*time.Second
	// abandonTimeout is how long cancelled requests get to wind down
	// (storing partial replies) before the database is closed.
	abandonTimeout = 5 * time.Second
	// redisPrefix starts every Redis key agentd writes.
	redisPrefix = "agentd:"
	// bootstrapAccount is the account serve creates in an empty database.
	bootstrapAccount = "default"
)

var serveCommand = &command{
	name:    "serve",
	summary: "run the HTTP API (prints an API key on the first start)",
	details: `Runs the agent management API until interrupted (SIGINT or SIGTERM), then
stops accepting connections, lets requests in flight finish for up to 30s and
exits. On the first start with an empty database it creates the account
"default" and prints one write API key on stdout: save it, it is shown only
once.

Every flag mirrors an environment variable (shown in parentheses); a flag
given on the command line wins. Provider API keys and endpoints are read from
the environment only, so they stay out of shell history and process lists:
` + envOnlyHelp() + `
Examples:
  agentd serve
  agentd serve --addr 127.0.0.1:9000 --db /var/lib/agentd/agentd.db
  OPENAI_API_KEY=sk-... agentd serve --db postgres://agentd@localhost/agentd
  agentd serve --redis-url redis://127.0.0.1:6379/0 --metrics-addr :9090`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		raw := defineSettings(fs, e.getenv)
		return func(ctx context.Context, _ []string) error {
			cfg, err := raw.config()
			if err != nil {
				return usagef("serve", "invalid configuration:\n  %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
			}
			return e.serve(ctx, cfg)
		}
	},
}

// envOnlyHelp lists the settings read from the environment only.
func envOnlyHelp() string {
	var b strings.Builder
	for _, s := range settings {
		if s.flag == "" {
			fmt.Fprintf(&b, "  %-20s %s (default %s)\n", s.env, s.usage, s.shown)
		}
	}
	return b.String()
}

// serve runs the API with cfg until ctx is done.
func (e *env) serve(ctx context.Context, cfg config) error {
	logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: cfg.LogLevel})))
	if cfg.SecretBox == nil {
		logger.Warn("AGENTD_SECRET_KEY is not set: agents' secrets and webhook signing secrets are stored in clear")
	}
	stopTracing, err := startTracing(ctx, cfg.Tracing, logger)
	if err != nil {
		return err
	}
	defer stopTracing() // last: the spans of the shutdown are sent too
	jobEngine, err := openJobs(ctx, cfg.DB, logger.With("component", "jobs"))
	if err != nil {
		return fmt.Errorf("job engine on %s: %w", redactDSN(cfg.DB), err)
	}
	defer jobEngine.close(logger) // after the store: the engine stops first (below)
	storeOpts := append([]store.Option{store.WithSecretBox(cfg.SecretBox), store.WithPool(cfg.Pool)}, jobEngine.storeOption()...)
	if cfg.Tracing.Enabled() {
		storeOpts = append(storeOpts, store.WithTracing())
	}
	st, err := store.Open(ctx, cfg.DB, storeOpts...)
	if err != nil {
		return fmt.Errorf("open database %s: %w", redactDSN(cfg.DB), err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			logger.Error("closing the database", "error", err)
		}
	}()
	ls, err := listen(ctx, cfg)
	if err != nil {
		return err
	}
	defer ls.close()
	if err := e.bootstrap(ctx, st); err != nil {
		return err
	}
	reg := newRegistry()
	reg.MustRegister(newStoreGauges(st, logger))
	lim, err := newLimits(ctx, cfg.RedisURL, logger, reg)
	if err != nil {
		return err
	}
	defer lim.close(logger)
	model := llm.New(cfg.LLM)
	memories := recall.New(st.Memories(), st.Knowledge(), model, logger.With("component", "recall"))
	toolbox := tools.New(tools.Config{Timeout: cfg.ToolTimeout, AllowPrivate: cfg.AllowPrivateNetworks,
		AllowStdio: cfg.MCPStdio, Logger: logger.With("component", "tools")})
	defer toolbox.Close()
	turns, err := turn.New(turn.Config{Stores: turnStores(st), Model: model, Semaphore: lim.semaphore,
		Logger: logger, Registerer: reg, Tools: toolbox, Recall: memories, TraceContent: cfg.TraceContent, Prices: cfg.Prices})
	if err != nil {
		return fmt.Errorf("build turns: %w", err)
	}
	defer turns.Stop() // runs still going on are handed over, summaries end, before the database closes
	stopResuming, err := startResuming(ctx, jobEngine, turns, logger)
	if err != nil {
		return err
	}
	defer stopResuming() // stops looking, and the runs taken over end or are left to another replica, before turns drain
	defer handOverWhenStopping(ctx, turns)()
	srv, err := server.New(server.Config{
		PublicURL: publicURL(cfg.PublicURL, ls.api.Addr()), DefaultProvider: cfg.DefaultProvider, Version: buildVersion(),
		DefaultModels: cfg.Models, Turns: turns,
		Store:   serverStores(st),
		Counter: lim.counter, Logger: logger,
		Registry: reg, ServeMetrics: ls.metrics == nil, AllowPrivateNetworks: cfg.Webhooks.AllowPrivate,
		ToolRules: agent.ToolRules{AllowPrivate: cfg.AllowPrivateNetworks, AllowStdio: cfg.MCPStdio}, Recall: memories,
		Streams: lim.streams(), UnwatchedStream: cfg.LLM.Timeout, RunWait: 2 * cfg.LLM.Timeout,
		Tracing: cfg.Tracing.Enabled(), Prices: cfg.Prices,
	})
	if err != nil {
		return fmt.Errorf("build server: %w", err)
	}
	defer func() { // streamed replies end, or are cut and stored, before turns and the database close
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		srv.Close(ctx)
	}()
	hooks := cfg.Webhooks
	hooks.Logger = logger
	defer startWebhooks(st, hooks)() // stopped before the database closes
	sup, stopConnections, err := startConnections(ctx, cfg, st, turns, logger, reg)
	if err != nil {
		return err
	}
	defer stopConnections()
	stopFiring, err := startFiring(st, turns, sup, logger)
	if err != nil {
		return err
	}
	defer stopFiring() // no schedule fires once connections stop and runs are handed over
	return e.runHTTP(ctx, cfg, ls, srv, logger)
}

// tracingShutdownTimeout bounds the export of the last spans at exit.
const tracingShutdownTimeout = 5 * time.Second

// startTracing installs the trace exporter when cfg names an endpoint; the
// returned stop sends the spans still buffered.
func startTracing(ctx context.Context, cfg telemetry.Config, logger *slog.Logger) (stop func(), err error) {
	cfg.Logger = logger
	shutdown, err := telemetry.Setup(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	if cfg.Enabled() {
		logger.Info("exporting traces over OTLP")
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdownTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			logger.Warn("traces not all exported at exit", "error", err)
		}
	}, nil
}

// The consumers declare what they need of persistence, one small
// interface per resource, in domain's types; they never import store, so
// they compile without the ORM. Each gets the store's faces it declared.

func serverStores(st *store.Store) server.Stores {
	return server.Stores{Accounts: st.Accounts(), Idempotency: st.Idempotency(), Agents: st.Agents(),
		Conversations: st.Conversations(), Analytics: st.Analytics(), Memories: st.Memories(),
		Knowledge: st.Knowledge(), Connections: st.Connections(), Webhooks: st.Webhooks(),
		Tasks: st.Tasks(), Streams: st.Streams(), Runs: st.Runs(), Schedules: st.Schedules(),
		Responses: st.Responses()}
}

func turnStores(st *store.Store) turn.Stores {
	return turn.Stores{Agents: st.Agents(), Conversations: st.Conversations(), Analytics: st.Analytics(), Runs: st.Runs(), Budgets: st.Analytics(),
		Schedules: st.Schedules()}
}

func connectStores(st *store.Store) connect.Stores {
	return connect.Stores{Agents: st.Agents(), Connections: st.Connections(), Conversations: st.Conversations(), Runs: st.Runs()}
}

// startWebhooks runs the webhook delivery workers until the returned stop is
// called; stop waits for the attempts in flight to be recorded.
func startWebhooks(st *store.Store, cfg webhook.Config) (stop func()) {
	return inBackground(webhook.New(st.Webhooks(), cfg).Run)
}

// startResuming has the runs whose replica was lost taken over here
// until the returned stop is called, within a minute: on PostgreSQL by
// the job engine (each run's job comes due when the run would be lost),
// with a look for expired approvals a third of the beat timeout apart; on
// SQLite, which runs no engine, by that look finding lost runs too.
func startResuming(ctx context.Context, jobEngine *engine, turns *turn.Service, logger *slog.Logger) (stop func(), err error) {
	if jobEngine == nil {
		return inBackground(func(ctx context.Context) { turns.ResumeLost(ctx, store.RunBeatTimeout/3) }), nil
	}
	stopJobs, err := jobEngine.start(ctx, turns, logger)
	if err != nil {
		return nil, err
	}
	stopExpiring := inBackground(func(ctx context.Context) { turns.ExpireApprovals(ctx, store.RunBeatTimeout/3) })
	return func() { stopExpiring(); stopJobs() }, nil
}

// startFiring fires the agents' due schedules until the returned stop is
// called: every replica looks every schedule.DefaultEvery, and the store's
// claim makes each due time one run whichever replica fires it. sup, the
// platform connections of this replica (nil when it runs none), sends the
// replies of the schedules that have a target.
func startFiring(st *store.Store, turns *turn.Service, sup *connect.Supervisor, logger *slog.Logger) (stop func(), err error) {
	cfg := schedule.Config{Store: st.Schedules(), Turns: turns, Holders: st.Connections(), Logger: logger.With("component", "schedules")}
	if sup != nil {
		cfg.Chats = sup
	}
	firer, err := schedule.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("build schedules: %w", err)
	}
	return inBackground(firer.Run), nil
}

// handOverWhenStopping hands the runs still going on over handOverAfter
// after ctx ends (the stop signal); the returned stop cancels that.
func handOverWhenStopping(ctx context.Context, turns *turn.Service) (stop func()) {
	var mu sync.Mutex
	var timer *time.Timer
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(handOverAfter, turns.HandOver)
	})
	return func() {
		stopAfter()
		mu.Lock()
		defer mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
	}
}

// inBackground runs work until the returned stop is called; stop waits
// for work to return.
func inBackground(work func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		work(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// startConnections runs the platform connections' supervisor unless
// AGENTD_CONNECTIONS is off, and returns it (nil when off); the returned
// function stops it and waits for its connections to release their
// leases.
func startConnections(ctx context.Context, cfg config, st *store.Store, turns connect.Turner, logger *slog.Logger, reg *prometheus.Registry) (*connect.Supervisor, func(), error) {
	if !cfg.Connections {
		return nil, func() {}, nil
	}
	sup, err := connect.New(connect.Config{
		Stores: connectStores(st), Turner: turns, Logger: logger.With("component", "connections"), Registerer: reg,
		Platforms: []connect.Platform{&telegram.Platform{APIURL: cfg.TelegramURL}, &discord.Platform{APIURL: cfg.DiscordURL},
			&x.Platform{APIURL: cfg.TwitterURL, PollInterval: cfg.TwitterPoll}},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("build connections: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sup.Run(ctx)
	}()
	return sup, func() { cancel(); <-done }, nil
}

// newRegistry returns the Prometheus registry of the process, with the Go
// runtime and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// bootstrap creates the account "default" and a write key, printing the key
// on stdout, when the database has no account. A replica that loses the
// race to create it prints nothing.
func (e *env) bootstrap(ctx context.Context, st *store.Store) error {
	n, err := st.Accounts().CountAccounts(ctx)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if n > 0 {
		return nil
	}
	_, err = st.Accounts().CreateAccount(ctx, domain.Account{Name: bootstrapAccount, Tier: domain.TierStandard})
	if errors.Is(err, domain.ErrConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	key, _, err := st.Accounts().CreateKey(ctx, bootstrapAccount, domain.ScopeWrite, nil)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	fmt.Fprintln(e.stdout, key)
	fmt.Fprintf(e.stderr, "agentd: empty database: created account %q and the write API key above.\n"+
		"agentd: save it, it is shown only once. Use it as: Authorization: Bearer <key>\n"+
		"agentd: more keys: agentd keys create --account %s\n"+
		"agentd: (from a source checkout, agentd is 'go run ./cmd/agentd', or bin/agentd after 'make build')\n",
		bootstrapAccount, bootstrapAccount)
	return nil
}

// limits are the rate-limit backends and what closes them.
type limits struct {
	counter   limit.Counter
	semaphore limit.Semaphore
	client    *redis.Client // nil when in memory
}

// newLimits returns Redis backends wrapped to fail open when redisURL is
// set, else in-memory ones. An unreachable Redis is logged, not fatal: the
// limits fail open until it answers.
func newLimits(ctx context.Context, redisURL string, logger *slog.Logger, reg *prometheus.Registry) (*limits, error) {
	if redisURL == "" {
		return &limits{counter: limit.NewMemoryCounter(), semaphore: limit.NewMemorySemaphore()}, nil
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	client := redis.NewClient(opts)
	errs := limit.NewBackendErrors()
	if err := reg.Register(errs); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("register limit metrics: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := client.Ping(pingCtx).Err(); err != nil {
		logger.Warn("redis unreachable; rate limits admit every request until it answers", "addr", opts.Addr, "error", err)
	}
	return &limits{
		counter:   limit.FailOpenCounter(limit.NewRedisCounter(client, redisPrefix), logger, errs),
		semaphore: limit.FailOpenSemaphore(limit.NewRedisSemaphore(client, redisPrefix, 0, limit.WithLogger(logger)), logger, errs),
		client:    client,
	}, nil
}

// streams keeps streamed replies in Redis when it is configured; nil
// leaves them to the database.
func (l *limits) streams() streamlog.Backend {
	if l.client == nil {
		return nil
	}
	return streamlog.NewRedis(l.client, redisPrefix)
}

// close closes the Redis client, if any.
func (l *limits) close(logger *slog.Logger) {
	if l.client == nil {
		return
	}
	if err := l.client.Close(); err != nil {
		logger.Error("closing the redis client", "error", err)
	}
}

// listeners are the bound sockets of the API and, optionally, the metrics
// and the profiles.
type listeners struct {
	api, metrics, pprof net.Listener
}

// listen binds the API address and the metrics address, if any.
func listen(ctx context.Context, cfg config) (*listeners, error) {
	var lc net.ListenConfig
	api, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	ls := &listeners{api: api}
	if cfg.MetricsAddr != "" {
		if ls.metrics, err = lc.Listen(ctx, "tcp", cfg.MetricsAddr); err != nil {
			ls.close()
			return nil, fmt.Errorf("listen on %s for metrics: %w", cfg.MetricsAddr, err)
		}
	}
	if cfg.PprofAddr != "" {
		if ls.pprof, err = lc.Listen(ctx, "tcp", cfg.PprofAddr); err != nil {
			ls.close()
			return nil, fmt.Errorf("listen on %s for pprof: %w", cfg.PprofAddr, err)
		}
	}
	return ls, nil
}

// close closes the listeners; closing one already closed by its server is harmless.
func (ls *listeners) close() {
	for _, l := range []net.Listener{ls.api, ls.metrics, ls.pprof} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// publicURL returns configured, or http://HOST:PORT/v1 for the bound
// address, HOST being localhost when bound to every interface.
func publicURL(configured string, addr net.Addr) string {
	if configured != "" {
		return configured
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://localhost:8080/v1"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/v1"
}

// newHTTPServer returns an http.Server with agentd's limits whose requests
// derive from base. It speaks HTTP/1.1 and HTTP/2 without TLS (prior
// knowledge; TLS ends in front of agentd): a client holding thousands of
// streams open needs a connection, and a file in both processes, per 250
// of them over HTTP/2, not one each.
func newHTTPServer(h http.Handler, base context.Context, writeTimeout time.Duration, logger *slog.Logger) *http.Server {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Protocols:         protocols,
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// runHTTP serves the listeners until ctx is done or a server fails, then
// shuts down: requests in flight get shutdownTimeout to finish, after which
// they are cancelled and get abandonTimeout to wind down.
func (e *env) runHTTP(ctx context.Context, cfg config, ls *listeners, srv *server.Server, logger *slog.Logger) error {
	base, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	inflight := &tracker{}
	writeTimeout := max(minWriteTimeout, cfg.LLM.Timeout+30*time.Second)
	servers := []*http.Server{newHTTPServer(inflight.wrap(srv.Handler()), base, writeTimeout, logger)}
	listenersOf := []net.Listener{ls.api}
	if ls.metrics != nil {
		servers = append(servers, newHTTPServer(srv.MetricsHandler(), base, writeTimeout, logger))
		listenersOf = append(listenersOf, ls.metrics)
	}
	if ls.pprof != nil {
		// A CPU profile or trace runs as long as its ?seconds= asks.
		servers = append(servers, newHTTPServer(pprofHandler(), base, 0, logger))
		listenersOf = append(listenersOf, ls.pprof)
	}
	failed := make(chan error, len(servers))
	for i, hs := range servers {
		go func() { failed <- hs.Serve(listenersOf[i]) }()
	}
	e.announce(ls, logger)
	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "timeout", shutdownTimeout.String())
	case serveErr = <-failed:
		logger.Error("server failed", "error", serveErr)
	}
	shutdown(servers, inflight, cancelRequests, logger)
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	logger.Info("stopped")
	return nil
}

// announce logs the bound addresses and writes "listening on http://ADDR"
// to stderr (tests read the port from it).
func (e *env) announce(ls *listeners, logger *slog.Logger) {
	logger.Info("listening", "addr", ls.api.Addr().String())
	fmt.Fprintf(e.stderr, "listening on http://%s\n", ls.api.Addr())
	if ls.metrics != nil {
		logger.Info("metrics listening", "addr", ls.metrics.Addr().String())
		fmt.Fprintf(e.stderr, "metrics on http://%s/metrics\n", ls.metrics.Addr())
	}
	if ls.pprof != nil {
		logger.Info("pprof listening", "addr", ls.pprof.Addr().String())
		fmt.Fprintf(e.stderr, "pprof on http://%s/debug/pprof/\n", ls.pprof.Addr())
	}
}

// pprofHandler serves the Go runtime's profiles under /debug/pprof/. It is
// mounted on its own listener only: the API's mux never has them.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// shutdown stops servers gracefully within shutdownTimeout, then cancels the
// requests still running and waits up to abandonTimeout for them to return.
func shutdown(servers []*http.Server, inflight *tracker, cancelRequests context.CancelFunc, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, hs := range servers {
		wg.Go(func() {
			if err := hs.Shutdown(ctx); err != nil {
				logger.Warn("graceful shutdown incomplete; cancelling requests in flight", "error", err)
				cancelRequests()
				_ = hs.Close()
			}
		})
	}
	wg.Wait()
	cancelRequests()
	if !inflight.wait(abandonTimeout) {
		logger.Warn("requests still running after shutdown", "waited", abandonTimeout.String())
	}
}

// tracker counts the requests being handled, so shutdown can wait for
// handlers that outlive their connection.
type tracker struct{ wg sync.WaitGroup }

// wrap returns h counted by t.
func (t *tracker) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.wg.Add(1)
		defer t.wg.Done()
		h.ServeHTTP(w, r)
	})
}

// wait waits up to d for every handler to return and reports whether they did.
func (t *tracker) wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
