package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"go.uber.org/goleak"
)

// listening is what serve writes to stderr once its listener is bound.
var listening = regexp.MustCompile(`listening on (http://\S+)\n`)

// instance is one `agentd serve` running in this process.
type instance struct {
	base           string // http://127.0.0.1:PORT
	stdout, stderr *testutil.SyncBuffer
	cancel         context.CancelFunc
	done           chan error
	stopped        sync.Once
}

// boot starts `agentd serve` with env and args and waits until it listens.
func boot(t *testing.T, env map[string]string, args ...string) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{stdout: &testutil.SyncBuffer{}, stderr: &testutil.SyncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- runEnv(ctx, append([]string{"serve"}, args...), mapEnv(env), in.stdout, in.stderr) }()
	t.Cleanup(func() { in.stop(t) })
	testutil.Eventually(t, "serve listening", func() error {
		if m := listening.FindStringSubmatch(in.stderr.String()); m != nil {
			in.base = m[1]
			return nil
		}
		select {
		case err := <-in.done:
			in.done <- err
			t.Fatalf("serve ended before listening: %v\nstderr: %s", err, in.stderr)
		default:
		}
		return fmt.Errorf("stderr %q", in.stderr)
	})
	return in
}

// stop cancels serve, as SIGTERM does, and checks that it ends cleanly;
// later calls do nothing.
func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.stopped.Do(func() {
		in.cancel()
		select {
		case err := <-in.done:
			if err != nil {
				t.Errorf("serve ended with %v\nstderr: %s", err, in.stderr)
			}
		case <-time.After(40 * time.Second):
			t.Errorf("serve did not stop within 40s")
		}
	})
}

func TestServeEndToEnd(t *testing.T) {
	// Registered first, so it runs last, after every other cleanup.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, storetest.IgnoreStatementCache) })
	storetest.Backends(t, endToEnd)
}

// endToEnd boots serve on db and walks the whole API over real HTTP, with
// keys made by the CLI, then stops and restarts it.
func endToEnd(t *testing.T, db string) {
	openai := llmtest.NewOpenAI(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL, "AGENTD_PROVIDER_TIMEOUT": "5s"}
	in := boot(t, env, "--addr", "127.0.0.1:0", "--db", db)

	bootKey := keyFrom(t, in.stdout.String())
	if !strings.Contains(in.stderr.String(), "shown only once") {
		t.Errorf("no bootstrap note on stderr: %s", in.stderr)
	}
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c := &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 20 * time.Second}, contract: loadContract(t)}

	checkProbes(t, c)
	cliKey := keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "default").stdout)
	readKey := keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "default", "--scope", "read", "--expires", "1d").stdout)

	id := walkAgentLifecycle(t, c, in.base, cliKey, readKey, bootKey)
	if got := openai.Count(); got != 2 {
		t.Errorf("the provider got %d requests, want 2 (one reply, one stream)", got)
	}

	// A key revoked by the CLI, another process, is refused within the
	// serving process's cache bound (the margin absorbs a loaded machine).
	mustAgentd(t, db, "keys", "revoke", cliKey[:store.KeyPrefixLen])
	var r result
	testutil.Within(t, "the revoked key refused", store.AuthCacheTTL+5*time.Second, func() error {
		if r = c.do("GET", "/v1/agents", cliKey, nil); r.status == 200 {
			time.Sleep(100 * time.Millisecond) // the account's rate limit counts every try
			return errors.New("still accepted")
		}
		return nil
	})
	expect(t, "revoked key", r, 401, "UNAUTHORIZED")
	expect(t, "deleted agent", c.do("GET", "/v1/agents/"+id, bootKey, nil), 404, "AGENT_NOT_FOUND")

	// SIGTERM-like stop, then a restart on the same database: no new
	// bootstrap key, and the first one still works.
	transport.CloseIdleConnections()
	in.stop(t)
	if !strings.Contains(in.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop logged: %s", in.stderr)
	}
	again := boot(t, env, "--addr", "127.0.0.1:0", "--db", db)
	if again.stdout.String() != "" {
		t.Errorf("second start printed %q; the bootstrap key is printed once", again.stdout)
	}
	c.base = again.base
	expect(t, "bootstrap key after restart", c.do("GET", "/v1/agents", bootKey, nil), 200, "")
	transport.CloseIdleConnections()
	again.stop(t)
}

// checkProbes checks the unauthenticated endpoints and the error envelope
// outside the operations.
func checkProbes(t *testing.T, c *client) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		expect(t, path, c.do("GET", path, "", nil), 200, "")
	}
	if r := c.do("GET", "/metrics", "", nil); r.status != 200 || !bytes.Contains(r.body, []byte("go_goroutines")) {
		t.Errorf("/metrics: %d, Go collector missing", r.status)
	}
	expect(t, "no key", c.do("GET", "/v1/agents", "", nil), 401, "UNAUTHORIZED")
	expect(t, "malformed key", c.do("GET", "/v1/agents", "agk_nope", nil), 401, "UNAUTHORIZED")
	expect(t, "unknown path", c.do("GET", "/v1/nothing-here", "", nil), 404, "NOT_FOUND")
}

