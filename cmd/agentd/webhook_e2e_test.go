package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store/storetest"
)

// runMainEnv makes the test binary act as agentd itself, so tests can run
// it as a separate process and kill it with SIGKILL.
const runMainEnv = "AGENTD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// process is `agentd serve` running as a process of its own.
type process struct {
	cmd            *exec.Cmd
	base           string
	stdout, stderr *testutil.SyncBuffer
	done           chan struct{}
}

// webhookEnv has the workers reach the loopback receiver and retry fast;
// a 1s timeout makes a claim's lease 6s.
var webhookEnv = []string{runMainEnv + "=1", "AGENTD_WEBHOOK_ALLOW_PRIVATE=true",
	"AGENTD_WEBHOOK_RETRIES=200ms,200ms,200ms,200ms,200ms", "AGENTD_WEBHOOK_TIMEOUT=1s"}

// spawn starts serve on db in a new process, with env added to the
// webhook settings, and waits until it listens.
func spawn(t *testing.T, db string, env ...string) *process {
	t.Helper()
	p := &process{stdout: &testutil.SyncBuffer{}, stderr: &testutil.SyncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--db", db)
	p.cmd.Env = append(append(os.Environ(), webhookEnv...), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill(t) })
	testutil.Eventually(t, "serve listening", func() error {
		if m := listening.FindStringSubmatch(p.stderr.String()); m != nil {
			p.base = m[1]
			return nil
		}
		select {
		case <-p.done:
			t.Fatalf("serve ended before listening\nstderr: %s", p.stderr)
		default:
		}
		return fmt.Errorf("stderr %q", p.stderr)
	})
	return p
}

// kill ends the process with SIGKILL: no shutdown code runs.
func (p *process) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends the process with SIGTERM and waits for its clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		t.Errorf("serve did not stop within 40s")
	}
}

// hookReceiver counts the deliveries of each event and remembers the agent
// each agent.created is about. Until release is closed, it holds the
// first request (an attempt in flight), signals held, and never counts it.
type hookReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	byEvent  map[string]int
	agents   map[string]bool
	held     chan struct{}
	release  chan struct{}
	released sync.Once
}

func newHookReceiver(t *testing.T, hold bool) *hookReceiver {
	r := &hookReceiver{byEvent: map[string]int{}, agents: map[string]bool{}, held: make(chan struct{}), release: make(chan struct{})}
	if !hold {
		r.unhold()
	}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-r.release:
		default:
			// Held: the attempt in flight when its sender is killed. It
			// never counts, whatever the receiver notices of the kill.
			r.held <- struct{}{}
			<-r.release
			return
		}
		body, _ := io.ReadAll(req.Body)
		var ev struct {
			Data struct {
				Agent struct{ Name string } `json:"agent"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		r.mu.Lock()
		r.byEvent[req.Header.Get("webhook-id")]++
		r.agents[ev.Data.Agent.Name] = true
		r.mu.Unlock()
	}))
	t.Cleanup(func() { r.unhold(); r.Close() })
	return r
}

func (r *hookReceiver) unhold() { r.released.Do(func() { close(r.release) }) }

// sawAgents returns an error naming the first of names whose
// agent.created it has not counted.
func (r *hookReceiver) sawAgents(names ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if !r.agents[n] {
			return fmt.Errorf("no event of %s", n)
		}
	}
	return nil
}

func (r *hookReceiver) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.byEvent))
	for k, v := range r.byEvent {
		out[k] = v
	}
	return out
}

func newClient(t *testing.T, base string) *client {
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	return &client{t: t, base: base, http: &http.Client{Transport: transport, Timeout: 20 * time.Second}, contract: loadContract(t)}
}

// TestWebhooksSurviveSIGKILL kills agentd while a delivery is in flight,
// then right after a create commits; after a restart on the same database
// every committed event is delivered, and a rolled-back create never is.
func TestWebhooksSurviveSIGKILL(t *testing.T) {
	db := tempDB(t)
	rcv := newHookReceiver(t, true)
	first := spawn(t, db)
	key := keyFrom(t, first.stdout.String())
	c := newClient(t, first.base)
	expect(t, "create webhook", c.do("POST", "/v1/webhooks", key, map[string]any{"url": rcv.URL, "events": []string{"agent.created"}}), 201, "")
	expect(t, "create a1", c.do("POST", "/v1/agents", key, map[string]any{"name": "a1"}), 201, "")
	select {
	case <-rcv.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery of a1's event never started")
	}
	first.kill(t) // mid-attempt
	rcv.unhold()

	second := spawn(t, db)
	expect(t, "create a2", newClient(t, second.base).do("POST", "/v1/agents", key, map[string]any{"name": "a2"}), 201, "")
	second.kill(t) // right after the commit

	mustAgentd(t, db, "accounts", "update", "default", "--agent-quota", "2")
	third := spawn(t, db)
	expect(t, "create a3 over quota", newClient(t, third.base).do("POST", "/v1/agents", key, map[string]any{"name": "a3"}), 403, "INSUFFICIENT_QUOTA")
	testutil.Eventually(t, "the events of a1 and a2", func() error { return rcv.sawAgents("a1", "a2") })
	third.stop(t)
	if rcv.sawAgents("a3") == nil {
		t.Error("the rolled-back create of a3 was delivered")
	}
}

// TestTwoReplicasDeliverEachEventOnce runs two agentd processes on one
// PostgreSQL database: together they deliver every event, each once.
func TestTwoReplicasDeliverEachEventOnce(t *testing.T) {
	db := storetest.PostgresDSN(t)
	rcv := newHookReceiver(t, false)
	a := spawn(t, db)
	key := keyFrom(t, a.stdout.String())
	b := spawn(t, db)
	clients := []*client{newClient(t, a.base), newClient(t, b.base)}
	expect(t, "create webhook", clients[0].do("POST", "/v1/webhooks", key, map[string]any{"url": rcv.URL, "events": []string{"*"}}), 201, "")
	const agents = 20
	for i := range agents {
		expect(t, "create agent", clients[i%2].do("POST", "/v1/agents", key, map[string]any{"name": "r" + string(rune('a'+i))}), 201, "")
	}
	testutil.Eventually(t, "every event", func() error { return testutil.Equal("events", len(rcv.counts()), agents) })
	a.stop(t)
	b.stop(t)
	for id, n := range rcv.counts() {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
}
