package connect

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
)

// releaseTimeout bounds the lease release of a stopping runner.
const releaseTimeout = 5 * time.Second

// secretsReason is the reason of a connection whose secrets do not decrypt.
const secretsReason = "the agent's secrets cannot be decrypted: AGENTD_SECRET_KEY is not set or is not the key they were written with"

// unreachableReason is the reason of a connection this replica gave up
// after failing to connect, for another replica to try.
const unreachableReason = "this replica could not reach the platform; another replica may take the connection over"

// Why a hold ends while the runner goes on standing by.
var (
	errHandedOver   = errors.New("the connection moved to another replica to spread the load")
	errDrainTimeout = errors.New("the messages being answered ran out of time to finish")
	errLeaseExpired = errors.New("connect: the lease could not be renewed before it expired")
)

// runner is one (agent, platform) connection on this replica. It stands
// by, with no goroutine, until the supervisor acquires the lease for it;
// then it connects, reconnects after failures, and answers until it is
// stopped, the lease is lost, or the supervisor moves the lease away.
type runner struct {
	sup    *Supervisor
	spec   spec
	prev   *runner // the runner it replaces; it may hold once prev is done
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once stopped and not holding
	log    *slog.Logger

	mu        sync.Mutex
	hold      *holding  // the lease held now; nil while standing by
	parked    bool      // it cannot run until its configuration changes
	coolUntil time.Time // no acquisition before it (after giving a lease up)
	ended     bool
}

// holding is a lease held by a runner.
type holding struct {
	lease    domain.Lease
	acquired time.Time
	// expires is the lease's local deadline: the supervisor moves it at
	// each renewal, and ends the work when no renewal succeeded in time.
	expires time.Time
	// stopFetch stops taking new messages: the work in hand drains.
	stopFetch context.CancelCauseFunc
	// lose ends all work at once.
	lose context.CancelCauseFunc
	// conn is the lease's Conn, nil until it is made.
	conn *Conn
}

func newRunner(parent context.Context, s *Supervisor, sp spec, prev *runner) *runner {
	ctx, cancel := context.WithCancelCause(parent)
	return &runner{sup: s, spec: sp, prev: prev, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		log: s.cfg.Logger.With("agent", sp.agent.ID, "platform", sp.platform.Name())}
}

func (r *runner) key() runnerKey { return runnerKey{r.spec.agent.ID, r.spec.platform.Name()} }

// stop ends the runner; why becomes the connection's reason. A holding
// runner drains and releases first; a parked one stores why unless a new
// runner takes its place or the process ends.
func (r *runner) stop(why error) {
	r.cancel(why)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold != nil || r.ended {
		return
	}
	r.ended = true
	if r.parked && !errors.Is(why, errConfigChanged) && !errors.Is(why, errShuttingDown) {
		go func() {
			defer close(r.done)
			r.storeWhy()
		}()
		return
	}
	close(r.done)
}

func (r *runner) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// standby reports whether the supervisor may acquire the lease for r now:
// stopped, holding, parked, cooling off and replacing runners may not.
func (r *runner) standby(now time.Time) bool {
	if r.ctx.Err() != nil || (r.prev != nil && !r.prev.finished()) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hold == nil && !r.parked && now.After(r.coolUntil)
}

func (r *runner) holds() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hold != nil
}

// heldSince reports whether r holds a lease it acquired before t.
func (r *runner) heldSince(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hold != nil && r.hold.acquired.Before(t)
}

