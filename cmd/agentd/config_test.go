package main

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/price"
	"github.com/agentd/agentd/store"
)

// loadConfig builds the serve configuration from env and flag arguments as
// `agentd serve` does.
func loadConfig(t testing.TB, env map[string]string, args ...string) (config, error) {
	t.Helper()
	fs := newFlagSet("serve")
	raw := defineSettings(fs, mapEnv(env))
	if _, err := parseArgs(fs, args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return raw.config()
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.DB != "./agentd.db" || c.PublicURL != "" || c.RedisURL != "" || c.MetricsAddr != "" || c.PprofAddr != "" {
		t.Errorf("defaults: %+v", c)
	}
	if c.DefaultProvider != "openai" || c.LLM.Timeout != 60*time.Second || c.LogLevel != slog.LevelInfo {
		t.Errorf("defaults: provider %s, timeout %s, level %s", c.DefaultProvider, c.LLM.Timeout, c.LogLevel)
	}
	for p, m := range llm.DefaultModels {
		if c.Models[p] != m {
			t.Errorf("default model of %s = %q, want %q", p, c.Models[p], m)
		}
	}
	if c.LLM.OpenAI != (llm.ProviderConfig{}) || c.LLM.Ollama != (llm.ProviderConfig{}) {
		t.Errorf("providers configured without any variable: %+v", c.LLM)
	}
}

// TestConfigTracing: traces are off unless an OTLP endpoint is set, and
// content stays out unless AGENTD_TRACE_CONTENT asks for it.
func TestConfigTracing(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(t, nil)
	if err != nil || c.Tracing.Enabled() || c.TraceContent {
		t.Errorf("defaults: tracing %+v content %v (%v)", c.Tracing, c.TraceContent, err)
	}
	c, err = loadConfig(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "AGENTD_TRACE_CONTENT": "true"})
	if err != nil || !c.Tracing.Enabled() || c.Tracing.Endpoint != "http://collector:4318" || !c.TraceContent {
		t.Errorf("tracing %+v content %v (%v)", c.Tracing, c.TraceContent, err)
	}
	c, err = loadConfig(t, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c.example/v1/traces"})
	if err != nil || !c.Tracing.Enabled() {
		t.Errorf("traces endpoint alone: tracing %+v (%v)", c.Tracing, err)
	}
	for _, off := range []map[string]string{{"OTEL_SDK_DISABLED": "true"}, {"OTEL_TRACES_EXPORTER": "none"}} {
		off[otlpEndpointEnv] = "http://collector:4318"
		if c, err := loadConfig(t, off); err != nil || c.Tracing.Enabled() {
			t.Errorf("%v: tracing on (%v)", off, err)
		}
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"AGENTD_ADDR": "127.0.0.1:9000", "AGENTD_DB": "postgres://u:p@db/agentd",
		"AGENTD_PUBLIC_URL": "https://agents.example.com/v1/", "AGENTD_REDIS_URL": "redis://127.0.0.1:6379/2",
		"AGENTD_METRICS_ADDR": ":9090", "AGENTD_DEFAULT_PROVIDER": "anthropic",
		"AGENTD_MODEL_OPENAI": "gpt-4o", "AGENTD_MODEL_ANTHROPIC": "claude-sonnet-4", "AGENTD_MODEL_GROQ": "g",
		"AGENTD_MODEL_GOOGLE": "gm", "AGENTD_MODEL_OLLAMA": "qwen2.5",
		"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
		"ANTHROPIC_API_KEY": "sk-a", "ANTHROPIC_BASE_URL": "http://127.0.0.1:2/v1",
		"GROQ_API_KEY": "gsk", "GROQ_BASE_URL": "http://127.0.0.1:3/v1",
		"GOOGLE_API_KEY": "gk", "GOOGLE_BASE_URL": "http://127.0.0.1:4/v1",
		"OLLAMA_HOST": "127.0.0.1:11434", "AGENTD_PROVIDER_TIMEOUT": "2m", "AGENTD_LOG_LEVEL": "debug",
	}
	c, err := loadConfig(t, env)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"addr": {c.Addr, "127.0.0.1:9000"}, "db": {c.DB, "postgres://u:p@db/agentd"},
		"public url": {c.PublicURL, "https://agents.example.com/v1"}, "redis": {c.RedisURL, "redis://127.0.0.1:6379/2"},
		"metrics": {c.MetricsAddr, ":9090"}, "provider": {c.DefaultProvider, "anthropic"},
		"openai model": {c.Models["openai"], "gpt-4o"}, "anthropic model": {c.Models["anthropic"], "claude-sonnet-4"},
		"groq model": {c.Models["groq"], "g"}, "google model": {c.Models["google"], "gm"}, "ollama model": {c.Models["ollama"], "qwen2.5"},
		"openai":    {c.LLM.OpenAI.APIKey + " " + c.LLM.OpenAI.BaseURL, "sk-o http://127.0.0.1:1/v1"},
		"anthropic": {c.LLM.Anthropic.APIKey + " " + c.LLM.Anthropic.BaseURL, "sk-a http://127.0.0.1:2/v1"},
		"groq":      {c.LLM.Groq.APIKey + " " + c.LLM.Groq.BaseURL, "gsk http://127.0.0.1:3/v1"},
		"google":    {c.LLM.Google.APIKey + " " + c.LLM.Google.BaseURL, "gk http://127.0.0.1:4/v1"},
		"ollama":    {c.LLM.Ollama.BaseURL, "127.0.0.1:11434"},
		"timeout":   {c.LLM.Timeout.String(), "2m0s"}, "level": {c.LogLevel.String(), "DEBUG"},
	}
	for name, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", name, v[0], v[1])
		}
	}
}

func TestConfigFlagsWinOverEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AGENTD_ADDR": ":1111", "AGENTD_DB": "env.db", "AGENTD_DEFAULT_PROVIDER": "groq", "AGENTD_PROVIDER_TIMEOUT": "5s"}
	c, err := loadConfig(t, env, "--addr", "127.0.0.1:0", "--db=flag.db", "--default-provider", "ollama",
		"--provider-timeout", "90s", "--model-ollama", "phi3", "--log-level", "warn", "--public-url", "http://x.test/v1")
	if err != nil {
		t.Fatal(err)
	}
	pool := store.Pool{MaxOpen: 7, MaxIdle: 3, MaxLifetime: time.Hour, MaxIdleTime: 0, StatementTimeout: 5 * time.Second}
	if p, err := loadConfig(t, map[string]string{"AGENTD_DB_MAX_OPEN_CONNS": "7", "AGENTD_DB_STATEMENT_TIMEOUT": "5s", "AGENTD_DB_CONN_MAX_IDLE_TIME": "0"},
		"--db-max-idle-conns", "3", "--db-conn-max-lifetime", "1h"); err != nil || p.Pool != pool {
		t.Errorf("pool = %+v (%v), want %+v", p.Pool, err, pool)
	}
	if c.Addr != "127.0.0.1:0" || c.DB != "flag.db" || c.DefaultProvider != "ollama" || c.LLM.Timeout != 90*time.Second ||
		c.Models["ollama"] != "phi3" || c.LogLevel != slog.LevelWarn || c.PublicURL != "http://x.test/v1" {
		t.Errorf("flags did not win: %+v", c)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env: map[string]string{"AGENTD_DEFAULT_PROVIDER": "mistral"}, want: `--default-provider / AGENTD_DEFAULT_PROVIDER: "mistral" is not a provider; use one of openai, anthropic, groq, google, ollama`},
		{args: []string{"--default-provider", "OpenAI"}, want: "AGENTD_DEFAULT_PROVIDER"},
		{env: map[string]string{"AGENTD_PROVIDER_TIMEOUT": "60"}, want: "--provider-timeout / AGENTD_PROVIDER_TIMEOUT: \"60\" is not a duration"},
		{args: []string{"--provider-timeout", "-1s"}, want: "AGENTD_PROVIDER_TIMEOUT: must be positive"},
		{env: map[string]string{"AGENTD_LOG_LEVEL": "loud"}, want: "--log-level / AGENTD_LOG_LEVEL"},
		{args: []string{"--addr", "8080"}, want: "--addr / AGENTD_ADDR: \"8080\" is not a listen address"},
		{args: []string{"--addr", ":9000", "--metrics-addr", ":9000"}, want: "--metrics-addr / AGENTD_METRICS_ADDR: must differ"},
		{args: []string{"--metrics-addr", "nope"}, want: "AGENTD_METRICS_ADDR"},
		{args: []string{"--addr", ":9000", "--pprof-addr", ":9000"}, want: "--pprof-addr / AGENTD_PPROF_ADDR: must differ"},
		{args: []string{"--metrics-addr", ":9090", "--pprof-addr", ":9090"}, want: "--pprof-addr / AGENTD_PPROF_ADDR: must differ"},
		{env: map[string]string{"AGENTD_PPROF_ADDR": "nope"}, want: "AGENTD_PPROF_ADDR"},
		{args: []string{"--db", ""}, want: "--db / AGENTD_DB: must not be empty"},
		{args: []string{"--public-url", "localhost:8080/v1"}, want: "--public-url / AGENTD_PUBLIC_URL"},
		{args: []string{"--public-url", "ftp://x/v1"}, want: "AGENTD_PUBLIC_URL"},
		{args: []string{"--redis-url", "http://redis:6379"}, want: "--redis-url / AGENTD_REDIS_URL"},
		{args: []string{"--model-groq", ""}, want: "--model-groq / AGENTD_MODEL_GROQ: must be 1 to 200 characters"},
		{args: []string{"--model-openai", strings.Repeat("m", 201)}, want: "AGENTD_MODEL_OPENAI"},
		{env: map[string]string{"OPENAI_BASE_URL": "not a url"}, want: "OPENAI_BASE_URL"},
		{args: []string{"--db-max-open-conns", "0"}, want: "--db-max-open-conns / AGENTD_DB_MAX_OPEN_CONNS: \"0\" is not a positive number"},
		{env: map[string]string{"AGENTD_DB_STATEMENT_TIMEOUT": "soon"}, want: "AGENTD_DB_STATEMENT_TIMEOUT"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, want: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://c"}, want: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{args: []string{"--trace-content", "yes"}, want: "--trace-content / AGENTD_TRACE_CONTENT"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: "OTEL_EXPORTER_OTLP_PROTOCOL: \"grpc\" is not supported"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, want: "OTEL_TRACES_EXPORTER"},
		{env: map[string]string{"OTEL_SDK_DISABLED": "maybe"}, want: "OTEL_SDK_DISABLED"},
		{args: []string{"--prices", "/nonexistent/prices.json"}, want: "--prices / AGENTD_PRICES"},
	}
	for _, tt := range tests {
		_, err := loadConfig(t, tt.env, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("env %v args %v: error %v, want it to contain %q", tt.env, tt.args, err, tt.want)
		}
	}
}

