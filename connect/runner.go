package connect

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentd/agentd/store"
)

// releaseTimeout bounds the lease release of a stopping runner.
const releaseTimeout = 5 * time.Second

// secretsReason is the reason of a connection whose secrets do not decrypt.
const secretsReason = "the agent's secrets cannot be decrypted: AGENTD_SECRET_KEY is not set or is not the key they were written with"

// runner keeps one (agent, platform) connection: it stands by until it
// holds the lease, then connects, and reconnects after failures, until it
// is stopped or its agent is gone.
type runner struct {
	sup    *Supervisor
	spec   spec
	prev   *runner // the runner it replaces; it starts once prev is done
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	log    *slog.Logger
}

func newRunner(parent context.Context, s *Supervisor, sp spec, prev *runner) *runner {
	ctx, cancel := context.WithCancelCause(parent)
	return &runner{sup: s, spec: sp, prev: prev, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		log: s.cfg.Logger.With("agent", sp.agent.ID, "platform", sp.platform.Name())}
}

// stop asks the runner to end; why becomes the connection's reason.
func (r *runner) stop(why error) { r.cancel(why) }

func (r *runner) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// run stands by for the lease and holds it until the runner is stopped or
// its agent is gone.
func (r *runner) run() {
	defer close(r.done)
	defer r.cancel(nil)
	if r.prev != nil {
		<-r.prev.done // never two pollers of one bot in one process
	}
	for r.ctx.Err() == nil {
		lease, ok, err := r.sup.cfg.Store.AcquireLease(r.ctx, r.spec.agent.ID, r.spec.platform.Name(), r.sup.cfg.Owner, r.sup.cfg.LeaseTTL)
		if errors.Is(err, store.ErrNotFound) {
			r.exited()
			return
		}
		if err != nil && r.ctx.Err() == nil {
			r.log.Warn("acquire connection lease", "error", err)
		}
		if ok {
			if r.hold(lease) != nil {
				r.park()
				return
			}
			continue
		}
		Sleep(r.ctx, r.sup.cfg.RenewEvery)
	}
}

// parked is a connection that cannot run until its configuration changes:
// secrets that do not decrypt, or a refusal the platform will repeat (a
// bad token). Its state is stored and it holds no lease, so such
// connections cost no lease renewals on the database's writer.
type parked struct {
	state  store.ConnState
	reason string
}

// park waits, without a lease, until the runner is stopped. When the
// connection is no longer wanted (the agent was made inactive, or the
// platform left its clients) it stores why, taking the lease back for that
// one write; a new runner after a configuration change, or the next start
// of the service, stores its own state.
func (r *runner) park() {
	<-r.ctx.Done()
	if cause := context.Cause(r.ctx); errors.Is(cause, errConfigChanged) || errors.Is(cause, errShuttingDown) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), releaseTimeout)
	defer cancel()
	lease, ok, err := r.sup.cfg.Store.AcquireLease(ctx, r.spec.agent.ID, r.spec.platform.Name(), r.sup.cfg.Owner, r.sup.cfg.LeaseTTL)
	if err != nil || !ok {
		return // the agent is gone, or another replica runs it now
	}
	if err := r.sup.cfg.Store.ReleaseLease(ctx, lease, store.ConnDisconnected, context.Cause(r.ctx).Error()); err != nil {
		r.log.Warn("release connection lease", "error", err)
	}
}

// exited tells the supervisor that the runner ended by itself.
func (r *runner) exited() {
	select {
	case r.sup.exited <- runnerKey{r.spec.agent.ID, r.spec.platform.Name()}:
	default: // the next full resync forgets it
	}
}

// hold serves the connection while lease is held: it renews the lease in
// the background and ends the connection as soon as a renewal fails. A
// stopped runner releases the lease with the state disconnected; a
// connection that cannot run releases it with its state and is returned
// parked.
func (r *runner) hold(lease store.Lease) *parked {
	r.log.Info("connection lease acquired", "epoch", lease.Epoch)
	ctx, lost := context.WithCancelCause(r.ctx)
	defer lost(nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.renew(ctx, lost, lease)
	}()
	p := r.serve(ctx, lease)
	lost(nil)
	wg.Wait()
	state, reason := store.ConnDisconnected, ""
	switch {
	case p != nil:
		state, reason = p.state, p.reason
	case r.ctx.Err() == nil:
		r.log.Warn("connection lease lost", "error", context.Cause(ctx))
		return nil
	default:
		reason = context.Cause(r.ctx).Error()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), releaseTimeout)
	defer cancel()
	if err := r.sup.cfg.Store.ReleaseLease(rctx, lease, state, reason); err != nil {
		r.log.Warn("release connection lease", "error", err)
	}
	return p
}

