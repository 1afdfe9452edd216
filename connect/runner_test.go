package connect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
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

// nopTurner answers every turn with nothing; no run of it waits, so the
// methods of deciding are never called (the embedded nil would panic).
type nopTurner struct{ Turner }

func (nopTurner) Reply(context.Context, turn.Input) (turn.Result, error) { return turn.Result{}, nil }

type harness struct {
	st    *store.Store
	sup   *Supervisor
	p     *fakePlatform
	agent domain.Agent
	owner string
}

// start runs a supervisor of the fake platform on a SQLite store, with one
// agent connected to it, until the test ends.
func start(t *testing.T, cfg Config) *harness {
	ctx := context.Background()
	st := storetest.Open(t, storetest.SQLiteDSN(t))
	acct := storetest.Account(t, st, "acme")
	a, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: map[string]json.RawMessage{
		"name": json.RawMessage(`"Ada"`), "clients": json.RawMessage(`["fake"]`)}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{st: st, p: newFakePlatform(), agent: a, owner: "replica-a"}
	cfg.Stores, cfg.Turner, cfg.Platforms, cfg.Owner = Stores{st.Agents(), st.Connections(), st.Conversations(), st.Runs()}, nopTurner{}, []Platform{h.p}, h.owner
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

// A message is answered under the lease, once: a runner that lost the
// lease may not answer what it took, the lease's next holder answers it,
// and only the first answering of a message may send.
func TestAnsweringRefusesOnceTheLeaseIsLost(t *testing.T) {
	h := start(t, Config{LeaseTTL: time.Minute, RenewEvery: 50 * time.Millisecond})
	ctx := context.Background()
	c := h.p.conn(t)
	m := Inbound{ID: "m1", Chat: "c"}
	if err := c.Take(ctx, "", []Inbound{m}, func(ctx context.Context, _ Inbound) { <-ctx.Done() }); err != nil {
		t.Fatal(err)
	}
	// Another acquisition of the lease (here by the same owner, which
	// needs no expiry) gives it a new epoch: c's lease is gone.
	if _, ok, err := h.st.Connections().AcquireLease(ctx, h.agent.ID, "fake", h.owner, time.Minute); err != nil || !ok {
		t.Fatalf("take the lease: %v %v", ok, err)
	}
	if _, _, ok := c.answering(ctx, m); ok {
		t.Fatal("answering under a lost lease")
	}
	// The runner notices at its next renewal, ends the Run and connects
	// again under a lease of its own.
	c2 := h.p.conn(t)
	send, done, ok := c2.answering(ctx, m)
	if !ok {
		t.Fatal("the new holder may not answer the message taken before")
	}
	done()
	if send.Err() == nil {
		t.Error("the send context outlives its done")
	}
	if _, _, ok := c2.answering(ctx, m); ok {
		t.Fatal("a message answered twice")
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
		err := c.Take(ctx, "", []Inbound{{ID: "1", Chat: "chat"}}, func(ctx context.Context, _ Inbound) {
			defer close(finished)
			select {
			case <-release:
			case <-ctx.Done():
			}
		})
		if err != nil {
			return err
		}
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

// steadyPlatform connects at once and stays connected; with fail set it
// never connects (a replica that cannot reach the platform).
type steadyPlatform struct {
	fail  bool
	taken chan Inbound // the messages its handler answered, when set
}

func (p *steadyPlatform) Name() string          { return "steady" }
func (p *steadyPlatform) Credentials() []string { return nil }

func (p *steadyPlatform) Run(ctx context.Context, c *Conn) error {
	if p.fail {
		return errDropped
	}
	if err := c.MarkConnected(ctx); err != nil {
		return err
	}
	if err := c.Resume(ctx, p.answer); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func (p *steadyPlatform) answer(_ context.Context, m Inbound) {
	if p.taken != nil {
		p.taken <- m
	}
}

// countingStore counts the lease writes of the supervisors using it, and
// the agents they read whole (and notes which).
type countingStore struct {
	store.Agents
	store.Connections
	acquires, renewals, wholeReads atomic.Int64
	readWhole                      sync.Map // agent id → true
}

func (s *countingStore) AgentsByID(ctx context.Context, ids []string) ([]domain.Agent, error) {
	s.wholeReads.Add(int64(len(ids)))
	for _, id := range ids {
		s.readWhole.Store(id, true)
	}
	return s.Agents.AgentsByID(ctx, ids)
}

func (s *countingStore) AcquireLease(ctx context.Context, agentID, platform, owner string, ttl time.Duration) (domain.Lease, bool, error) {
	s.acquires.Add(1)
	return s.Connections.AcquireLease(ctx, agentID, platform, owner, ttl)
}

func (s *countingStore) RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]domain.HeldLease, error) {
	s.renewals.Add(1)
	return s.Connections.RenewLeases(ctx, owner, ttl)
}

// fleet is a store with agents on the steady platform and the replicas
// running them.
type fleet struct {
	t             *testing.T
	st            *countingStore
	conversations store.Conversations
	runs          store.Runs
	agents        []domain.Agent
	sups          map[string]*Supervisor
	stops         map[string]func()
}

func newFleet(t *testing.T, agents int) *fleet {
	ctx := context.Background()
	st := storetest.Open(t, storetest.SQLiteDSN(t))
	acct := storetest.Account(t, st, "acme")
	f := &fleet{t: t, st: &countingStore{Agents: st.Agents(), Connections: st.Connections()}, conversations: st.Conversations(), runs: st.Runs(), sups: map[string]*Supervisor{}, stops: map[string]func(){}}
	for i := range agents {
		a, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: map[string]json.RawMessage{
			"name": json.RawMessage(fmt.Sprintf(`"bot %d"`, i)), "clients": json.RawMessage(`["steady"]`)}}, -1)
		if err != nil {
			t.Fatal(err)
		}
		f.agents = append(f.agents, a)
	}
	t.Cleanup(func() {
		for _, stop := range f.stops {
			stop()
		}
	})
	return f
}