// TestConfigPrices: AGENTD_PRICES adds to and replaces the built-in
// table; a bad file stops the start.
func TestConfigPrices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"ollama/llama3.2":{"input":0.5,"output":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"llama3.2":{"input":0.5,"output":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(t, nil)
	if _, priced := c.Prices.Lookup(llm.ProviderOllama, "llama3.2"); err != nil || priced {
		t.Errorf("defaults: ollama priced %v (%v)", priced, err)
	}
	for p, model := range llm.DefaultModels {
		if _, ok := c.Prices.Lookup(p, model); !ok && p != llm.ProviderOllama {
			t.Errorf("the default model of %s, %s, has no built-in price", p, model)
		}
	}
	c, err = loadConfig(t, map[string]string{"AGENTD_PRICES": good})
	if p, ok := c.Prices.Lookup(llm.ProviderOllama, "llama3.2"); err != nil || !ok || p != (price.Price{Input: 0.5, Output: 1}) {
		t.Errorf("with a file: %v %v (%v)", p, ok, err)
	}
	if _, err := loadConfig(t, nil, "--prices", bad); err == nil || !strings.Contains(err.Error(), "provider/model") {
		t.Errorf("a bad file: %v", err)
	}
}

func TestConfigReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	_, err := loadConfig(t, map[string]string{"AGENTD_DEFAULT_PROVIDER": "x", "AGENTD_LOG_LEVEL": "y"}, "--addr", "z")
	for _, want := range []string{"AGENTD_DEFAULT_PROVIDER", "AGENTD_LOG_LEVEL", "AGENTD_ADDR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestServeRejectsABadConfigurationAsUsage(t *testing.T) {
	t.Parallel()
	r := agentd(t, map[string]string{"AGENTD_DEFAULT_PROVIDER": "mistral"}, "serve", "--db", tempDB(t))
	if r.code() != exitUsage || !strings.Contains(r.err.Error(), "AGENTD_DEFAULT_PROVIDER") {
		t.Errorf("exit %d, err %v", r.code(), r.err)
	}
}

func TestPublicURL(t *testing.T) {
	t.Parallel()
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	tests := []struct {
		configured string
		addr       net.Addr
		want       string
	}{
		{"https://agents.example.com/v1", tcp("127.0.0.1:8080"), "https://agents.example.com/v1"},
		{"", tcp("0.0.0.0:8080"), "http://localhost:8080/v1"},
		{"", tcp("[::]:9000"), "http://localhost:9000/v1"},
		{"", tcp("127.0.0.1:41234"), "http://127.0.0.1:41234/v1"},
		{"", tcp("[::1]:5000"), "http://[::1]:5000/v1"},
	}
	for _, tt := range tests {
		if got := publicURL(tt.configured, tt.addr); got != tt.want {
			t.Errorf("publicURL(%q, %s) = %q, want %q", tt.configured, tt.addr, got, tt.want)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	if got := redactDSN("postgres://agentd:hunter2@db:5432/agentd"); strings.Contains(got, "hunter2") {
		t.Errorf("password shown: %s", got)
	}
	if got := redactDSN("./agentd.db"); got != "./agentd.db" {
		t.Errorf("SQLite path changed: %s", got)
	}
}