// walkAgentLifecycle creates, lists, gets, messages, patches and deletes an
// agent, and returns its id.
func walkAgentLifecycle(t *testing.T, c *client, base, writeKey, readKey, otherWriteKey string) string {
	t.Helper()
	body := map[string]any{
		"name": "Trading Assistant", "bio": "Expert in DeFi protocols", "modelProvider": "openai",
		"clients": []string{"discord"}, "personality": map[string]any{"tone": "friendly"},
	}
	expect(t, "create with a read key", c.do("POST", "/v1/agents", readKey, body), 403, "INSUFFICIENT_PERMISSIONS")
	r := c.do("POST", "/v1/agents", writeKey, body)
	expect(t, "create", r, 201, "")
	created := r.data(t)
	id, _ := created["id"].(string)
	if !strings.HasPrefix(id, "agent_") || created["status"] != "active" || created["apiEndpoint"] != base+"/v1/agents/"+id {
		t.Errorf("created %v; want an agent_ id, active, apiEndpoint under %s/v1", created, base)
	}
	if r.header.Get("X-RateLimit-Limit") == "" || r.header.Get("X-RateLimit-Remaining") == "" {
		t.Errorf("no rate-limit headers: %v", r.header)
	}

	r = c.do("GET", "/v1/agents?page=1&limit=10&sortBy=name&order=asc&status=active", readKey, nil)
	expect(t, "list", r, 200, "")
	list := r.data(t)
	agents, _ := list["agents"].([]any)
	want := map[string]any{"currentPage": 1.0, "totalPages": 1.0, "totalItems": 1.0, "itemsPerPage": 10.0}
	if len(agents) != 1 || !sameJSON(list["pagination"], want) {
		t.Errorf("list: %s", r.body)
	}

	r = c.do("GET", "/v1/agents/"+id, otherWriteKey, nil)
	expect(t, "get", r, 200, "")
	got := r.data(t)
	if got["name"] != "Trading Assistant" || got["model"] != llm.DefaultModels["openai"] || !sameJSON(got["bio"], []any{"Expert in DeFi protocols"}) {
		t.Errorf("get: %s", r.body)
	}

	talkToAgent(t, c, id, writeKey)

	r = c.do("PATCH", "/v1/agents/"+id, writeKey, map[string]any{"status": "inactive", "goals": []string{"Be brief"}})
	expect(t, "patch", r, 200, "")
	if changes := r.data(t)["changes"]; !sameJSON(changes, []any{"goals", "status"}) {
		t.Errorf("patch changes = %v, want [goals status]", changes)
	}
	expect(t, "message to an inactive agent", c.do("POST", "/v1/agents/"+id+"/messages", writeKey, map[string]any{"text": "Hi"}), 503, "AGENT_UNAVAILABLE")

	r = c.do("DELETE", "/v1/agents/"+id, writeKey, nil)
	expect(t, "delete", r, 200, "")
	if d := r.data(t); d["id"] != id || !strings.Contains(d["message"].(string), "Trading Assistant") {
		t.Errorf("delete: %s", r.body)
	}
	return id
}

// talkToAgent sends one message and streams one reply.
func talkToAgent(t *testing.T, c *client, id, key string) {
	t.Helper()
	r := c.do("POST", "/v1/agents/"+id+"/messages", key, map[string]any{"text": "Hello?", "userId": "user_1"})
	expect(t, "send message", r, 200, "")
	reply := r.data(t)
	if reply["response"] != "Hello from the test server." || reply["agentId"] != id || reply["userId"] != "user_1" {
		t.Errorf("send message: %s", r.body)
	}

	r = c.do("POST", "/v1/agents/"+id+"/messages/stream", key, map[string]any{"text": "And again?", "userId": "user_1"})
	expect(t, "stream", r, 200, "")
	var text strings.Builder
	events := sseEvents(t, r.body)
	for i, raw := range events {
		var ev map[string]any
		_ = json.Unmarshal(raw, &ev)
		switch {
		case ev["type"] == "start" && i == 0:
		case ev["type"] == "token":
			text.WriteString(ev["content"].(string))
		case ev["type"] == "done" && i == len(events)-1:
		default:
			t.Errorf("event %d of %d: %s", i, len(events), raw)
		}
	}
	if text.String() != "Hello from the test server." {
		t.Errorf("streamed %q", text.String())
	}
}

// pprofListening is what serve writes to stderr for a pprof listener.
var pprofListening = regexp.MustCompile(`pprof on (http://\S+/debug/pprof/)\n`)

func TestPprofOnlyOnItsOwnListener(t *testing.T) {
	in := boot(t, map[string]string{"AGENTD_PPROF_ADDR": "127.0.0.1:0"}, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	var m []string
	testutil.Eventually(t, "the pprof address on stderr", func() error {
		if m = pprofListening.FindStringSubmatch(in.stderr.String()); m == nil { // announced right after the API
			return fmt.Errorf("stderr %q", in.stderr)
		}
		return nil
	})
	get := func(url string) int {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(m[1] + "heap"); code != http.StatusOK {
		t.Errorf("heap profile on the pprof listener: %d", code)
	}
	if code := get(in.base + "/debug/pprof/heap"); code != http.StatusNotFound {
		t.Errorf("heap profile on the API listener: %d, want 404", code)
	}
}

// TestServeSpeaksHTTP2WithoutTLS: a client speaking HTTP/2 with prior
// knowledge (no TLS, as behind a proxy that ends it) sends and streams
// messages, one connection for all of them.
func TestServeSpeaksHTTP2WithoutTLS(t *testing.T) {
	openai := llmtest.NewOpenAI(t)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL},
		"--addr", "127.0.0.1:0", "--db", storetest.SQLiteDSN(t))
	key := keyFrom(t, in.stdout.String())
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	transport := &http.Transport{Protocols: protocols}
	defer transport.CloseIdleConnections()
	c := &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 20 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Over h2"})
	expect(t, "create", r, 201, "")
	talkToAgent(t, c, r.data(t)["id"].(string), key)

	res, err := c.http.Get(in.base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", res.Proto)
	}
}
