package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/connect/discord"
	"github.com/agentd/agentd/connect/telegram"
	"github.com/agentd/agentd/connect/x"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/price"
	"github.com/agentd/agentd/secretbox"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/telemetry"
	"github.com/agentd/agentd/webhook"
	"github.com/redis/go-redis/v9"
)

// defaultDB is the database used when neither --db nor AGENTD_DB is given.
const defaultDB = "./agentd.db"

// maxModelName is the longest default model name accepted, the bound the
// service gives every short name it takes.
const maxModelName = 200

// config is the whole configuration of `agentd serve`, validated.
type config struct {
	Addr        string // API listen address
	MetricsAddr string // separate /metrics listen address; "" = on the API listener
	PprofAddr   string // listen address of /debug/pprof; "" = no profiling
	DB          string // SQLite path or postgres:// URL
	// PublicURL is {base_url}; "" means http://localhost:PORT/v1 with the
	// port actually bound.
	PublicURL       string
	RedisURL        string // "" = limits in memory
	DefaultProvider string
	Models          map[string]string // provider -> default model (overrides only)
	LLM             llm.Config
	LogLevel        slog.Level
	// SecretBox encrypts agents' settings.secrets (AGENTD_SECRET_KEY);
	// nil stores them in clear.
	SecretBox *secretbox.Box
	// Connections runs the platform connections (AGENTD_CONNECTIONS=on);
	// off makes an API-only replica.
	Connections bool
	TelegramURL string // TELEGRAM_API_URL
	// TwitterURL and TwitterPoll are where X connections call and how often
	// they poll mentions and DMs (TWITTER_API_URL, TWITTER_POLL_INTERVAL).
	TwitterURL  string
	TwitterPoll time.Duration
	DiscordURL  string // DISCORD_API_URL
	// Webhooks configures the delivery workers (retries, timeout, guard).
	Webhooks webhook.Config
	// Pool sizes the PostgreSQL connection pool.
	Pool store.Pool
	// AllowPrivateNetworks lifts the guard against internal addresses for
	// every URL given through the API (AGENTD_ALLOW_PRIVATE_NETWORKS).
	AllowPrivateNetworks bool
	// ToolTimeout bounds each tool call (AGENTD_TOOL_TIMEOUT); MCPStdio
	// lets MCP servers of type stdio run (AGENTD_MCP_STDIO).
	ToolTimeout time.Duration
	MCPStdio    bool
	// Tracing says where traces go (OTEL_EXPORTER_OTLP_ENDPOINT,
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); none configured, none are made.
	Tracing telemetry.Config
	// TraceContent puts message text, tool arguments and results in spans
	// (AGENTD_TRACE_CONTENT).
	TraceContent bool
	// Prices is the price table in force: the built-in one with the file
	// AGENTD_PRICES names over it.
	Prices price.Table
}

// setting is one configuration variable: its environment variable, the
// serve flag mirroring it ("" for secrets and provider endpoints, which are
// read from the environment only) and its documentation.
type setting struct {
	env   string
	flag  string
	def   string // the value when unset
	shown string // the default as documented, when it differs from def
	usage string // with a `PLACEHOLDER` in backquotes
	// secret: the flag never shows its value, which may come from the
	// environment, in help.
	secret bool
}

