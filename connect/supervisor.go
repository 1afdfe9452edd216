package connect

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Supervisor; zero durations take the defaults.
type Config struct {
	Stores    Stores
	Turner    Turner
	Platforms []Platform
	Logger    *slog.Logger
	// Registerer receives the connection metrics; nil registers none.
	Registerer prometheus.Registerer
	// Owner names this replica in leases; default host name + random suffix.
	Owner string

	// LeaseTTL is how long a lease lasts unrenewed (15s): a killed
	// replica's connections move to another within it.
	LeaseTTL time.Duration
	// RenewEvery is the gap between lease renewals (one statement for
	// all the replica's leases), and between looks for free connections
	// (3s).
	RenewEvery time.Duration
	// DrainTimeout bounds how long a stopping connection, which takes no
	// new messages, keeps its lease to finish the ones in hand (20s); what
	// is left then stays in its inbox for the next holder.
	DrainTimeout time.Duration
	// GiveUpAfter is how many connection attempts in a row may fail
	// before this replica releases the lease for another to try (5).
	GiveUpAfter int
	// AcquireBatch caps the leases one look for free connections tries to
	// take (1,000), so that a start with many connections spreads its
	// writes over a few rounds.
	AcquireBatch int
	// ChangeEvery is the gap between checks for changed agents (1s).
	ChangeEvery time.Duration
	// ResyncEvery is the gap between full reads of the agents, a safety
	// net for changes missed through clock skew (5m).
	ResyncEvery time.Duration
	// QueueSize caps the messages waiting or being answered per
	// connection (64); more wait in the connection's inbox, and pull
	// platforms stop fetching until there is room.
	QueueSize int
	// MinBackoff is the wait before reconnecting after a first failure
	// (1s, at most MaxBackoff); it doubles with each further failure.
	MinBackoff time.Duration
	// MaxBackoff caps the wait before reconnecting after a failure (30s).
	// A connection that stayed connected longer than it starts over at
	// MinBackoff when it drops.
	MaxBackoff time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.LeaseTTL, 15*time.Second)
	def(&c.RenewEvery, 3*time.Second)
	def(&c.ChangeEvery, time.Second)
	def(&c.ResyncEvery, 5*time.Minute)
	def(&c.MaxBackoff, 30*time.Second)
	def(&c.MinBackoff, min(time.Second, c.MaxBackoff))
	def(&c.DrainTimeout, 20*time.Second)
	c.MinBackoff = min(c.MinBackoff, c.MaxBackoff)
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	defInt(&c.QueueSize, 64)
	defInt(&c.GiveUpAfter, 5)
	defInt(&c.AcquireBatch, 1000)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		c.Owner = host + "-" + rand.Text()[:8]
	}
	return c
}

// Supervisor keeps one connection running for each (agent, platform) that
// should run: the platform is in the agent's clients and the agent is not
// inactive. Every replica runs one; the lease decides which replica's
// runner is connected, the others stand by.
type Supervisor struct {
	cfg     Config
	dropped *prometheus.CounterVec
	follows *followers

	mu      sync.Mutex
	runners map[runnerKey]*runner
	wake    chan struct{} // see poke
	applied applied
}

type runnerKey struct{ agentID, platform string }

// New returns a Supervisor; Run starts it.
func New(cfg Config) (*Supervisor, error) {
	cfg = cfg.withDefaults()
	st := cfg.Stores
	if st.Agents == nil || st.Connections == nil || st.Conversations == nil || st.Runs == nil || cfg.Turner == nil {
		return nil, errors.New("connect: Stores (all four) and Turner are required")
	}
	s := &Supervisor{cfg: cfg, runners: map[runnerKey]*runner{}, applied: applied{}, wake: make(chan struct{}, 1),
		follows: newFollowers(),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_connection_messages_dropped_total",
			Help: "Platform messages left unanswered on purpose, by reason: the agent was not answering, the user was over the rate limit or not allowed, an X thread reached its reply cap, or X's listing no longer reached them.",
		}, []string{"platform", "reason"})}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(s.dropped); err != nil {
			return nil, fmt.Errorf("connect: register metrics: %w", err)
		}
	}
	return s, nil
}