// start runs replica owner with platform p.
func (f *fleet) start(owner string, p *steadyPlatform, cfg Config) {
	cfg.Stores, cfg.Turner, cfg.Platforms, cfg.Owner = Stores{f.st, f.st, f.conversations, f.runs}, nopTurner{}, []Platform{p}, owner
	cfg.ChangeEvery = 20 * time.Millisecond
	cfg.RenewEvery = cmp.Or(cfg.RenewEvery, 30*time.Millisecond)
	cfg.LeaseTTL = cmp.Or(cfg.LeaseTTL, time.Second)
	cfg.MinBackoff, cfg.MaxBackoff = time.Millisecond, 5*time.Millisecond
	sup, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = sup.Run(ctx) }()
	f.sups[owner] = sup
	f.stops[owner] = func() { cancel(); <-done }
}

func (f *fleet) stop(owner string) {
	f.stops[owner]()
	delete(f.stops, owner)
	delete(f.sups, owner)
}

// held returns how many connections each running replica holds.
func (f *fleet) held() map[string]int {
	out := map[string]int{}
	for owner, s := range f.sups {
		out[owner] = len(s.runnersWhere(func(r *runner) bool { return r.holds() }))
	}
	return out
}

func (f *fleet) holding(want map[string]int) func() error {
	return func() error {
		if got := f.held(); !maps.Equal(got, want) {
			return fmt.Errorf("held %v; want %v", got, want)
		}
		return nil
	}
}

// Replicas share the connections: none takes more than its share while
// another has room, a replica that stops leaves its share to the others,
// and one that joins takes its share back.
func TestLeasesSpreadAcrossReplicas(t *testing.T) {
	f := newFleet(t, 12)
	f.start("a", &steadyPlatform{}, Config{})
	f.start("b", &steadyPlatform{}, Config{})
	testutil.Eventually(t, "an even split", f.holding(map[string]int{"a": 6, "b": 6}))
	f.stop("b")
	testutil.Eventually(t, "b's share taken over", f.holding(map[string]int{"a": 12}))
	f.start("c", &steadyPlatform{}, Config{})
	testutil.Eventually(t, "c takes its share back", f.holding(map[string]int{"a": 6, "c": 6}))
}

