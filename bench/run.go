package main

import (
	"bufio"
	"context"
	_ "embed" // agentBody
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store"
)

// agentBody is the ~1 KB agent every Create sends and every seeded agent
// holds (server's benchmarks send it too).
//
//go:embed agent.json
var agentBody []byte

// fixture is what the run seeds: keys and agent ids of its accounts.
type fixture struct {
	key      string   // the main account's write key
	ids      []string // the main account's agents
	smallKey []string // one key per concurrency, each account with o.small agents
	bigKey   string   // an account with o.big agents
	toolIDs  []string // agents of the main account with an action handler
}

// toolAgents is how many agents with a tool the main account holds.
const toolAgents = 20

// seedAgentd creates the accounts and agents through the store, before
// agentd starts: every account is enterprise with limits that never bind.
func seedAgentd(ctx context.Context, dsn string, o options) (fixture, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return fixture{}, err
	}
	defer st.Close()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(agentBody, &fields); err != nil {
		return fixture{}, err
	}
	account := func(name string, n int) (string, []string, error) {
		_, err := st.Accounts().CreateAccount(ctx, domain.Account{Name: name, Tier: domain.TierEnterprise,
			RPM: 1_000_000_000, EndpointMultiplier: 100_000_000, AgentQuota: 1_000_000_000})
		if err != nil {
			return "", nil, err
		}
		key, k, err := st.Accounts().CreateKey(ctx, name, domain.ScopeWrite, nil)
		if err != nil {
			return "", nil, err
		}
		ids := make([]string, n)
		for i := range ids {
			a, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: k.AccountID, Fields: fields}, -1)
			if err != nil {
				return "", nil, err
			}
			ids[i] = a.ID
		}
		return key, ids, nil
	}
	var f fixture
	if f.key, f.ids, err = account("bench", o.agents); err != nil {
		return f, err
	}
	if f.toolIDs, err = seedToolAgents(ctx, st, f.key, fields, o.handler); err != nil {
		return f, err
	}
	for i := range o.conns {
		key, _, err := account("small-"+strconv.Itoa(i), o.small)
		if err != nil {
			return f, err
		}
		f.smallKey = append(f.smallKey, key)
	}
	if f.bigKey, _, err = account("big", o.big); err != nil {
		return f, err
	}
	p, err := st.Accounts().Authenticate(ctx, f.key)
	if err != nil {
		return f, err
	}
	for i := range o.messages / 2 {
		id := f.ids[i%len(f.ids)]
		user := "seed-" + strconv.Itoa(i%50)
		_, _, err := st.Conversations().SaveExchange(ctx, p.Account.ID, id, domain.ConversationRef{UserID: user},
			domain.Message{UserID: user, Text: "hello there, how are you today?"},
			domain.Message{Text: "a short reply from the model", Model: "gpt-4o-mini", PromptTokens: 20, CompletionTokens: 6})
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

// seedToolAgents adds toolAgents agents whose action get_price calls
// handler to the account of key.
func seedToolAgents(ctx context.Context, st *store.Store, key string, fields map[string]json.RawMessage, handler string) ([]string, error) {
	p, err := st.Accounts().Authenticate(ctx, key)
	if err != nil {
		return nil, err
	}
	withTool := make(map[string]json.RawMessage, len(fields)+1)
	for k, v := range fields {
		withTool[k] = v
	}
	withTool["actions"] = json.RawMessage(`[{"name":"get_price","description":"Look up a price","examples":[],"handler":"` + handler + `"}]`)
	ids := make([]string, toolAgents)
	for i := range ids {
		a, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: p.Account.ID, Fields: withTool}, -1)
		if err != nil {
			return nil, err
		}
		ids[i] = a.ID
	}
	return ids, nil
}

// system is one server a workload measures.
type system struct {
	name string
	req  func(i int64) request
}

// workload is one row group of the report: systems measured alternately
// at each concurrency.
type workload struct {
	name    string
	systems []system
	// perConn picks a system's requests per concurrency index (Create on
	// small accounts uses a fresh account at each concurrency).
	perConn func(conn int) []system
	call    func(r request) call // how to time a request; nil = do
}