// Run supervises until ctx ends, then stops every connection (each
// finishes the messages in hand and releases its lease, so another
// replica takes over at once) and returns.
func (s *Supervisor) Run(ctx context.Context) error {
	stopBalancing := s.background(ctx, s.balancing)
	// The leases are renewed until every connection has drained.
	stopRenewing := s.background(context.WithoutCancel(ctx), s.renewing)
	defer func() {
		stopBalancing()
		s.stopAll()
		s.follows.stop()
		stopRenewing()
		s.leave(context.WithoutCancel(ctx))
	}()
	var since, lastFull time.Time
	change := time.NewTicker(s.cfg.ChangeEvery)
	defer change.Stop()
	for {
		start := time.Now()
		full := since.IsZero() || start.Sub(lastFull) >= s.cfg.ResyncEvery
		q := since
		if full {
			q = time.Time{}
		}
		if err := s.sync(ctx, q, full); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.cfg.Logger.Warn("connections: read changed agents", "error", err)
		} else {
			// Overlap the next window: updatedAt comes from the writing
			// replica's clock and a write may commit after it was stamped.
			since = start.Add(-s.cfg.ChangeEvery - 2*time.Second)
			s.applied.forgetBefore(since)
			if full {
				lastFull = start
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-change.C:
		}
	}
}

// background runs loop until ctx ends or the returned stop is called, which
// waits for it.
func (s *Supervisor) background(ctx context.Context, loop func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(ctx)
	}()
	return func() { cancel(); <-done }
}

// leave releases what leases this replica still holds (a release that ran
// out of time at the end of a drain), so that other replicas take them
// over at once, and forgets the replica.
func (s *Supervisor) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	if err := s.cfg.Stores.Connections.ReleaseLeases(ctx, s.cfg.Owner); err != nil {
		s.cfg.Logger.Warn("connections: release leases", "error", err)
	}
	if err := s.cfg.Stores.Connections.LeaveReplicas(ctx, s.cfg.Owner); err != nil {
		s.cfg.Logger.Warn("connections: leave replicas", "error", err)
	}
}

// syncPage is how many agents the supervisor reads at once, so that a full
// resync of a large service does not hold every agent in memory.
const syncPage = 500

// applied remembers the version of each agent a recent sync applied, so
// that the next syncs, whose windows overlap, read whole only the agents
// that changed again. Only Run's goroutine touches it.
type applied map[string]appliedVersion

type appliedVersion struct {
	version int64
	at      time.Time
}

// forgetBefore drops what was applied before t: agents changed before it
// fall out of the windows still to come.
func (a applied) forgetBefore(t time.Time) {
	for id, v := range a {
		if v.at.Before(t) {
			delete(a, id)
		}
	}
}

// sync brings the runners in line with the agents changed since since (all
// of them when full: then runners of agents no longer there are stopped).
// It reads ids, versions and clients first, and whole only the agents
// whose version it has not applied yet and that name one of its platforms
// or have a runner to stop: most agents of a large service connect to
// nothing, and reading each of them whole on every full resync was most of
// its time and of agentd's peak memory.
func (s *Supervisor) sync(ctx context.Context, since time.Time, full bool) error {
	// A full resync notes the agents that had a runner as it began and
	// crosses off each one it reads: those left were deleted. (A map of
	// every agent read was its largest share of memory.)
	var unseen map[string]bool
	if full {
		unseen = s.runnerAgents()
	}
	for after := (domain.AgentVersion{}); ; {
		page, err := s.cfg.Stores.Agents.AgentVersionsChangedSince(ctx, since, after, syncPage)
		if err != nil {
			return err
		}
		var stale []string
		for _, v := range page {
			delete(unseen, v.ID)
			switch a, ok := s.applied[v.ID]; {
			case ok && a.version == v.Version:
			case s.names(v) || s.running(v.ID):
				stale = append(stale, v.ID)
			case !full:
				s.applied[v.ID] = appliedVersion{v.Version, time.Now()}
			}
		}
		agents, err := s.cfg.Stores.Agents.AgentsByID(ctx, stale)
		if err != nil {
			return err
		}
		s.apply(ctx, agents, !full)
		if len(page) < syncPage {
			break
		}
		after = page[len(page)-1]
	}
	if !full {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, r := range s.runners {
		if unseen[key.agentID] {
			r.stop(errors.New("the agent was deleted"))
			delete(s.runners, key)
		}
	}
	return nil
}

// runnerAgents is the set of agents with a runner here.
func (s *Supervisor) runnerAgents() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	agents := make(map[string]bool, len(s.runners))
	for key := range s.runners {
		agents[key.agentID] = true
	}
	return agents
}

// names reports whether the clients of agent v name one of the
// supervisor's platforms (or cannot be read).
func (s *Supervisor) names(v domain.AgentVersion) bool {
	var clients []string
	if v.Clients != "" && json.Unmarshal([]byte(v.Clients), &clients) != nil {
		return true
	}
	return slices.ContainsFunc(s.cfg.Platforms, func(p Platform) bool { return slices.Contains(clients, p.Name()) })
}

