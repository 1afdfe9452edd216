package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/recall"
	"github.com/agentd/agentd/tools"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/prometheus/client_golang/prometheus"
)

// harness is the real Echo stack over a real SQLite store and the providers'
// wire-format test servers.
type harness struct {
	t         testing.TB
	srv       *Server
	store     *store.Store
	openai    *llmtest.Server
	anthropic *llmtest.Server
	ollama    *llmtest.Server
	account   domain.Account
	writeKey  string
	readKey   string
	spec      *openapi3.T
	// model is the turns' provider client, swappable while the harness runs.
	model  *swapModel
	cfg    harnessConfig // as the harness was built
	router routers.Router
	// dsn, opts, tweakLLM and tweaks are what the harness was built
	// from: a replica of it is built from them again.
	dsn      string
	opts     []store.Option
	tweakLLM func(*llm.Config)
	tweaks   []func(*harnessConfig)
}

// harnessConfig is what a test may change before its harness boots: the
// server's Config and its turn service's.
type harnessConfig struct {
	Config
	Turn turn.Config
}

// newHarness boots a server; tweak adjusts its configuration before it is built.
func newHarness(t testing.TB, tweak ...func(*harnessConfig)) *harness {
	t.Helper()
	return newHarnessLLM(t, nil, tweak...)
}

// newHarnessLLM is newHarness with a say on the providers' configuration.
func newHarnessLLM(t testing.TB, tweakLLM func(*llm.Config), tweak ...func(*harnessConfig)) *harness {
	t.Helper()
	return newHarnessAt(t, storetest.SQLiteDSN(t), nil, tweakLLM, tweak...)
}

// newHarnessPostgres is newHarness on a fresh PostgreSQL database.
func newHarnessPostgres(t testing.TB, tweak ...func(*harnessConfig)) *harness {
	t.Helper()
	return newHarnessAt(t, storetest.PostgresDSN(t), nil, nil, tweak...)
}

// newHarnessAt boots a server on the database dsn, opened with opts.
func newHarnessAt(t testing.TB, dsn string, opts []store.Option, tweakLLM func(*llm.Config), tweak ...func(*harnessConfig)) *harness {
	t.Helper()
	st := storetest.Open(t, dsn, opts...)
	h := &harness{t: t, store: st, openai: llmtest.NewOpenAI(t), anthropic: llmtest.NewAnthropic(t), ollama: llmtest.NewOllama(t),
		dsn: dsn, opts: opts, tweakLLM: tweakLLM, tweaks: tweak}
	// Enterprise with generous limits, so tests that are not about limits
	// never meet one.
	h.account = h.newAccount("acme", domain.TierEnterprise)
	h.writeKey = h.newKey("acme", domain.ScopeWrite)
	h.readKey = h.newKey("acme", domain.ScopeRead)
	h.boot()
	var err error
	if h.spec, err = gen.GetSpec(); err != nil {
		t.Fatal(err)
	}
	if h.router, err = gorillamux.NewRouter(h.spec); err != nil {
		t.Fatal(err)
	}
	return h
}

// boot builds the harness's stack over h.store: the providers' client,
// recall, a turn service and the server.
func (h *harness) boot() {
	t := h.t
	t.Helper()
	st := h.store
	llmCfg := llm.Config{
		OpenAI:    llm.ProviderConfig{APIKey: "sk-test", BaseURL: h.openai.URL},
		Groq:      llm.ProviderConfig{APIKey: "gsk-test", BaseURL: h.openai.URL},
		Google:    llm.ProviderConfig{APIKey: "g-test", BaseURL: h.openai.URL},
		Anthropic: llm.ProviderConfig{APIKey: "sk-ant-test", BaseURL: h.anthropic.URL},
		Ollama:    llm.ProviderConfig{BaseURL: h.ollama.URL},
		Timeout:   5 * time.Second,
	}
	if h.tweakLLM != nil {
		h.tweakLLM(&llmCfg)
	}
	model := llm.New(llmCfg)
	memories := recall.New(st.Memories(), st.Knowledge(), model, nil)
	cfg := harnessConfig{
		Config: Config{Store: storesOf(st), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ServeMetrics: true, AllowPrivateNetworks: true,
			Registry: prometheus.NewRegistry(), ToolRules: agent.ToolRules{AllowPrivate: true}, Recall: memories},
		Turn: turn.Config{Stores: turnStoresOf(st), Model: model, Semaphore: limit.NewMemorySemaphore(), Tools: newToolbox(t), Recall: memories},
	}
	for _, f := range h.tweaks {
		f(&cfg)
	}
	h.model = &swapModel{}
	h.model.set(cfg.Turn.Model)
	cfg.Turn.Model, cfg.Turn.Registerer = h.model, cfg.Registry
	if cfg.Turn.Logger == nil {
		cfg.Turn.Logger = cfg.Logger
	}
	turns, err := turn.New(cfg.Turn)
	if err != nil {
		t.Fatalf("new turns: %v", err)
	}
	t.Cleanup(turns.Close)
	cfg.Turns = turns
	h.cfg = cfg
	h.srv = newServer(t, cfg.Config)
}

