package connect

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, storetest.IgnoreStatementCache) }

// fakePlatform hands each Run's Conn to the test, then does what the test
// sends on next, or waits for its context.
type fakePlatform struct {
	conns chan *Conn
	next  chan func(context.Context, *Conn) error
}

func newFakePlatform() *fakePlatform {
	return &fakePlatform{conns: make(chan *Conn), next: make(chan func(context.Context, *Conn) error)}
}

func (p *fakePlatform) Name() string          { return "fake" }
func (p *fakePlatform) Credentials() []string { return nil }

func (p *fakePlatform) Run(ctx context.Context, c *Conn) error {
	select {
	case p.conns <- c:
	case <-ctx.Done():
		return nil
	}
	select {
	case f := <-p.next:
		return f(ctx, c)
	case <-ctx.Done():
		return nil
	}
}

// conn waits for the platform's next Run.
func (p *fakePlatform) conn(t *testing.T) *Conn {
	t.Helper()
	select {
	case c := <-p.conns:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the platform was not run")
		return nil
	}
}

// do makes the current Run do f and return its error.
func (p *fakePlatform) do(t *testing.T, f func(context.Context, *Conn) error) {
	t.Helper()
	select {
	case p.next <- f:
	case <-time.After(10 * time.Second):
		t.Fatal("no Run to act")
	}
}

var errDropped = errors.New("the connection dropped")

func drop(context.Context, *Conn) error { return errDropped }

type nopTurner struct{}

func (nopTurner) Reply(context.Context, turn.Input) (turn.Result, error) { return turn.Result{}, nil }

type harness struct {
	st    *store.Store
	sup   *Supervisor
	p     *fakePlatform
	agent store.Agent
	owner string
}

// start runs a supervisor of the fake platform on a SQLite store, with one
// agent connected to it, until the test ends.
func start(t *testing.T, cfg Config) *harness {
	ctx := context.Background()
	st := storetest.Open(t, storetest.SQLiteDSN(t))
	acct := storetest.Account(t, st, "acme")
	a, err := st.CreateAgent(ctx, store.Agent{AccountID: acct.ID, Fields: map[string]json.RawMessage{
		"name": json.RawMessage(`"Ada"`), "clients": json.RawMessage(`["fake"]`)}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{st: st, p: newFakePlatform(), agent: a, owner: "replica-a"}
	cfg.Store, cfg.Turner, cfg.Platforms, cfg.Owner = st, nopTurner{}, []Platform{h.p}, h.owner
	cfg.ChangeEvery = 50 * time.Millisecond
	if h.sup, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = h.sup.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func TestBackoffDoublesToTheCapAndStartsOverAfterAHealthyConnection(t *testing.T) {
	b := backoff{min: time.Second, max: 8 * time.Second}
	var got []time.Duration
	for _, held := range []time.Duration{0, 0, 0, 0, 0, 8 * time.Second, 9 * time.Second, 0} {
		got = append(got, b.next(held))
	}
	// A connection held exactly the cap is no proof of health; one held
	// longer is.
	want := []time.Duration{1, 2, 4, 8, 8, 8, 1, 2}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(got, want) {
		t.Fatalf("waits %v; want %v", got, want)
	}
}

func TestRunnerBackoffResetsAfterAConnectionHeld(t *testing.T) {
	logs := testutil.NewLogs()
	h := start(t, Config{Logger: slog.New(logs), MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	for range 4 {
		h.p.conn(t)
		h.p.do(t, drop)
	}
	h.p.conn(t)
	h.p.do(t, func(ctx context.Context, c *Conn) error {
		if err := c.Connected(ctx, "bot-1", "ada_bot"); err != nil {
			return err
		}
		time.Sleep(80 * time.Millisecond) // connected for longer than MaxBackoff
		return errDropped
	})
	h.p.conn(t)
	h.p.do(t, drop)
	h.p.conn(t) // the sixth wait is logged before this Run starts
	ms := time.Millisecond
	var got []time.Duration
	for _, r := range logs.Records("connection dropped; reconnecting") {
		got = append(got, r.Attrs["after"].Duration())
	}
	if want := []time.Duration{10 * ms, 20 * ms, 40 * ms, 40 * ms, 10 * ms, 20 * ms}; !slices.Equal(got, want) {
		t.Fatalf("waits %v; want %v", got, want)
	}
}

func TestGuardRefusesOnceTheLeaseIsLost(t *testing.T) {
	h := start(t, Config{LeaseTTL: time.Minute, RenewEvery: 50 * time.Millisecond})
	ctx := context.Background()
	c := h.p.conn(t)
	if err := c.Guard(ctx); err != nil {
		t.Fatalf("guard under the lease: %v", err)
	}
	// Another acquisition of the lease (here by the same owner, which
	// needs no expiry) gives it a new epoch: c's lease is gone.
	if _, ok, err := h.st.AcquireLease(ctx, h.agent.ID, "fake", h.owner, time.Minute); err != nil || !ok {
		t.Fatalf("take the lease: %v %v", ok, err)
	}
	if err := c.Guard(ctx); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("guard after the lease was lost: %v; want ErrLeaseLost", err)
	}
	// The runner notices at its next renewal, ends the Run and connects
	// again under a lease of its own.
	c2 := h.p.conn(t)
	if err := c2.Guard(ctx); err != nil {
		t.Fatalf("guard under the new lease: %v", err)
	}
	if err := c.Guard(ctx); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the old connection's guard: %v; want ErrLeaseLost", err)
	}
}

func TestSubmitDropsAndCountsOverflow(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := start(t, Config{QueueSize: 2, Registerer: reg})
	c := h.p.conn(t)
	release := make(chan struct{})
	defer close(release)
	block := func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	if !c.Submit("a", block) || !c.Submit("b", block) {
		t.Fatal("jobs within the queue refused")
	}
	if c.Submit("a", block) {
		t.Fatal("a job beyond the queue accepted")
	}
	if n := testutil.Counter(t, reg, "agentd_connection_messages_dropped_total", "platform", "fake"); n != 1 {
		t.Fatalf("dropped counter %v; want 1", n)
	}
}

// TestReconnectDoesNotWaitForTheQueue: after a connection drops, the
// runner reconnects at once while a job of the dropped session still
// runs; the job finishes on the new session's watch. (A gateway kept down
// until the queue drained lost every message sent meanwhile.)
func TestReconnectDoesNotWaitForTheQueue(t *testing.T) {
	h := start(t, Config{MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	h.p.conn(t)
	release, finished := make(chan struct{}), make(chan struct{})
	h.p.do(t, func(ctx context.Context, c *Conn) error {
		c.Submit("chat", func(ctx context.Context) {
			defer close(finished)
			select {
			case <-release:
			case <-ctx.Done():
			}
		})
		return errDropped // the gateway dropped while a turn was running
	})
	select {
	case <-h.p.conns:
	case <-time.After(testutil.Timeout):
		t.Fatal("no reconnection while a job of the dropped session ran")
	}
	close(release)
	select {
	case <-finished:
	case <-time.After(testutil.Timeout):
		t.Fatal("the job of the dropped session did not finish")
	}
}
