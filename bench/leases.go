package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/connect/telegram"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// leaseOptions are the knobs of the connection leases scenario.
type leaseOptions struct {
	agents      int           // agents, each with its own Telegram bot; 0 skips the scenario
	replicas    int           // supervisors, each on its own store handle
	window      time.Duration // the steady-state window after all are connected
	pollTimeout time.Duration // Telegram's long poll
	startLimit  time.Duration // how long to wait for all to be connected
	stopLimit   time.Duration // how long to wait for the replicas to stop
	backends    []string      // sqlite, postgres
	pgPool      int           // each replica's PostgreSQL pool (MaxOpen)
	// progressEvery is the gap between progress lines during start-up.
	progressEvery time.Duration
}

// leasePhase is what the replicas wrote in one phase of the run.
type leasePhase struct {
	took       time.Duration
	writes     writeTally   // all replicas
	perReplica []writeTally // by replica
	api        map[string]int64
}

// rate is calls per second over the phase.
func (p leasePhase) rate(calls int64) float64 {
	if p.took <= 0 {
		return 0
	}
	return float64(calls) / p.took.Seconds()
}

// leaseRun is the measurement of one backend.
type leaseRun struct {
	backend        string
	o              leaseOptions
	seeded         time.Duration
	allConnected   bool
	connectedAfter time.Duration // until every connection was stored connected (or the limit)
	wireAfter      time.Duration // until every bot had a poll in flight; 0 if never seen
	bestConnected  int           // the most connected seen before the limit
	heldAtStart    map[string]int
	heldAtEnd      map[string]int
	heldAfterStop  map[string]int // live leases once every replica stopped: none, whichever way they were released
	maxHeld        map[string]int // the most each replica held during the window
	minConnected   int            // the fewest connected during the window
	slices         []float64      // writes per second in each windowSlice of the window
	polling        int            // bots polling at the end of the window
	startup        leasePhase
	steady         leasePhase
	stop           leasePhase
	stopped        bool
	rssKB, hwmKB   int
	heapMB         float64
	goroutines     int
	warnings       int
	firstWarnings  []string
}

// share is what the supervisor allows a replica: an even split with 10%
// to spare (connect's fairShare).
func (r leaseRun) share() int {
	n, k := r.o.agents, r.o.replicas
	return (n+k-1)/k + n/(10*k)
}

// owners are the replicas' names.
func (o leaseOptions) owners() []string {
	out := make([]string, o.replicas)
	for i := range out {
		out[i] = "r" + strconv.Itoa(i+1)
	}
	return out
}