// otherReplica is another replica of the whole harness on its database: a
// store of its own, a turn service of its own (so runs of the two meet
// only in the database) and a server, reporting to t, with the same
// account, keys and provider test servers. Unlike replica, which shares
// the turn service, it is what a second agentd process is.
func (h *harness) otherReplica(t testing.TB) *harness {
	t.Helper()
	r := h.with(t)
	r.store = storetest.Open(t, h.dsn, h.opts...)
	r.boot()
	return r
}

// storesOf is st's faces, as cmd/agentd passes them.
func storesOf(st *store.Store) Stores {
	return Stores{Accounts: st.Accounts(), Idempotency: st.Idempotency(), Agents: st.Agents(),
		Conversations: st.Conversations(), Analytics: st.Analytics(), Memories: st.Memories(),
		Knowledge: st.Knowledge(), Connections: st.Connections(), Webhooks: st.Webhooks(),
		Tasks: st.Tasks(), Streams: st.Streams(), Runs: st.Runs(), Schedules: st.Schedules(),
		Responses: st.Responses()}
}

// turnStoresOf is st's faces a turn needs, as cmd/agentd passes them.
func turnStoresOf(st *store.Store) turn.Stores {
	return turn.Stores{Agents: st.Agents(), Conversations: st.Conversations(), Analytics: st.Analytics(), Runs: st.Runs(), Budgets: st.Analytics()}
}

// newServer is New(cfg), closed when the test ends: its streams stop
// with it.
func newServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return srv
}

// newToolbox is the tools of a harness (the memory tools are the turn's,
// from its Recall): handlers and MCP servers run on loopback in tests.
func newToolbox(t testing.TB) *tools.Service {
	box := tools.New(tools.Config{AllowPrivate: true, Timeout: 5 * time.Second})
	t.Cleanup(box.Close)
	return box
}

// swapModel is a turn.Model a test may replace while the harness runs.
type swapModel struct {
	mu    sync.Mutex
	model turn.Model
}

func (m *swapModel) set(model turn.Model) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.model = model
}

func (m *swapModel) get() turn.Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.model
}

func (m *swapModel) Generate(ctx context.Context, req llm.Request) (llm.Reply, error) {
	return m.get().Generate(ctx, req)
}

func (m *swapModel) Stream(ctx context.Context, req llm.Request, onToken func(string) error) (llm.Reply, error) {
	return m.get().Stream(ctx, req, onToken)
}

func (m *swapModel) Configured(provider, apiKey string) error {
	return m.get().Configured(provider, apiKey)
}

// with returns the harness reporting to t (a fuzz target's or a subtest's).
func (h *harness) with(t testing.TB) *harness {
	c := *h
	c.t = t
	return &c
}

func (h *harness) newAccount(name string, tier domain.Tier) domain.Account {
	h.t.Helper()
	a, err := h.store.Accounts().CreateAccount(context.Background(), domain.Account{Name: name, Tier: tier, RPM: 1 << 40, EndpointMultiplier: 1 << 30, AgentQuota: 1000})
	if err != nil {
		h.t.Fatalf("create account: %v", err)
	}
	return a
}

func (h *harness) newKey(account string, scope domain.Scope) string {
	h.t.Helper()
	key, _, err := h.store.Accounts().CreateKey(context.Background(), account, scope, nil)
	if err != nil {
		h.t.Fatalf("create key: %v", err)
	}
	return key
}

// response is what a test received.
type response struct {
	Code   int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a generic object.
func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object (%v): %s", err, r.Body)
	}
	return m
}

// Data returns the `data` member of a success body.
func (r response) Data(t testing.TB) map[string]any {
	t.Helper()
	m := r.JSON(t)
	if m["success"] != true {
		t.Fatalf("success = %v, body %s", m["success"], r.Body)
	}
	d, _ := m["data"].(map[string]any)
	return d
}