// renew renews lease every RenewEvery until ctx ends; it calls lost when
// the lease is taken over, or would expire before the next renewal.
func (r *runner) renew(ctx context.Context, lost context.CancelCauseFunc, lease store.Lease) {
	every := r.sup.cfg.RenewEvery
	for Sleep(ctx, every) {
		renewed, err := r.sup.cfg.Store.RenewLease(ctx, lease, r.sup.cfg.LeaseTTL)
		switch {
		case err == nil:
			lease = renewed
		case errors.Is(err, store.ErrLeaseLost):
			lost(err)
			return
		case time.Until(lease.ExpiresAt) < every:
			lost(err)
			return
		}
	}
}

// serve connects, and reconnects with back-off after failures, until ctx
// ends; a fatal failure or secrets that do not decrypt return it parked
// instead (the supervisor starts no runner when credentials are missing).
func (r *runner) serve(ctx context.Context, lease store.Lease) *parked {
	c := &Conn{Agent: r.spec.agent, Settings: r.spec.settings, Secrets: r.spec.secrets, Logger: r.log,
		platform: r.spec.platform.Name(), lease: lease, cursor: lease.Cursor, store: r.sup.cfg.Store, turner: r.sup.cfg.Turner,
		dropped: r.sup.dropped.WithLabelValues(r.spec.platform.Name()).Inc}
	if r.spec.secretsErr != nil {
		r.log.Warn("connection secrets cannot be decrypted", "error", r.spec.secretsErr)
		return &parked{store.ConnError, secretsReason}
	}
	b := backoff{min: r.sup.cfg.MinBackoff, max: r.sup.cfg.MaxBackoff}
	// One dispatcher for the lease, not one per Run: the jobs of a session
	// that dropped go on (they answer through the platform's HTTP API)
	// while the next session connects, instead of keeping the platform
	// disconnected until they have all run.
	c.jobs = newDispatcher(ctx, r.sup.cfg.QueueSize)
	defer c.jobs.close()
	for ctx.Err() == nil {
		r.setState(ctx, c, store.ConnConnecting, "")
		c.setConnectedAt(time.Time{})
		err := r.spec.platform.Run(ctx, c)
		if ctx.Err() != nil {
			return nil
		}
		var held time.Duration
		if at := c.connectedAt(); !at.IsZero() {
			held = time.Since(at)
		}
		var fatal *FatalError
		if errors.As(err, &fatal) {
			r.log.Warn("connection failed", "reason", fatal.Reason)
			return &parked{store.ConnError, fatal.Reason}
		}
		wait := b.next(held)
		r.log.Warn("connection dropped; reconnecting", "error", err, "after", wait)
		r.setState(ctx, c, store.ConnDisconnected, "reconnecting after a failure")
		if !Sleep(ctx, Jitter(wait)) {
			return nil
		}
	}
	return nil
}

// backoff is the wait before a reconnection: min after the first failure,
// doubling with each further one up to max. A connection that held longer
// than max was healthy, so the failure that ends it starts over at min:
// routine drops (a gateway asking to reconnect, a server restart) do not
// leave a connection slow to come back for the rest of its life.
type backoff struct {
	min, max time.Duration
	cur      time.Duration // the last wait, 0 before the first
}

// next returns the wait after a connection that was connected for held (0
// when it never connected).
func (b *backoff) next(held time.Duration) time.Duration {
	if b.cur == 0 || held > b.max {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

func (r *runner) setState(ctx context.Context, c *Conn, state store.ConnState, reason string) {
	if err := c.setState(ctx, state, reason); err != nil && ctx.Err() == nil {
		r.log.Warn("store connection state", "error", err)
	}
}