// settings lists every variable `agentd serve` reads, in the order of the help.
var settings = []setting{
	{env: "AGENTD_ADDR", flag: "addr", def: ":8080", usage: "listen `address` of the API; port 0 picks a free one"},
	{env: "AGENTD_DB", flag: "db", def: defaultDB, usage: "database: a SQLite file `path` or a postgres:// URL"},
	{env: "AGENTD_DB_MAX_OPEN_CONNS", flag: "db-max-open-conns", def: strconv.Itoa(store.DefaultPool.MaxOpen), usage: "PostgreSQL: most open `connections` of this replica, besides the job engine's 4 (the server must allow replicas × (this + 4))"},
	{env: "AGENTD_DB_MAX_IDLE_CONNS", flag: "db-max-idle-conns", def: strconv.Itoa(store.DefaultPool.MaxIdle), usage: "PostgreSQL: idle `connections` kept open"},
	{env: "AGENTD_DB_CONN_MAX_LIFETIME", flag: "db-conn-max-lifetime", def: store.DefaultPool.MaxLifetime.String(), usage: "PostgreSQL: a connection is recycled after this `duration` (0: never)"},
	{env: "AGENTD_DB_CONN_MAX_IDLE_TIME", flag: "db-conn-max-idle-time", def: store.DefaultPool.MaxIdleTime.String(), usage: "PostgreSQL: an idle connection is closed after this `duration` (0: never)"},
	{env: "AGENTD_DB_STATEMENT_TIMEOUT", flag: "db-statement-timeout", def: store.DefaultPool.StatementTimeout.String(), usage: "PostgreSQL: statements running longer are cancelled, a `duration` (0: no limit)"},
	{env: "AGENTD_PUBLIC_URL", flag: "public-url", shown: "http://localhost:PORT/v1", usage: "public base `URL` of the API, used in apiEndpoint"},
	{env: "AGENTD_REDIS_URL", flag: "redis-url", shown: "none: in memory", usage: "Redis `URL` for rate limits shared by replicas"},
	{env: "AGENTD_METRICS_ADDR", flag: "metrics-addr", shown: "none: on the API listener", usage: "separate listen `address` for GET /metrics"},
	{env: "AGENTD_PPROF_ADDR", flag: "pprof-addr", shown: "none: off", usage: "listen `address` for Go profiles under /debug/pprof/ (never the API listener); bind it to localhost"},
	{env: "AGENTD_DEFAULT_PROVIDER", flag: "default-provider", def: llm.ProviderOpenAI, usage: "`provider` of agents that name none: openai, anthropic, groq, google, ollama"},
	{env: "AGENTD_MODEL_OPENAI", flag: "model-openai", def: llm.DefaultModels[llm.ProviderOpenAI], usage: "default `model` of openai agents"},
	{env: "AGENTD_MODEL_ANTHROPIC", flag: "model-anthropic", def: llm.DefaultModels[llm.ProviderAnthropic], usage: "default `model` of anthropic agents"},
	{env: "AGENTD_MODEL_GROQ", flag: "model-groq", def: llm.DefaultModels[llm.ProviderGroq], usage: "default `model` of groq agents"},
	{env: "AGENTD_MODEL_GOOGLE", flag: "model-google", def: llm.DefaultModels[llm.ProviderGoogle], usage: "default `model` of google agents"},
	{env: "AGENTD_MODEL_OLLAMA", flag: "model-ollama", def: llm.DefaultModels[llm.ProviderOllama], usage: "default `model` of ollama agents"},
	{env: "AGENTD_PROVIDER_TIMEOUT", flag: "provider-timeout", def: "60s", usage: "time limit of one model provider call, a `duration`"},
	{env: "AGENTD_CONNECTIONS", flag: "connections", def: "on", usage: "`on` runs agents' platform connections (Telegram, Discord); off for API-only replicas"},
	{env: "TELEGRAM_API_URL", flag: "telegram-api-url", def: telegram.DefaultAPIURL, usage: "Telegram Bot API base `URL`"},
	{env: "TWITTER_API_URL", flag: "twitter-api-url", def: x.DefaultAPIURL, usage: "X API base `URL`"},
	{env: "TWITTER_POLL_INTERVAL", flag: "twitter-poll-interval", def: "2m", usage: "gap between polls of X mentions and DMs, a `duration`"},
	{env: "DISCORD_API_URL", flag: "discord-api-url", def: discord.DefaultAPIURL, usage: "Discord API `URL` (its gateway endpoint names the gateway)"},
	{env: "AGENTD_LOG_LEVEL", flag: "log-level", def: "info", usage: "log `level`: debug, info, warn, error"},
	{env: "AGENTD_WEBHOOK_RETRIES", flag: "webhook-retries", shown: "5s,5m,30m,2h,5h,10h", usage: "comma-separated `durations` to wait before each retry of a failed webhook delivery"},
	{env: "AGENTD_WEBHOOK_TIMEOUT", flag: "webhook-timeout", def: "10s", usage: "time limit of one webhook delivery attempt, a `duration`"},
	{env: "AGENTD_WEBHOOK_ALLOW_PRIVATE", flag: "webhook-allow-private", def: "false", usage: "`true` lets webhooks reach loopback, private and link-local addresses (tests, closed networks)"},
	{env: "AGENTD_ALLOW_PRIVATE_NETWORKS", flag: "allow-private-networks", def: "false", usage: "`true` lets every URL given through the API (webhooks, action handlers, MCP servers) reach internal addresses (tests, closed networks)"},
	{env: embeddingModelVar(llm.ProviderOpenAI), flag: "embedding-model-openai", def: llm.DefaultEmbeddingModels[llm.ProviderOpenAI], usage: "embedding `model` of openai agents' memories and knowledge"},
	{env: embeddingModelVar(llm.ProviderGoogle), flag: "embedding-model-google", def: llm.DefaultEmbeddingModels[llm.ProviderGoogle], usage: "embedding `model` of google agents' memories and knowledge"},
	{env: embeddingModelVar(llm.ProviderOllama), flag: "embedding-model-ollama", def: llm.DefaultEmbeddingModels[llm.ProviderOllama], usage: "embedding `model` of ollama agents' memories and knowledge"},
	{env: "AGENTD_TOOL_TIMEOUT", flag: "tool-timeout", def: "15s", usage: "time limit of one tool call (action handler or MCP server), a `duration`"},
	{env: "AGENTD_MCP_STDIO", flag: "mcp-stdio", def: "false", usage: "`true` lets agents' MCP servers of type stdio run programs on this host (single-tenant hosts only)"},
	{env: "AGENTD_PRICES", flag: "prices", shown: "none: the built-in table", usage: "JSON `file` of model prices, {\"provider/model\": {\"input\": USD, \"output\": USD}} per million tokens, added to or replacing the built-in table"},
	{env: "AGENTD_TRACE_CONTENT", flag: "trace-content", def: "false", usage: "`true` records message text, tool arguments and results in trace spans (they may hold personal data); off, spans carry ids, models and counts only"},
	{env: secretKeyEnv, flag: "secret-key", shown: "none: secrets stored in clear", usage: secretKeyUsage, secret: true},
	{env: secretKeysEnv, flag: "secret-keys", shown: "none", usage: secretKeysUsage, secret: true},
	{env: "OPENAI_API_KEY", shown: "none", usage: "API key of provider openai"},
	{env: "OPENAI_BASE_URL", shown: llm.DefaultBaseURL(llm.ProviderOpenAI), usage: "base URL of provider openai"},
	{env: "ANTHROPIC_API_KEY", shown: "none", usage: "API key of provider anthropic"},
	{env: "ANTHROPIC_BASE_URL", shown: llm.DefaultBaseURL(llm.ProviderAnthropic), usage: "base URL of provider anthropic"},
	{env: "GROQ_API_KEY", shown: "none", usage: "API key of provider groq"},
	{env: "GROQ_BASE_URL", shown: llm.DefaultBaseURL(llm.ProviderGroq), usage: "base URL of provider groq"},
	{env: "GOOGLE_API_KEY", shown: "none", usage: "API key of provider google"},
	{env: "GOOGLE_BASE_URL", shown: llm.DefaultBaseURL(llm.ProviderGoogle), usage: "base URL of provider google"},
	{env: "OLLAMA_HOST", shown: llm.DefaultBaseURL(llm.ProviderOllama), usage: "address of the ollama server (provider ollama needs no key)"},
	{env: otlpEndpointEnv, shown: "none: no traces", usage: "OTLP/HTTP collector base URL: traces are exported to it (+ /v1/traces); the other OTEL_* variables are honoured"},
	{env: otlpTracesEndpointEnv, shown: "none", usage: "full OTLP/HTTP URL of traces; wins over " + otlpEndpointEnv},
	{env: "OTEL_SDK_DISABLED", shown: "false", usage: "true turns traces off even with an endpoint set"},
	{env: "OTEL_TRACES_EXPORTER", shown: "otlp", usage: "otlp, or none to turn traces off"},
	{env: "OTEL_EXPORTER_OTLP_PROTOCOL", shown: "http/protobuf", usage: "the only OTLP protocol agentd speaks; grpc is refused"},
	{env: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", shown: "http/protobuf", usage: "the same, for traces"},
}

// The OpenTelemetry variables that turn traces on.
const (
	otlpEndpointEnv       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	otlpTracesEndpointEnv = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// rawConfig holds each setting's value, by environment variable, as read
// from the environment and then the flags.
type rawConfig map[string]*string

// defineSettings fills a rawConfig from getenv and defines on fs the flags
// that override it.
func defineSettings(fs *flag.FlagSet, getenv func(string) string) rawConfig {
	raw := make(rawConfig, len(settings))
	for _, s := range settings {
		v := s.def
		if ev := strings.TrimSpace(getenv(s.env)); ev != "" {
			v = ev
		}
		p := new(string)
		*p = v
		switch {
		case s.secret:
			fs.Var(secretString{p}, s.flag, s.usage)
		case s.flag != "":
			fs.StringVar(p, s.flag, v, s.usage)
		}
		raw[s.env] = p
	}
	return raw
}

// get returns the value of the variable env.
func (r rawConfig) get(env string) string { return strings.TrimSpace(*r[env]) }

// boolean reads env as true or false, reporting anything else to check.
func (r rawConfig) boolean(env string, check func(env string, err error)) bool {
	b, err := strconv.ParseBool(r.get(env))
	if err != nil {
		check(env, fmt.Errorf("%q is not true or false", r.get(env)))
	}
	return b
}

// settingName names a setting in messages: "--addr / AGENTD_ADDR".
func settingName(env string) string {
	for _, s := range settings {
		if s.env == env && s.flag != "" {
			return "--" + s.flag + " / " + env
		}
	}
	return env
}

// config validates the raw values and returns the configuration, or every
// problem found at once.
func (r rawConfig) config() (config, error) {
	var errs []error
	check := func(env string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", settingName(env), err))
		}
	}
	c := config{
		Addr: r.get("AGENTD_ADDR"), MetricsAddr: r.get("AGENTD_METRICS_ADDR"), PprofAddr: r.get("AGENTD_PPROF_ADDR"),
		DB: r.get("AGENTD_DB"), RedisURL: r.get("AGENTD_REDIS_URL"),
		DefaultProvider: r.get("AGENTD_DEFAULT_PROVIDER"), Models: map[string]string{},
	}
	check("AGENTD_ADDR", checkAddr(c.Addr))
	if c.MetricsAddr != "" {
		check("AGENTD_METRICS_ADDR", checkMetricsAddr(c.MetricsAddr, c.Addr))
	}
	if c.PprofAddr != "" {
		check("AGENTD_PPROF_ADDR", checkPprofAddr(c.PprofAddr, c.Addr, c.MetricsAddr))
	}
	if c.DB == "" {
		check("AGENTD_DB", errors.New("must not be empty"))
	}
	var err error
	c.PublicURL, err = checkPublicURL(r.get("AGENTD_PUBLIC_URL"))
	check("AGENTD_PUBLIC_URL", err)
	if c.RedisURL != "" {
		_, err := redis.ParseURL(c.RedisURL)
		check("AGENTD_REDIS_URL", err)
	}
	check("AGENTD_DEFAULT_PROVIDER", checkProvider(c.DefaultProvider))
	switch r.get("AGENTD_CONNECTIONS") {
	case "on":
		c.Connections = true
	case "off":
	default:
		check("AGENTD_CONNECTIONS", fmt.Errorf("%q is neither on nor off", r.get("AGENTD_CONNECTIONS")))
	}
	c.TelegramURL = r.get("TELEGRAM_API_URL")
	check("TELEGRAM_API_URL", checkHTTPURL(c.TelegramURL))
	c.TwitterURL = r.get("TWITTER_API_URL")
	check("TWITTER_API_URL", checkHTTPURL(c.TwitterURL))
	c.TwitterPoll, err = positiveDuration(r.get("TWITTER_POLL_INTERVAL"))
	check("TWITTER_POLL_INTERVAL", err)
	c.DiscordURL = r.get("DISCORD_API_URL")
	check("DISCORD_API_URL", checkHTTPURL(c.DiscordURL))
	for _, p := range llm.Providers {
		env := "AGENTD_MODEL_" + strings.ToUpper(p)
		c.Models[p] = r.get(env)
		check(env, checkModel(c.Models[p]))
	}
	c.LLM, err = r.llmConfig()
	check("AGENTD_PROVIDER_TIMEOUT", err)
	if err := c.LogLevel.UnmarshalText([]byte(r.get("AGENTD_LOG_LEVEL"))); err != nil {
		check("AGENTD_LOG_LEVEL", fmt.Errorf("%q is not a level; use debug, info, warn or error", r.get("AGENTD_LOG_LEVEL")))
	}
	c.Pool = r.pool(check)
	if one, many := r.get(secretKeyEnv), r.get(secretKeysEnv); one != "" && many != "" {
		check(secretKeysEnv, fmt.Errorf("set %s or %s, not both", secretKeysEnv, secretKeyEnv))
	} else {
		c.SecretBox, err = parseSecretKey(one + many)
		check(secretKeysEnv+" / "+secretKeyEnv, err)
	}
	c.Webhooks.Retries, err = parseRetries(r.get("AGENTD_WEBHOOK_RETRIES"))
	check("AGENTD_WEBHOOK_RETRIES", err)
	c.Webhooks.Timeout, err = positiveDuration(r.get("AGENTD_WEBHOOK_TIMEOUT"))
	check("AGENTD_WEBHOOK_TIMEOUT", err)
	webhooksPrivate := r.boolean("AGENTD_WEBHOOK_ALLOW_PRIVATE", check)
	c.AllowPrivateNetworks = r.boolean("AGENTD_ALLOW_PRIVATE_NETWORKS", check)
	c.Webhooks.AllowPrivate = webhooksPrivate || c.AllowPrivateNetworks
	c.ToolTimeout, err = positiveDuration(r.get("AGENTD_TOOL_TIMEOUT"))
	check("AGENTD_TOOL_TIMEOUT", err)
	c.MCPStdio = r.boolean("AGENTD_MCP_STDIO", check)
	c.Tracing = r.tracing(check)
	c.TraceContent = r.boolean("AGENTD_TRACE_CONTENT", check)
	c.Prices, err = loadPrices(r.get("AGENTD_PRICES"))
	check("AGENTD_PRICES", err)
	if len(errs) == 0 {
		if err := c.LLM.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// tracing reads the OpenTelemetry variables that decide whether traces are
// exported, reporting each bad one to check; the SDK reads the others.
func (r rawConfig) tracing(check func(env string, err error)) telemetry.Config {
	c := telemetry.Config{Endpoint: r.get(otlpEndpointEnv), TracesEndpoint: r.get(otlpTracesEndpointEnv), Version: version}
	for _, env := range []string{otlpEndpointEnv, otlpTracesEndpointEnv} {
		if v := r.get(env); v != "" {
			check(env, checkHTTPURL(v))
		}
	}
	if r.get("OTEL_SDK_DISABLED") != "" {
		c.Disabled = r.boolean("OTEL_SDK_DISABLED", check)
	}
	switch v := r.get("OTEL_TRACES_EXPORTER"); v {
	case "", "otlp":
	case "none":
		c.Disabled = true
	default:
		check("OTEL_TRACES_EXPORTER", fmt.Errorf("%q is not supported; use otlp or none", v))
	}
	for _, env := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v := r.get(env); v != "" && v != "http/protobuf" {
			check(env, fmt.Errorf("%q is not supported; agentd exports over http/protobuf", v))
		}
	}
	return c
}

// llmConfig returns the providers' configuration; its error is about the
// provider timeout.
func (r rawConfig) llmConfig() (llm.Config, error) {
	pc := func(provider string) llm.ProviderConfig {
		up := strings.ToUpper(provider)
		return llm.ProviderConfig{APIKey: r.get(up + "_API_KEY"), BaseURL: r.get(up + "_BASE_URL")}
	}
	c := llm.Config{
		OpenAI: pc(llm.ProviderOpenAI), Anthropic: pc(llm.ProviderAnthropic),
		Groq: pc(llm.ProviderGroq), Google: pc(llm.ProviderGoogle),
		Ollama:          llm.ProviderConfig{BaseURL: r.get("OLLAMA_HOST")},
		EmbeddingModels: map[string]string{},
	}
	for provider, def := range llm.DefaultEmbeddingModels {
		c.EmbeddingModels[provider] = cmp.Or(r.get(embeddingModelVar(provider)), def)
	}
	d, err := time.ParseDuration(r.get("AGENTD_PROVIDER_TIMEOUT"))
	switch {
	case err != nil:
		return c, fmt.Errorf("%q is not a duration such as 60s or 2m", r.get("AGENTD_PROVIDER_TIMEOUT"))
	case d <= 0:
		return c, errors.New("must be positive")
	}
	c.Timeout = d
	return c, nil
}

// embeddingModelVar is the variable naming provider's embedding model.
func embeddingModelVar(provider string) string {
	return "AGENTD_EMBEDDING_MODEL_" + strings.ToUpper(provider)
}

// parseRetries reads the retry schedule of webhook deliveries: "" is the
// default schedule (nil), "none" no retry at all.
func parseRetries(raw string) ([]time.Duration, error) {
	if raw == "" {
		return nil, nil
	}
	if raw == "none" {
		return []time.Duration{}, nil
	}
	var out []time.Duration
	for _, part := range strings.Split(raw, ",") {
		d, err := positiveDuration(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", part, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// checkHTTPURL refuses what is not an absolute http(s) URL.
func checkHTTPURL(raw string) error {
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", raw)
	}
	return nil
}

// pool reads the PostgreSQL pool settings, reporting each bad one to check.
func (r rawConfig) pool(check func(env string, err error)) store.Pool {
	var p store.Pool
	count := func(env string, out *int) {
		n, err := strconv.Atoi(r.get(env))
		if err != nil || n < 1 {
			check(env, fmt.Errorf("%q is not a positive number", r.get(env)))
		}
		*out = n
	}
	duration := func(env string, out *time.Duration) {
		d, err := time.ParseDuration(r.get(env))
		if err != nil || d < 0 {
			check(env, fmt.Errorf("%q is not a duration such as 30s or 0", r.get(env)))
		}
		*out = d
	}
	count("AGENTD_DB_MAX_OPEN_CONNS", &p.MaxOpen)
	count("AGENTD_DB_MAX_IDLE_CONNS", &p.MaxIdle)
	duration("AGENTD_DB_CONN_MAX_LIFETIME", &p.MaxLifetime)
	duration("AGENTD_DB_CONN_MAX_IDLE_TIME", &p.MaxIdleTime)
	duration("AGENTD_DB_STATEMENT_TIMEOUT", &p.StatementTimeout)
	return p
}

// positiveDuration parses a duration that must be above zero.
func positiveDuration(raw string) (time.Duration, error) {
	d, err := time.ParseDuration(raw)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration such as 10s or 5m", raw)
	case d <= 0:
		return 0, errors.New("must be positive")
	}
	return d, nil
}

// checkAddr reports whether addr is a host:port listen address.
func checkAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%q is not a listen address such as :8080 or 127.0.0.1:8080", addr)
	}
	return nil
}

// checkMetricsAddr checks the metrics listen address, which must differ
// from the API's unless either picks a free port.
func checkMetricsAddr(addr, apiAddr string) error {
	if err := checkAddr(addr); err != nil {
		return err
	}
	if sameAddr(addr, apiAddr) {
		return errors.New("must differ from the API address; leave it empty to serve /metrics on the API listener")
	}
	return nil
}

// checkPprofAddr checks the profiling listen address, which must differ
// from the API's and the metrics' (profiles are never served to API clients).
func checkPprofAddr(addr, apiAddr, metricsAddr string) error {
	if err := checkAddr(addr); err != nil {
		return err
	}
	if sameAddr(addr, apiAddr) || sameAddr(addr, metricsAddr) {
		return errors.New("must differ from the API and metrics addresses")
	}
	return nil
}

// sameAddr reports whether two listen addresses would clash: equal, and not
// both picking a free port.
func sameAddr(a, b string) bool {
	_, port, _ := net.SplitHostPort(a)
	return a == b && port != "0"
}

// checkPublicURL validates an absolute http(s) URL and returns it without
// a trailing slash; "" stays "".
func checkPublicURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an absolute http(s) URL such as https://agents.example.com/v1", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// checkProvider reports whether p is a supported provider.
func checkProvider(p string) error {
	for _, known := range llm.Providers {
		if p == known {
			return nil
		}
	}
	return fmt.Errorf("%q is not a provider; use one of %s", p, strings.Join(llm.Providers, ", "))
}

// checkModel checks a default model name.
func checkModel(m string) error {
	if m == "" || len([]rune(m)) > maxModelName {
		return fmt.Errorf("must be 1 to %d characters", maxModelName)
	}
	return nil
}

// dbFlag defines --db with its default from AGENTD_DB, else ./agentd.db.
func dbFlag(fs *flag.FlagSet, e *env) *string {
	def := strings.TrimSpace(e.getenv("AGENTD_DB"))
	if def == "" {
		def = defaultDB
	}
	return fs.String("db", def, "database: a SQLite file `path` or a postgres:// URL (env AGENTD_DB)")
}

// secretKeyEnv names the key that encrypts agents' secrets, and
// secretKeysEnv a list of keys, newest first, for rotating it without an
// outage: the newest encrypts, each one decrypts.
const (
	secretKeyEnv  = "AGENTD_SECRET_KEY"
	secretKeysEnv = "AGENTD_SECRET_KEYS"
)

// secretKeysUsage documents the list of keys.
const secretKeysUsage = "comma-separated `keys`, newest first, each as for --secret-key: the newest encrypts, " +
	"every one decrypts, so a key rotates without an outage (replaces AGENTD_SECRET_KEY)"

// secretKeyUsage documents the key; the flag exists for scripts, the
// environment keeps it out of process lists.
const secretKeyUsage = "`key` encrypting agents' settings.secrets: 32 random bytes in standard base64, " +
	"as 'openssl rand -base64 32' prints (prefer the environment: flags show in process lists)"

// secretKeyFlag defines --secret-key with its default from
// AGENTD_SECRET_KEYS, else AGENTD_SECRET_KEY; it takes a list of keys too.
func secretKeyFlag(fs *flag.FlagSet, e *env) *string {
	p := new(string)
	*p = strings.TrimSpace(e.getenv(secretKeysEnv))
	if *p == "" {
		*p = strings.TrimSpace(e.getenv(secretKeyEnv))
	}
	fs.Var(secretString{p}, "secret-key", secretKeyUsage+" (env "+secretKeyEnv+")")
	return p
}

// secretString is a string flag that never shows its value: help prints a
// flag's default, which may come from the environment.
type secretString struct{ p *string }

// String hides the value.
func (secretString) String() string { return "" }

// Set stores v.
func (s secretString) Set(v string) error {
	*s.p = v
	return nil
}

// parseSecretKey returns the Box of an encoded key or a comma-separated
// list of keys, newest first; nil for "". Its errors never quote a key.
func parseSecretKey(encoded string) (*secretbox.Box, error) {
	if strings.TrimSpace(encoded) == "" {
		return nil, nil
	}
	box, err := secretbox.ParseKeys(encoded)
	if err != nil {
		return nil, fmt.Errorf("each key must be 32 bytes in standard base64, as 'openssl rand -base64 32' prints: %w", err)
	}
	return box, nil
}

// redactDSN returns dsn with any password replaced, for messages.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}

// loadPrices is the built-in price table with the file at path (none when
// path is "") over it. The file is read once, at start-up: a price changes
// with a restart, as every other setting does.
func loadPrices(path string) (price.Table, error) {
	if path == "" {
		return price.Builtin(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return price.Table{}, err
	}
	file, err := price.ParseFile(path, data)
	if err != nil {
		return price.Table{}, err
	}
	return price.Builtin().With(file), nil
}