// ErrorCode returns error.code of an error body.
func (r response) ErrorCode(t testing.TB) string {
	t.Helper()
	m := r.JSON(t)
	if m["success"] != false {
		t.Fatalf("success = %v, body %s", m["success"], r.Body)
	}
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// Details returns error.details of an error body.
func (r response) Details(t testing.TB) map[string]any {
	t.Helper()
	e, _ := r.JSON(t)["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

// request describes one call.
type request struct {
	method, path, key string
	body              any // string = raw JSON; anything else is marshalled
	contentType       string
	header            map[string]string
}

// do sends req through the whole stack and validates the response against
// openapi.yaml.
func (h *harness) do(req request) response {
	h.t.Helper()
	httpReq := h.httpRequest(req)
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, httpReq)
	res := response{Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	h.validate(h.httpRequest(req), res)
	return res
}

func (h *harness) httpRequest(req request) *http.Request {
	h.t.Helper()
	var body io.Reader
	if req.body != nil {
		switch b := req.body.(type) {
		case string:
			body = strings.NewReader(b)
		case []byte:
			body = bytes.NewReader(b)
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				h.t.Fatal(err)
			}
			body = bytes.NewReader(raw)
		}
	}
	r := httptest.NewRequest(req.method, req.path, body)
	if req.body != nil {
		ct := req.contentType
		if ct == "" {
			ct = "application/json"
		}
		r.Header.Set("Content-Type", ct)
	}
	if req.key != "" {
		r.Header.Set("Authorization", "Bearer "+req.key)
	}
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	return r
}

// validate checks a response against the contract: the operation's
// response, headers included, when the request matches one, else the error
// envelope.
func (h *harness) validate(req *http.Request, res response) {
	h.t.Helper()
	route, params, err := h.router.FindRoute(req)
	if err != nil || res.Header.Get("Content-Type") == "text/event-stream" && route == nil {
		h.validateEnvelope(req, res)
		return
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		opts.ExcludeResponseBody = true
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 res.Code, Header: res.Header, Body: io.NopCloser(bytes.NewReader(res.Body)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		h.t.Errorf("response does not match openapi.yaml for %s %s (%d): %v\nbody: %s", req.Method, req.URL.Path, res.Code, err, res.Body)
	}
	if missing := undeclaredHeaders(route.Operation, res); len(missing) > 0 {
		h.t.Errorf("%s %s: the %d response carries %v, which openapi.yaml does not declare", req.Method, req.URL.Path, res.Code, missing)
	}
}

// validateEnvelope checks a response outside any operation (unknown path,
// wrong method) against the ErrorEnvelope schema, or on the OpenAI paths
// against OpenAIErrorResponse: the one exception to the envelope.
func (h *harness) validateEnvelope(req *http.Request, res response) {
	h.t.Helper()
	var v any
	if err := json.Unmarshal(res.Body, &v); err != nil {
		h.t.Errorf("body is not JSON: %s", res.Body)
		return
	}
	schema := "ErrorEnvelope"
	if openAIPath(req.URL.Path) {
		schema = "OpenAIErrorResponse"
	}
	if err := h.spec.Components.Schemas[schema].Value.VisitJSON(v); err != nil {
		h.t.Errorf("body is not an %s: %v\n%s", schema, err, res.Body)
	}
}

// createAgent creates an agent and returns its id.
func (h *harness) createAgent(body any) string {
	h.t.Helper()
	res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: body})
	if res.Code != http.StatusCreated {
		h.t.Fatalf("create agent: %d %s", res.Code, res.Body)
	}
	return res.Data(h.t)["id"].(string)
}

// webhookWithDelivery creates a webhook of the harness's account on url and
// queues a test delivery to it; it returns their ids.
func (h *harness) webhookWithDelivery(url string) [2]string {
	h.t.Helper()
	ctx := context.Background()
	w, err := h.store.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: h.account.ID, URL: url, Events: []string{"*"}, Enabled: true})
	if err != nil {
		h.t.Fatalf("create webhook: %v", err)
	}
	if err := h.store.Webhooks().TestWebhook(ctx, h.account.ID, w.ID); err != nil {
		h.t.Fatalf("test webhook: %v", err)
	}
	ds, _, err := h.store.Webhooks().ListDeliveries(ctx, h.account.ID, w.ID, domain.DeliveryQuery{})
	if err != nil || len(ds) != 1 {
		h.t.Fatalf("deliveries of a tested webhook: %v %v", ds, err)
	}
	return [2]string{w.ID, ds[0].ID}
}