// acquire tries to take the lease and, when it does, starts holding it. It
// returns domain.ErrNotFound when the agent is gone.
func (r *runner) acquire() error {
	asked := time.Now()
	lease, ok, err := r.sup.cfg.Stores.Connections.AcquireLease(r.ctx, r.spec.agent.ID, r.spec.platform.Name(), r.sup.cfg.Owner, r.sup.cfg.LeaseTTL)
	if err != nil || !ok {
		return err
	}
	work, lose := context.WithCancelCause(context.WithoutCancel(r.ctx))
	fetch, stopFetch := context.WithCancelCause(work)
	// acquired is after the commit, so a renewal that started later sees
	// the lease; expires counts from before the call, to be safe.
	h := &holding{lease: lease, acquired: time.Now(), expires: asked.Add(r.sup.cfg.LeaseTTL), stopFetch: stopFetch, lose: lose}
	r.mu.Lock()
	r.hold = h
	r.mu.Unlock()
	// A stop ends the fetching; the lease stays held while the work drains.
	unhook := context.AfterFunc(r.ctx, func() { stopFetch(context.Cause(r.ctx)) })
	go func() {
		defer unhook()
		r.serveLease(h, fetch, work)
	}()
	return nil
}

// serveLease serves the connection under h, then drains the messages in
// hand (within DrainTimeout, the lease still renewed) and releases the
// lease with the connection's state.
func (r *runner) serveLease(h *holding, fetch, work context.Context) {
	r.log.Info("connection lease acquired", "epoch", h.lease.Epoch)
	c := r.newConn(h, work)
	r.mu.Lock()
	h.conn = c
	r.mu.Unlock()
	p := r.serve(fetch, c)
	drain := time.AfterFunc(r.sup.cfg.DrainTimeout, func() { h.lose(errDrainTimeout) })
	c.jobs.close()
	drain.Stop()
	lost := work.Err() != nil && !errors.Is(context.Cause(work), errDrainTimeout)
	h.lose(nil)
	switch {
	case lost:
		r.log.Warn("connection lease lost", "error", context.Cause(work))
	case p == nil && errors.Is(context.Cause(fetch), errShuttingDown):
		// The supervisor frees every lease of a stopping replica in one
		// statement (a deploy of 10,000 bots would otherwise be 10,000
		// writes racing a timeout); the connections list shows them
		// disconnected once no lease holds them.
	default:
		r.release(h, p, context.Cause(fetch))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold = nil
	switch {
	case p != nil && p.giveUp:
		r.coolUntil = time.Now().Add(r.sup.cfg.LeaseTTL)
	case p != nil:
		r.parked = true
	case errors.Is(context.Cause(fetch), errHandedOver):
		r.coolUntil = time.Now().Add(2 * r.sup.cfg.LeaseTTL)
	}
	if r.ctx.Err() != nil && !r.ended {
		r.ended = true
		close(r.done)
	}
	r.sup.poke() // a runner replacing this one may start now
}

// release frees the lease, storing the connection's state: the parked
// one's, else disconnected with why the connection ended.
func (r *runner) release(h *holding, p *parked, why error) {
	state, reason := domain.ConnDisconnected, ""
	switch {
	case p != nil:
		state, reason = p.state, p.reason
	case why != nil:
		reason = why.Error()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), releaseTimeout)
	defer cancel()
	if err := r.sup.cfg.Stores.Connections.ReleaseLease(ctx, h.lease, state, reason); err != nil {
		r.log.Warn("release connection lease", "error", err)
	}
}

// renewed applies a batch renewal to the lease held: when the renewal
// found it (ok, with its epoch) its local deadline moves to expires, else
// it was lost and its work ends.
func (r *runner) renewed(ok bool, epoch int64, expires time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch h := r.hold; {
	case h == nil:
	case ok && h.lease.Epoch == epoch:
		h.expires = expires
	default:
		h.lose(domain.ErrLeaseLost)
	}
}

// expireBefore ends the work of the lease held when its local deadline
// comes before t: a renewal failed and the next may come too late, when
// another replica could hold the lease already.
func (r *runner) expireBefore(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.hold; h != nil && h.expires.Before(t) {
		h.lose(errLeaseExpired)
	}
}

func (r *runner) isParked() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parked
}

// handOver stops taking messages so that the lease, once the work in hand
// is done, is released for another replica.
func (r *runner) handOver() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold != nil {
		r.hold.stopFetch(errHandedOver)
	}
}

