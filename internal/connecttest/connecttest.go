// Package connecttest is the fixture of the platforms' tests: a store with
// an account, supervisors of one platform on it, agents of that platform,
// and a Turner that echoes. connect's own tests cannot import it (it
// imports connect); the helpers that are not about connections live in
// internal/testutil. It lives outside connect/ because it runs a real
// store: connect and its platforms compile without the ORM, their test
// support included.
package connecttest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
	"github.com/prometheus/client_golang/prometheus"
)

// Fixture runs supervisors of one platform on a SQLite store holding the
// account "acme". Set its fields before Start or Run.
type Fixture struct {
	T       *testing.T
	Store   *store.Store
	Account domain.Account
	Turner  *EchoTurner

	// Client is the platform's name in an agent's clients ("telegram").
	Client string
	// Platform returns a new Platform for each supervisor.
	Platform func() connect.Platform
	// Live, when set, is the platform test server's own sign that a bot
	// is connected, checked by WaitConnected with the stored state; it
	// returns what it saw when it is not.
	Live func() error
	// Config is each supervisor's configuration: short leases, renewals
	// and back-offs. Run sets Turner, Owner and Platforms, and Stores
	// unless they are set (wrappers of the fixture's store's faces).
	Config connect.Config

	stop func()
}

// NewFixture returns a Fixture of the platform client on a fresh SQLite
// store; platform makes the Platform each supervisor runs.
func NewFixture(t *testing.T, client string, platform func() connect.Platform) *Fixture {
	t.Helper()
	st := storetest.Open(t, storetest.SQLiteDSN(t))
	return &Fixture{T: t, Store: st, Account: storetest.Account(t, st, "acme"), Turner: &EchoTurner{},
		Client: client, Platform: platform,
		Config: connect.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond,
			ChangeEvery: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}}
}

// Stores are the faces of st a supervisor needs.
func Stores(st *store.Store) connect.Stores {
	return connect.Stores{Agents: st.Agents(), Connections: st.Connections(), Conversations: st.Conversations(), Runs: st.Runs()}
}