// running reports whether agent agentID has a runner here.
func (s *Supervisor) running(agentID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.cfg.Platforms, func(p Platform) bool { return s.runners[runnerKey{agentID, p.Name()}] != nil })
}

// apply brings the runners in line with agents, remembering their
// versions when remember is set (a full resync's are not: it reads every
// agent, and the next windows only the changed ones).
func (s *Supervisor) apply(ctx context.Context, agents []domain.Agent, remember bool) {
	var idle []domain.IdleConnection
	now := time.Now()
	for _, a := range agents {
		if remember {
			s.applied[a.ID] = appliedVersion{a.Version, now}
		}
		for _, p := range s.cfg.Platforms {
			if c := s.applyOne(ctx, a, p); c != nil {
				idle = append(idle, *c)
			}
		}
	}
	if err := s.cfg.Stores.Connections.SetIdleConnections(ctx, idle); err != nil && ctx.Err() == nil {
		s.cfg.Logger.Warn("connections: store idle states", "error", err)
	}
}

// Why a runner stops when its connection is not over: a new runner takes
// its place, or the process ends.
var (
	errConfigChanged = errors.New("its configuration changed")
	errShuttingDown  = errors.New("the service is shutting down")
)

// applyOne starts, stops or restarts the connection of agent a to p. A
// connection whose credentials are missing gets no runner (an agent's
// clients often name platforms it has no token for, and a service may have
// thousands): applyOne returns its disabled state for the caller to store.
func (s *Supervisor) applyOne(ctx context.Context, a domain.Agent, p Platform) *domain.IdleConnection {
	key := runnerKey{a.ID, p.Name()}
	want, why := wanted(a, p.Name())
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.runners[key]
	if !want {
		if old != nil {
			old.stop(errors.New(why))
			delete(s.runners, key)
		}
		return nil
	}
	spec := s.specOf(a, p)
	if reason := missingCredentials(p, spec.secrets); spec.secretsErr == nil && reason != "" {
		if old != nil {
			old.stop(errors.New(reason))
			delete(s.runners, key)
		}
		return &domain.IdleConnection{AgentID: a.ID, Platform: p.Name(), State: domain.ConnDisabled, Reason: reason}
	}
	if old != nil && old.spec.fingerprint == spec.fingerprint && !old.finished() {
		return nil // status or unrelated members: each turn reads them afresh
	}
	if old != nil {
		old.stop(errConfigChanged)
	}
	s.runners[key] = newRunner(ctx, s, spec, old)
	s.poke()
	return nil
}

// forget stops and drops r, whose agent is gone, unless a newer runner
// took its place.
func (s *Supervisor) forget(r *runner) {
	r.stop(errors.New("the agent was deleted"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runners[r.key()] == r {
		delete(s.runners, r.key())
	}
}

// stopAll stops every runner and waits for them.
func (s *Supervisor) stopAll() {
	s.mu.Lock()
	runners := make([]*runner, 0, len(s.runners))
	for key, r := range s.runners {
		r.stop(errShuttingDown)
		runners = append(runners, r)
		delete(s.runners, key)
	}
	s.mu.Unlock()
	for _, r := range runners {
		<-r.done
	}
}

// wanted reports whether agent a should be connected to platform, and why
// not.
func wanted(a domain.Agent, platform string) (bool, string) {
	switch {
	case !slices.Contains(a.Fields.Clients(), platform):
		return false, "the platform was removed from the agent's clients"
	case a.Status == domain.StatusInactive:
		return false, "the agent is inactive"
	}
	return true, ""
}

// spec is what a runner connects with.
type spec struct {
	agent       domain.Agent
	platform    Platform
	settings    json.RawMessage
	secrets     domain.Secrets
	secretsErr  error
	fingerprint string // changes when the connection must reconnect
}

// specOf reads agent a's configuration for p: its settings.<platform>,
// its decrypted secrets and their fingerprint.
func (s *Supervisor) specOf(a domain.Agent, p Platform) spec {
	sp := spec{agent: a, platform: p}
	sp.settings = a.Fields.PlatformSettings(p.Name())
	sp.secrets, sp.secretsErr = s.cfg.Stores.Agents.Secrets(a)
	h := sha256.New()
	h.Write(sp.settings)
	for _, name := range p.Credentials() {
		fmt.Fprintf(h, "\x00%s=%s", name, sp.secrets.String(name))
	}
	fmt.Fprintf(h, "\x00%v", sp.secretsErr != nil)
	sp.fingerprint = hex.EncodeToString(h.Sum(nil))
	return sp
}