// point is one measured point of the report.
type point struct {
	workload, system string
	conns            int
	res              result
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "agentd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o.dir = dir
	pctx, stopServers := context.WithCancel(ctx)
	defer stopServers()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	serveOn(pctx, hl, http.HandlerFunc(actionHandler))
	o.handler = "http://" + hl.Addr().String() + "/action"
	// agentd's database and the floor's: files in dir, or fresh databases
	// on the PostgreSQL server, dropped when the run ends.
	dsn, floorDB := filepath.Join(dir, "agentd.db"), filepath.Join(dir, "floor.db")
	if o.db == "postgres" {
		for _, db := range []*string{&dsn, &floorDB} {
			name, drop, err := freshDatabase(ctx, o.recallPG)
			if err != nil {
				return fmt.Errorf("create a database on %s: %w", o.recallPG, err)
			}
			defer drop()
			*db = name
		}
	}
	logf("seeding agentd on %s: %d + %d×%d + %d agents, %d messages", o.db, o.agents, len(o.conns), o.small, o.big, o.messages)
	began := time.Now()
	fx, err := seedAgentd(ctx, dsn, o)
	if err != nil {
		return fmt.Errorf("seed agentd: %w", err)
	}
	logf("seeded in %s", time.Since(began).Round(time.Millisecond))

	prov := newProvider()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	serveOn(pctx, pl, prov)
	provURL := "http://" + pl.Addr().String() + "/v1"

	// The action handler listens on loopback.
	env := []string{"OPENAI_API_KEY=sk-bench", "OPENAI_BASE_URL=" + provURL, "AGENTD_LOG_LEVEL=error",
		"AGENTD_ALLOW_PRIVATE_NETWORKS=true"}
	var prof *profiler
	if o.profile != "" {
		prof = &profiler{dir: o.profile}
		if err := os.MkdirAll(prof.dir, 0o755); err != nil {
			return err
		}
		if prof.addr, err = freeAddr(); err != nil {
			return err
		}
		env = append(env, "AGENTD_PPROF_ADDR="+prof.addr)
	}
	agentd, err := start(ctx, env, o.agentd, "serve", "--addr", "127.0.0.1:0", "--db", dsn)
	if err != nil {
		return err
	}
	defer agentd.stop()
	// Every seeded agent names two platforms it has no credentials for.
	seeded := o.agents + toolAgents + len(o.conns)*o.small + o.big
	syncTook, err := awaitConnections(ctx, agentd.base, 2*seeded, 10*time.Minute)
	if err != nil {
		return err
	}
	logf("the connection supervisor's first sync took %s", syncTook.Round(time.Millisecond))
	if now, peak, err := agentd.rssKB(); err == nil {
		logf("agentd's RSS after the first sync: %.1f MB, peak %.1f MB", float64(now)/1024, float64(peak)/1024)
	}
	docBytes, err := getSize(ctx, agentd.base+"/v1/agents/"+fx.ids[0], fx.key)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	baseline, err := start(ctx, nil, self, "-serve", "baseline", "-doc-bytes", strconv.Itoa(docBytes))
	if err != nil {
		return err
	}
	defer baseline.stop()
	rep := &report{o: o, docBytes: docBytes, syncTook: syncTook}
	floorIDs, err := seedFloor(floorDB, docBytes, o, rep)
	if err != nil {
		return err
	}
	floor, err := start(ctx, nil, self, "-serve", "floor", "-floor-db", floorDB)
	if err != nil {
		return err
	}
	defer floor.stop()

	measure := func(ws ...workload) {
		for _, w := range ws {
			for ci, conns := range o.conns {
				systems := w.systems
				if w.perConn != nil {
					systems = w.perConn(ci)
				}
				for _, sys := range systems {
					fn := w.call
					if fn == nil {
						fn = func(r request) call {
							return func(ctx context.Context, c *http.Client, _ int64) (time.Duration, error) { return do(ctx, c, r) }
						}
					}
					profiled := func() {}
					if sys.name == "agentd" && conns == o.conns[len(o.conns)/2] {
						profiled = prof.during(ctx, w.name, o.warmup+o.dur)
					}
					res := load(ctx, conns, o.warmup, o.dur, func(ctx context.Context, c *http.Client, i int64) (time.Duration, error) {
						return fn(sys.req(i))(ctx, c, i)
					})
					profiled()
					rep.add(point{w.name, sys.name, conns, res})
					logf("%-22s %-9s %3d conns: %8.0f req/s  p50 %-9s p99 %-9s errors %d %v", w.name, sys.name, conns,
						res.rate(), ms(res.quantile(0.5)), ms(res.quantile(0.99)), res.errs, errText(res.firstErr))
				}
			}
		}
	}
	a := agentd.base + "/v1/agents"
	randomAgent := func() string { return fx.ids[rand.IntN(len(fx.ids))] }
	get := func(key, url string) request { return request{method: "GET", url: url, key: key, want: 200} }
	pages := (o.agents + 19) / 20
	measure(
		workload{name: "Get", systems: []system{
			{"agentd", func(int64) request { return get(fx.key, a+"/"+randomAgent()) }},
			{"baseline", func(int64) request { return get("", baseline.base+"/doc") }},
			{"floor", func(int64) request { return get("", floor.base+"/docs/"+floorIDs[rand.IntN(len(floorIDs))]) }},
		}},
		workload{name: "List page 1", systems: []system{{"agentd", func(int64) request { return get(fx.key, a+"?page=1") }}}},
		workload{name: fmt.Sprintf("List page %d", min(500, pages)), systems: []system{
			{"agentd", func(int64) request { return get(fx.key, a+"?page="+strconv.Itoa(min(500, pages))) }},
		}},
		workload{name: "List limit 100", systems: []system{
			{"agentd", func(int64) request { return get(fx.key, a+"?limit=100") }},
			{"floor", func(int64) request { return get("", floor.base+"/docs?limit=100") }},
		}},
		workload{name: "PATCH", systems: []system{{"agentd", func(i int64) request {
			return request{method: "PATCH", url: a + "/" + randomAgent(), key: fx.key, want: 200,
				body: []byte(`{"goals":["goal ` + strconv.FormatInt(i, 10) + `"]}`)}
		}}}},
		workload{name: "Send Message", systems: []system{
			{"agentd", func(i int64) request {
				return request{method: "POST", url: a + "/" + randomAgent() + "/messages", key: fx.key, want: 200,
					body: []byte(`{"text":"hello there","userId":"u` + strconv.FormatInt(i%1000, 10) + `"}`)}
			}},
			{"provider", func(int64) request {
				return request{method: "POST", url: provURL + "/chat/completions", want: 200,
					body: []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello there"}]}`)}
			}},
		}},
		workload{name: "Tool turn", systems: []system{
			{"agentd", func(i int64) request {
				return request{method: "POST", url: a + "/" + fx.toolIDs[rand.IntN(len(fx.toolIDs))] + "/messages", key: fx.key, want: 200,
					body: []byte(`{"text":"price of SOL?","userId":"t` + strconv.FormatInt(i%1000, 10) + `"}`)}
			}},
			{"handler", func(int64) request {
				return request{method: "POST", url: o.handler, want: 200, body: []byte(`{"type":"action.call","data":{"arguments":{"symbol":"SOL"}}}`)}
			}},
		}},
		workload{name: "Stream first token", call: streamCall(prov), systems: []system{{"agentd", func(i int64) request {
			return request{method: "POST", url: a + "/" + randomAgent() + "/messages/stream", key: fx.key, want: 200,
				body: []byte(`{"text":"` + markerPrefix + strconv.FormatInt(i, 10) + ` tell me a joke","userId":"s` + strconv.FormatInt(i%1000, 10) + `"}`)}
		}}}},
	)
	rep.rssKB, rep.rssPeakKB, err = agentd.rssKB()
	if err != nil {
		return err
	}
	prof.heap(ctx)
	createBody := func(key, url string) func(int64) request {
		return func(int64) request { return request{method: "POST", url: url, key: key, want: 201, body: agentBody} }
	}
	measure(workload{name: "Create", perConn: func(ci int) []system {
		return []system{
			{"agentd", createBody(fx.smallKey[ci], a)},
			{"agentd-big", createBody(fx.bigKey, a)},
			{"baseline", createBody("", baseline.base+"/doc")},
			{"floor", createBody("", floor.base+"/docs")},
		}
	}})
	_, rep.rssEndKB, _ = agentd.rssKB()
	if rep.recall, err = benchRecall(ctx, dir, o.recallPG); err != nil {
		return err
	}
	if o.withLeases {
		if rep.leases, err = benchLeases(ctx, dir, o.recallPG, o.leases); err != nil {
			return err
		}
	}
	return rep.write(os.Stdout)
}

// seedFloor creates and seeds the floor's database dsn, notes which
// database it is in rep, and returns the ids of the documents Get reads.
func seedFloor(dsn string, docBytes int, o options, rep *report) ([]string, error) {
	fl, err := openFloor(dsn)
	if err != nil {
		return nil, err
	}
	defer fl.close()
	if rep.database, err = fl.database(); err != nil {
		return nil, err
	}
	if o.db == "postgres" {
		if u, err := url.Parse(o.recallPG); err == nil {
			rep.database += " (" + u.Hostname() + ")"
		}
	}
	ids, err := fl.seed("a", fixedDocument(docBytes), o.agents)
	if err != nil {
		return nil, err
	}
	_, err = fl.seed("b", agentBody, o.small)
	return ids, err
}

// streamCall times a stream request from sending it to reading its first
// token event, and records how long after the provider sent that token it
// arrived (the time agentd adds to the first token).
func streamCall(p *provider) func(r request) call {
	return func(r request) call {
		return func(ctx context.Context, c *http.Client, _ int64) (time.Duration, error) {
			req, err := http.NewRequestWithContext(ctx, r.method, r.url, strings.NewReader(string(r.body)))
			if err != nil {
				return 0, err
			}
			req.Header.Set("Authorization", "Bearer "+r.key)
			req.Header.Set("Content-Type", "application/json")
			res, err := c.Do(req)
			if err != nil {
				return 0, err
			}
			defer res.Body.Close()
			if res.StatusCode != r.want {
				return 0, fmt.Errorf("stream: status %d", res.StatusCode)
			}
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"token"`) {
					got := time.Now()
					marker := string(r.body[len(`{"text":"`):])
					marker = marker[:strings.IndexByte(marker, ' ')]
					sent, ok := p.firstSent(marker)
					if !ok {
						return 0, fmt.Errorf("stream: the provider did not see %s", marker)
					}
					for sc.Scan() { // read the rest, so the connection is reused
					}
					return got.Sub(sent), sc.Err()
				}
			}
			return 0, fmt.Errorf("stream: no token event: %v", sc.Err())
		}
	}
}

// getSize returns the size of the body of a GET.
func getSize(ctx context.Context, url, key string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&raw); err != nil || res.StatusCode != 200 {
		return 0, fmt.Errorf("get agent: status %d: %v", res.StatusCode, err)
	}
	return len(raw), nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}