// Run runs a supervisor as owner on st (f.Config.Stores, else the
// fixture's store, when nil) until stop is called or the test ends; stop
// waits for it to end.
func (f *Fixture) Run(st *store.Store, owner string) (stop func()) {
	f.T.Helper()
	cfg := f.Config
	if st != nil {
		cfg.Stores = Stores(st)
	} else if cfg.Stores.Agents == nil {
		cfg.Stores = Stores(f.Store)
	}
	cfg.Turner, cfg.Owner, cfg.Platforms = f.Turner, owner, []connect.Platform{f.Platform()}
	sup, err := connect.New(cfg)
	if err != nil {
		f.T.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = sup.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	f.T.Cleanup(stop)
	return stop
}

// Start runs the fixture's supervisor, as "replica-a", until Stop or the
// end of the test.
func (f *Fixture) Start() {
	f.T.Helper()
	f.stop = f.Run(nil, "replica-a")
}

// Stop ends the supervisor Start runs and waits for it.
func (f *Fixture) Stop() { f.stop() }

// Restart stops the supervisor Start runs and starts another.
func (f *Fixture) Restart() {
	f.T.Helper()
	f.Stop()
	f.Start()
}

// Agent creates the agent "Ada" of the account, on the fixture's
// platform, with settings.
func (f *Fixture) Agent(settings map[string]any) domain.Agent {
	f.T.Helper()
	fields := map[string]json.RawMessage{"name": JSON("Ada"), "clients": JSON([]string{f.Client}), "settings": JSON(settings)}
	a, err := f.Store.Agents().CreateAgent(context.Background(), domain.Agent{AccountID: f.Account.ID, Fields: fields}, -1)
	if err != nil {
		f.T.Fatal(err)
	}
	return a
}

// State returns the stored connection of agent a; the zero Connection
// before it has one.
func (f *Fixture) State(a domain.Agent) domain.Connection {
	conns, err := f.Store.Connections().ListConnections(context.Background(), f.Account.ID, a.ID)
	if err != nil || len(conns) == 0 {
		return domain.Connection{}
	}
	return conns[0]
}

// InState is a check that agent a's connection is stored in state, with
// a reason holding each of words.
func (f *Fixture) InState(a domain.Agent, state domain.ConnState, words ...string) func() error {
	return func() error {
		c := f.State(a)
		ok := c.State == state
		for _, w := range words {
			ok = ok && strings.Contains(c.Reason, w)
		}
		if !ok {
			return fmt.Errorf("state %q (%s)", c.State, c.Reason)
		}
		return nil
	}
}

// Counted is a check that agent a's connection counted in messages in
// and out out.
func (f *Fixture) Counted(a domain.Agent, in, out int64) func() error {
	return func() error {
		if c := f.State(a); c.MessagesIn != in || c.MessagesOut != out {
			return fmt.Errorf("%d in, %d out", c.MessagesIn, c.MessagesOut)
		}
		return nil
	}
}

// WaitConnected waits until agent a's connection is stored as connected
// and Live, when set, holds.
func (f *Fixture) WaitConnected(a domain.Agent) {
	f.T.Helper()
	connected := f.InState(a, domain.ConnConnected)
	testutil.Eventually(f.T, "connected", func() error {
		if err := connected(); err != nil || f.Live == nil {
			return err
		}
		return f.Live()
	})
}

// Changes subscribes a webhook of the account to connection.changed and
// returns a function listing the changes emitted since, as "state:
// reason", oldest first. Nothing else delivers them: it claims them.
func (f *Fixture) Changes() func() []string {
	f.T.Helper()
	ctx := context.Background()
	_, err := f.Store.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: f.Account.ID, URL: "https://hooks.example.com/",
		Events: []string{string(domain.EventConnectionChanged)}, Enabled: true})
	if err != nil {
		f.T.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{} // by event id, which sorts as they were made
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		jobs, err := f.Store.Webhooks().ClaimDeliveries(ctx, 1000, time.Hour)
		if err != nil {
			f.T.Error(err)
		}
		for _, j := range jobs {
			var ev struct {
				Data struct{ State, Reason string }
			}
			if err := json.Unmarshal(j.Body, &ev); err != nil {
				f.T.Error(err)
			}
			seen[j.EventID] = ev.Data.State + ": " + ev.Data.Reason
		}
		ids := slices.Sorted(maps.Keys(seen))
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = seen[id]
		}
		return out
	}
}

// EchoTurner answers a message with "re: <text>", or with Text when set,
// and a post request (X's scheduled posts) with "post <n>: lovely tea".
// When Block is set, each turn first waits for it to be closed; when Err
// is set, each turn fails with it. Set its fields before the supervisor
// starts. No run of it waits for decisions,
// so nothing calls the methods of deciding (the embedded nil Turner).
type EchoTurner struct {
	connect.Turner
	Text  string
	Block chan struct{}
	Err   error

	mu    sync.Mutex
	reqs  []turn.Input
	posts int
}

// Reply answers in, and keeps it.
func (e *EchoTurner) Reply(ctx context.Context, in turn.Input) (turn.Result, error) {
	if e.Block != nil {
		select {
		case <-e.Block:
		case <-ctx.Done():
			return turn.Result{}, ctx.Err()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs = append(e.reqs, in)
	switch {
	case e.Err != nil:
		return turn.Result{}, e.Err
	case in.Shape.Post:
		e.posts++
		return turn.Result{Text: fmt.Sprintf("post %d: lovely tea", e.posts)}, nil
	case e.Text != "":
		return turn.Result{Text: e.Text}, nil
	}
	return turn.Result{Text: "re: " + in.Text}, nil
}

// Requests returns the turns asked for so far, oldest first.
func (e *EchoTurner) Requests() []turn.Input {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]turn.Input(nil), e.reqs...)
}

// Clock is a settable clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to now.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// Dropped reads agentd_connection_messages_dropped_total for platform and
// reason (a connect.Drop constant) from g (the Registerer given to
// connect.New); 0 when it has no such series.
func Dropped(t testing.TB, g prometheus.Gatherer, platform, reason string) float64 {
	t.Helper()
	return testutil.Counter(t, g, "agentd_connection_messages_dropped_total", "platform", platform, "reason", reason)
}

// JSON encodes v, which must encode.
func JSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