// parked is why a connection cannot run until its configuration changes
// (secrets that do not decrypt, a refusal the platform will repeat), or,
// with giveUp, why this replica leaves it for another for a while. Its
// state is stored and it holds no lease, so it costs no renewals.
type parked struct {
	state  domain.ConnState
	reason string
	giveUp bool
}

// storeWhy stores why a parked connection is no longer wanted (the agent
// was made inactive, or the platform left its clients), taking the lease
// back for that one write; if another replica holds it, that replica
// stores its own.
func (r *runner) storeWhy() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), releaseTimeout)
	defer cancel()
	lease, ok, err := r.sup.cfg.Stores.Connections.AcquireLease(ctx, r.spec.agent.ID, r.spec.platform.Name(), r.sup.cfg.Owner, r.sup.cfg.LeaseTTL)
	if err != nil || !ok {
		return // the agent is gone, or another replica runs it now
	}
	if err := r.sup.cfg.Stores.Connections.ReleaseLease(ctx, lease, domain.ConnDisconnected, context.Cause(r.ctx).Error()); err != nil {
		r.log.Warn("release connection lease", "error", err)
	}
}

// newConn is the Conn of a lease: one dispatcher for the lease, not one
// per Run, so the jobs of a session that dropped go on (they answer
// through the platform's HTTP API) while the next session connects.
func (r *runner) newConn(h *holding, work context.Context) *Conn {
	c := &Conn{Agent: r.spec.agent, Settings: r.spec.settings, Secrets: r.spec.secrets, Logger: r.log,
		platform: r.spec.platform.Name(), lease: h.lease, cursor: h.lease.Cursor, stores: r.sup.cfg.Stores,
		turner: r.sup.cfg.Turner, lose: func(err error) { h.lose(err) }, dropped: r.sup.dropped,
		policy: NewPolicy(r.spec.settings), admins: adminsOf(r.spec.settings), follows: r.sup.follows}
	c.inbox.queued, c.inbox.answered = map[string]bool{}, map[string]bool{}
	c.jobs = newDispatcher(work, r.sup.cfg.QueueSize)
	c.jobs.after = c.freed
	return c
}

// serve connects, and reconnects with back-off after failures, until ctx
// ends. A fatal failure or secrets that do not decrypt return it parked;
// GiveUpAfter failed connections in a row return it given up (the
// supervisor starts no runner when credentials are missing).
func (r *runner) serve(ctx context.Context, c *Conn) *parked {
	if r.spec.secretsErr != nil {
		r.log.Warn("connection secrets cannot be decrypted", "error", r.spec.secretsErr)
		return &parked{state: domain.ConnError, reason: secretsReason}
	}
	b := backoff{min: r.sup.cfg.MinBackoff, max: r.sup.cfg.MaxBackoff}
	failed := 0
	for ctx.Err() == nil {
		r.setState(ctx, c, domain.ConnConnecting, "")
		c.setConnectedAt(time.Time{})
		err := r.spec.platform.Run(ctx, c)
		c.Chats(nil) // its session sends no more
		if ctx.Err() != nil {
			return nil
		}
		var held time.Duration
		if at := c.connectedAt(); !at.IsZero() {
			held, failed = time.Since(at), 0
		} else {
			failed++
		}
		var fatal *FatalError
		if errors.As(err, &fatal) {
			r.log.Warn("connection failed", "reason", fatal.Reason)
			return &parked{state: domain.ConnError, reason: fatal.Reason}
		}
		if failed >= r.sup.cfg.GiveUpAfter {
			r.log.Warn("connection given up on this replica", "error", err, "failures", failed)
			return &parked{state: domain.ConnDisconnected, reason: unreachableReason, giveUp: true}
		}
		wait := b.next(held)
		r.log.Warn("connection dropped; reconnecting", "error", err, "after", wait)
		r.setState(ctx, c, domain.ConnDisconnected, "reconnecting after a failure")
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

func (r *runner) setState(ctx context.Context, c *Conn, state domain.ConnState, reason string) {
	if err := c.setState(ctx, state, reason); err != nil && ctx.Err() == nil {
		r.log.Warn("store connection state", "error", err)
	}
}