// benchLeases runs the scenario on each backend: a fresh database, a
// telegram child holding the bots, and the replicas.
func benchLeases(ctx context.Context, dir, pgAdmin string, o leaseOptions) ([]leaseRun, error) {
	if o.agents <= 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var runs []leaseRun
	for _, backend := range o.backends {
		dsn, drop := filepath.Join(dir, "leases.db"), func() {}
		if backend == "postgres" {
			if dsn, drop, err = freshDatabase(ctx, pgAdmin); err != nil {
				logf("leases on postgres skipped: %v", err)
				continue
			}
		} else if backend != "sqlite" {
			return nil, fmt.Errorf("leases: unknown backend %q", backend)
		}
		tg, err := start(ctx, nil, self, "-serve", "telegram", "-bots", strconv.Itoa(o.agents))
		if err != nil {
			drop()
			return nil, err
		}
		r, err := leasesOn(ctx, backend, dsn, telegramChild(tg.base), o)
		tg.stop()
		drop()
		if err != nil {
			return nil, fmt.Errorf("leases on %s: %w", backend, err)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// leasesOn measures one backend: it seeds the agents, starts the replicas
// together and follows them until all are connected, for the window, and
// while they stop.
func leasesOn(ctx context.Context, backend, dsn string, bots botServer, o leaseOptions) (leaseRun, error) {
	run := leaseRun{backend: backend, o: o}
	began := time.Now()
	logf("leases on %s: seeding %d agents", backend, o.agents)
	if err := seedBots(ctx, dsn, o.agents); err != nil {
		return run, fmt.Errorf("seed: %w", err)
	}
	run.seeded = time.Since(began)
	logf("leases on %s: seeded in %s", backend, run.seeded.Round(time.Millisecond))
	watch, err := openWatch(dsn)
	if err != nil {
		return run, err
	}
	defer func() {
		if sqlDB, err := watch.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	reps, err := startReplicas(ctx, dsn, bots.url, o)
	if err != nil {
		return run, err
	}
	defer reps.close()

	t0 := time.Now()
	run.connectStage(ctx, watch, bots, t0)
	tConnected, atConnected := time.Now(), reps.snapshot()
	run.startup = reps.phase(t0, tConnected, nil, atConnected)
	run.startup.api, _ = apiCalls(ctx, bots)
	logf("leases on %s: %d of %d connected after %s; held %v", backend, run.bestConnected, o.agents,
		run.connectedAfter.Round(time.Millisecond), run.heldAtStart)

	run.steadyStage(ctx, watch, bots, reps.calls)
	tEnd, atEnd := time.Now(), reps.snapshot()
	run.steady = reps.phase(tConnected, tEnd, atConnected, atEnd)
	if api, err := apiCalls(ctx, bots); err == nil {
		run.steady.api = diffCalls(api, run.startup.api)
	}
	run.resources()

	logf("leases on %s: stopping the replicas", backend)
	run.stopped = reps.stop(o.stopLimit)
	run.stop = reps.phase(tEnd, time.Now(), atEnd, reps.snapshot())
	if held, _, err := heldLeases(ctx, watch); err == nil {
		run.heldAfterStop = held
	}
	run.warnings, run.firstWarnings = reps.warn.summary()
	total, _ := run.steady.writes.total()
	logf("leases on %s: %.1f writes/s in the steady state (%d in %s); stopped in %s", backend,
		run.steady.rate(total), total, run.steady.took.Round(time.Millisecond), run.stop.took.Round(time.Millisecond))
	return run, nil
}

// connectStage waits until every connection is stored connected under a
// live lease (or startLimit passes), noting when every bot polled too.
func (r *leaseRun) connectStage(ctx context.Context, watch *gorm.DB, bots botServer, t0 time.Time) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastLog := t0
	for {
		held, connected, err := heldLeases(ctx, watch)
		if time.Since(lastLog) >= r.o.progressEvery {
			lastLog = time.Now()
			logf("leases on %s: %s: %d connected, held %v", r.backend, time.Since(t0).Round(time.Second), connected, held)
		}
		if err == nil && connected > r.bestConnected {
			r.bestConnected = connected
		}
		if r.wireAfter == 0 {
			if st, err := bots.stats(ctx, false); err == nil && st.Polling >= r.o.agents {
				r.wireAfter = time.Since(t0)
			}
		}
		if connected >= r.o.agents || time.Since(t0) >= r.o.startLimit || ctx.Err() != nil {
			r.allConnected = connected >= r.o.agents
			r.connectedAfter, r.heldAtStart = time.Since(t0), held
			return
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// windowSlice is the part of the window each rate of leaseRun.slices covers.
const windowSlice = 10 * time.Second

// steadyStage follows the replicas for the window: the fewest connections
// connected, the most each replica held, and the rate of writes (calls
// counts them) in each slice of the window.
func (r *leaseRun) steadyStage(ctx context.Context, watch *gorm.DB, bots botServer, calls func() int64) {
	end := time.Now().Add(r.o.window)
	r.minConnected, r.maxHeld = r.o.agents, map[string]int{}
	mark, marked := time.Now(), calls()
	for time.Now().Before(end) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(min(2*time.Second, time.Until(end))):
		}
		if now := time.Now(); now.Sub(mark) >= windowSlice-100*time.Millisecond || !now.Before(end) {
			n := calls()
			r.slices = append(r.slices, float64(n-marked)/now.Sub(mark).Seconds())
			mark, marked = now, n
		}
		held, connected, err := heldLeases(ctx, watch)
		if err != nil {
			continue
		}
		r.minConnected = min(r.minConnected, connected)
		for owner, n := range held {
			r.maxHeld[owner] = max(r.maxHeld[owner], n)
		}
		r.heldAtEnd = held
	}
	if st, err := bots.stats(ctx, false); err == nil {
		r.polling = st.Polling
	}
}

// resources reads this process's memory and goroutines: the replicas and
// their HTTP clients, with the rest of the bench.
func (r *leaseRun) resources() {
	r.rssKB, r.hwmKB, _ = rssOf(os.Getpid())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.heapMB = float64(ms.HeapInuse) / (1 << 20)
	r.goroutines = runtime.NumGoroutine()
}

// agentsPerAccount is how many of the agents seedBots puts in one account.
const agentsPerAccount = 100

// seedWorkers is how many agents seedBots creates at once: PostgreSQL
// commits a transaction per agent, so a few in flight fill its round trips.
const seedWorkers = 16

// seedBots creates an account and agents agents on dsn, agent i with
// clients ["telegram"] and bot i's token (stored plain: no key is
// configured).
func seedBots(ctx context.Context, dsn string, agents int) error {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	// The agents are spread over accounts: each account's agent count is
	// one row every create of its agents updates.
	var accounts []string
	for i := range (agents + agentsPerAccount - 1) / agentsPerAccount {
		acct, err := st.Accounts().CreateAccount(ctx, domain.Account{Name: "leases-" + strconv.Itoa(i), Tier: domain.TierEnterprise, AgentQuota: 1_000_000_000})
		if err != nil {
			return err
		}
		accounts = append(accounts, acct.ID)
	}
	next := make(chan int)
	errs := make(chan error, seedWorkers)
	var wg sync.WaitGroup
	for range seedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fields := map[string]json.RawMessage{
					"name":     json.RawMessage(`"Bot ` + strconv.Itoa(i) + `"`),
					"clients":  json.RawMessage(`["telegram"]`),
					"settings": json.RawMessage(`{"secrets":{"` + telegram.TokenVar + `":"` + botToken(i) + `"}}`),
				}
				if _, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: accounts[i%len(accounts)], Fields: fields}, -1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
feed:
	for i := range agents {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// replicas are the supervisors of a run, each on its own store handle
// wrapped in a counter.
type replicas struct {
	stores []*store.Store
	counts []*writeCounts
	cancel context.CancelFunc
	done   chan struct{}
	warn   *warnLog
}

// startReplicas opens o.replicas store handles on dsn and starts a
// supervisor on each, owners r1, r2, ..., with the default lease TTL and
// renewal, all at once.
func startReplicas(ctx context.Context, dsn, apiURL string, o leaseOptions) (*replicas, error) {
	rs := &replicas{warn: &warnLog{}, done: make(chan struct{})}
	var sups []*connect.Supervisor
	for _, owner := range o.owners() {
		st, err := store.Open(ctx, dsn, store.WithPool(store.Pool{MaxOpen: o.pgPool, MaxIdle: o.pgPool,
			MaxLifetime: 30 * time.Minute, MaxIdleTime: 5 * time.Minute, StatementTimeout: 30 * time.Second}))
		if err != nil {
			rs.close()
			return nil, err
		}
		rs.stores = append(rs.stores, st)
		n := &writeCounts{}
		rs.counts = append(rs.counts, n)
		sup, err := connect.New(connect.Config{
			Stores: connect.Stores{Agents: st.Agents(), Connections: countingStore{st.Connections(), n},
				Conversations: st.Conversations(), Runs: st.Runs()},
			Turner: echoTurner{}, Owner: owner,
			Platforms: []connect.Platform{&telegram.Platform{APIURL: apiURL, PollTimeout: o.pollTimeout}},
			Logger:    slog.New(warnHandler{log: rs.warn}),
		})
		if err != nil {
			rs.close()
			return nil, err
		}
		sups = append(sups, sup)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rs.cancel = cancel
	var wg sync.WaitGroup
	for _, sup := range sups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = sup.Run(rctx)
		}()
	}
	go func() {
		wg.Wait()
		close(rs.done)
	}()
	return rs, nil
}

// snapshot is every replica's tally now.
func (rs *replicas) snapshot() []writeTally {
	out := make([]writeTally, len(rs.counts))
	for i, n := range rs.counts {
		out[i] = n.snapshot()
	}
	return out
}

// calls is how many writes the replicas made so far (the detail rows left
// out).
func (rs *replicas) calls() int64 {
	var n int64
	for _, c := range rs.counts {
		for m := range firstDetail {
			n += c.calls[m].Load()
		}
	}
	return n
}

// phase is what the replicas wrote from snapshot a (nil: from the start)
// at from to snapshot b at to.
func (rs *replicas) phase(from, to time.Time, a, b []writeTally) leasePhase {
	p := leasePhase{took: to.Sub(from)}
	for i := range b {
		d := b[i]
		if a != nil {
			d = d.minus(a[i])
		}
		p.perReplica = append(p.perReplica, d)
		p.writes = p.writes.plus(d)
	}
	return p
}

// stop stops the supervisors (each drains and releases its leases) and
// reports whether they all returned within limit.
func (rs *replicas) stop(limit time.Duration) bool {
	if rs.cancel == nil {
		return true
	}
	rs.cancel()
	select {
	case <-rs.done:
		return true
	case <-time.After(limit):
		return false
	}
}

// close stops the supervisors, when running, and closes the stores.
func (rs *replicas) close() {
	rs.stop(time.Minute)
	for _, st := range rs.stores {
		_ = st.Close()
	}
}

// openWatch opens the connection the bench reads the leases with, outside
// the replicas' stores.
func openWatch(dsn string) (*gorm.DB, error) {
	dialector := sqlite.Open(withDSNParams(dsn, "_busy_timeout=5000&_query_only=1"))
	if strings.HasPrefix(dsn, "postgres") {
		dialector = postgres.Open(dsn)
	}
	db, err := gorm.Open(dialector, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(1)
	return db, nil
}

func withDSNParams(dsn, params string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// heldLeases reads the live leases by owner and how many connections are
// stored connected under one.
func heldLeases(ctx context.Context, db *gorm.DB) (map[string]int, int, error) {
	var rows []struct {
		LeaseOwner string
		State      string
		N          int
	}
	err := db.WithContext(ctx).Raw(`SELECT lease_owner, state, COUNT(*) AS n FROM connections
		WHERE lease_expires_at >= ? GROUP BY lease_owner, state`, time.Now().UTC().Truncate(time.Millisecond)).Scan(&rows).Error
	if err != nil {
		return nil, 0, err
	}
	held, connected := map[string]int{}, 0
	for _, r := range rows {
		held[r.LeaseOwner] += r.N
		if r.State == string(domain.ConnConnected) {
			connected += r.N
		}
	}
	return held, connected, nil
}

// apiCalls is the Bot API calls the server received so far, by method.
func apiCalls(ctx context.Context, bots botServer) (map[string]int64, error) {
	st, err := bots.stats(ctx, true)
	return st.Calls, err
}

// diffCalls is b less the earlier a, by method.
func diffCalls(b, a map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for m, n := range b {
		out[m] = n - a[m]
	}
	return out
}