// A changed agent is read whole once, not again by every later check whose
// window still holds its change.
func TestChangedAgentIsReadWholeOnce(t *testing.T) {
	f := newFleet(t, 3)
	f.start("a", &steadyPlatform{}, Config{})
	testutil.Eventually(t, "every connection held", f.holding(map[string]int{"a": 3}))
	time.Sleep(3 * time.Second) // past the overlap of the checks' windows
	before := f.st.wholeReads.Load()
	a := f.agents[0]
	_, _, err := f.st.UpdateAgent(context.Background(), a.AccountID, a.ID,
		map[string]json.RawMessage{"bio": json.RawMessage(`"changed"`)}, nil, domain.AnyVersion)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // about 150 checks, each window holding the change for 2s
	if got := f.st.wholeReads.Load() - before; got != 1 {
		t.Errorf("the changed agent was read whole %d times, want 1", got)
	}
}

// Agents that name none of the supervisor's platforms are not read whole,
// on the first full sync or when they change, unless they hold a runner
// to stop: an agent that comes to name a platform is started, and stopped
// when it names it no more.
func TestAgentsThatConnectToNothingAreNotReadWhole(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, 2)
	quiet, err := f.st.CreateAgent(ctx, domain.Agent{AccountID: f.agents[0].AccountID,
		Fields: map[string]json.RawMessage{"name": json.RawMessage(`"quiet"`)}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	f.start("a", &steadyPlatform{}, Config{})
	testutil.Eventually(t, "every connection held", f.holding(map[string]int{"a": 2}))
	setClients := func(clients string) {
		t.Helper()
		_, _, err := f.st.UpdateAgent(ctx, quiet.AccountID, quiet.ID,
			map[string]json.RawMessage{"clients": json.RawMessage(clients)}, nil, domain.AnyVersion)
		if err != nil {
			t.Fatal(err)
		}
	}
	setClients(`["elsewhere"]`)
	time.Sleep(200 * time.Millisecond) // some ten checks
	if _, read := f.st.readWhole.Load(quiet.ID); read {
		t.Error("the agent that connects to nothing was read whole")
	}
	setClients(`["steady"]`)
	testutil.Eventually(t, "the agent that came to connect held", f.holding(map[string]int{"a": 3}))
	setClients(`[]`)
	testutil.Eventually(t, "the agent that stopped connecting let go", f.holding(map[string]int{"a": 2}))
}

// Full resyncs keep the runners of agents that still exist running, and
// stop the runner of one deleted since.
func TestFullResyncsStopOnlyDeletedAgents(t *testing.T) {
	f := newFleet(t, 3)
	f.start("a", &steadyPlatform{}, Config{ResyncEvery: 30 * time.Millisecond})
	testutil.Eventually(t, "every connection held", f.holding(map[string]int{"a": 3}))
	time.Sleep(300 * time.Millisecond) // some ten full resyncs
	// One acquisition each: a runner that a resync stopped would have
	// released its lease, and its successor acquired it again.
	if got, n := f.held(), f.st.acquires.Load(); got["a"] != 3 || n != 3 {
		t.Fatalf("after full resyncs: held %v after %d acquisitions; want 3 held after 3", got, n)
	}
	gone := f.agents[0]
	if _, err := f.st.DeleteAgent(context.Background(), gone.AccountID, gone.ID, domain.AnyVersion); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the deleted agent's runner stopped", f.holding(map[string]int{"a": 2}))
}

// A replica renews all its leases in one statement per interval, and in
// a steady state no replica tries to acquire anything: the lease writes do
// not grow with the number of connections.
func TestLeaseWritesDoNotGrowWithConnections(t *testing.T) {
	f := newFleet(t, 40)
	f.start("a", &steadyPlatform{}, Config{})
	f.start("b", &steadyPlatform{}, Config{})
	// The first replica up takes all; the second takes its share of them
	// (22: an even split and 10%).
	testutil.Eventually(t, "a steady split", func() error {
		held := f.held()
		if held["a"]+held["b"] != 40 || held["a"] > 22 || held["b"] > 22 {
			return fmt.Errorf("held %v", held)
		}
		return nil
	})
	time.Sleep(2 * time.Second) // the replica that handed leases over has cooled off
	acquires, renewals := f.st.acquires.Load(), f.st.renewals.Load()
	time.Sleep(20 * 30 * time.Millisecond) // 20 intervals
	if n := f.st.acquires.Load() - acquires; n != 0 {
		t.Errorf("%d acquisitions in a steady state; want none", n)
	}
	// Two replicas, one statement each per interval (with slack for a
	// slow scheduler); a renewal per connection would be 40 per interval.
	if n := f.st.renewals.Load() - renewals; n < 10 || n > 60 {
		t.Errorf("%d renewal statements in 20 intervals of 2 replicas; want about 40", n)
	}
}

// A replica that cannot reach the platform gives the lease up after
// GiveUpAfter failed attempts, and one that can takes it over.
func TestUnreachablePlatformMovesTheConnection(t *testing.T) {
	f := newFleet(t, 1)
	f.start("broken", &steadyPlatform{fail: true}, Config{GiveUpAfter: 3})
	testutil.Eventually(t, "the lease given up", func() error {
		conns, err := f.st.ListConnections(context.Background(), f.agents[0].AccountID, f.agents[0].ID)
		if err != nil || len(conns) != 1 {
			return fmt.Errorf("connections %+v, %v", conns, err)
		}
		return testutil.Equal("reason", conns[0].Reason, unreachableReason)
	})
	f.start("healthy", &steadyPlatform{}, Config{})
	testutil.Eventually(t, "the healthy replica connected", f.holding(map[string]int{"broken": 0, "healthy": 1}))
}

// Messages a runner took and did not finish (its replica died) are
// answered by the lease's next holder.
func TestInboxOfADeadRunnerIsTakenOver(t *testing.T) {
	f := newFleet(t, 1)
	ctx := context.Background()
	a := f.agents[0]
	dead, ok, err := f.st.AcquireLease(ctx, a.ID, "steady", "dead", 50*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if _, err := f.st.TakePlatformMessages(ctx, dead, "", []domain.InboxMessage{{ID: "m1", Chat: "c", Payload: []byte(`{}`), ReceivedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	p := &steadyPlatform{taken: make(chan Inbound, 1)}
	f.start("alive", p, Config{})
	select {
	case m := <-p.taken:
		if m.ID != "m1" {
			t.Fatalf("answered %+v; want m1", m)
		}
	case <-time.After(testutil.Timeout):
		t.Fatal("the dead runner's message was not answered")
	}
	testutil.Eventually(t, "the message finished", func() error {
		pending, err := f.st.PendingPlatformMessages(ctx, dead)
		if !errors.Is(err, domain.ErrLeaseLost) {
			return fmt.Errorf("the dead lease still reads the inbox: %v %v", pending, err)
		}
		return nil
	})
}

// A lease-bound write that finds the lease lost ends the lease's work at
// once, without waiting for the next renewal: a turn in progress is
// cancelled before it can answer under a lease another runner holds.
func TestLostLeaseEndsTheWorkAtOnce(t *testing.T) {
	h := start(t, Config{LeaseTTL: time.Minute, RenewEvery: time.Minute})
	ctx := context.Background()
	c := h.p.conn(t)
	ended, started := make(chan struct{}), make(chan struct{})
	err := c.Take(ctx, "", []Inbound{{ID: "1", Chat: "a"}}, func(ctx context.Context, _ Inbound) {
		close(started)
		<-ctx.Done()
		close(ended)
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, ok, err := h.st.Connections().AcquireLease(ctx, h.agent.ID, "fake", "replica-b", -time.Second); err != nil || ok {
		t.Fatalf("a live lease was taken: %v %v", ok, err)
	}
	if _, ok, err := h.st.Connections().AcquireLease(ctx, h.agent.ID, "fake", h.owner, time.Minute); err != nil || !ok {
		t.Fatalf("take the lease: %v %v", ok, err)
	}
	if err := c.Take(ctx, "", []Inbound{{ID: "2", Chat: "b"}}, nil); !errors.Is(err, domain.ErrLeaseLost) {
		t.Fatalf("take under a lost lease: %v; want ErrLeaseLost", err)
	}
	select {
	case <-ended:
	case <-time.After(testutil.Timeout):
		t.Fatal("the work under the lost lease went on")
	}
}
