package connect

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"time"

	"github.com/agentd/agentd/domain"
)

// maxMovesPerRound caps the leases a replica over its share hands over at
// each look, so that a replica joining takes its share gradually.
const maxMovesPerRound = 50

// pruneEvery is the gap between prunes of answered platform messages.
const pruneEvery = time.Hour

// renewing renews this replica's leases every RenewEvery until ctx ends,
// one statement for all of them. It has a goroutine of its own: a round
// of acquisitions (thousands at a start) must never delay a renewal past
// the leases' expiry.
func (s *Supervisor) renewing(ctx context.Context) {
	tick := time.NewTicker(s.cfg.RenewEvery)
	defer tick.Stop()
	for {
		s.renew(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// balancing takes this replica's share of the free connections, or hands
// over what it holds beyond its share, every RenewEvery and at each poke
// (a runner added, a lease released), until ctx ends; and prunes the
// answered messages hourly.
func (s *Supervisor) balancing(ctx context.Context) {
	var pruned time.Time
	tick := time.NewTicker(s.cfg.RenewEvery)
	defer tick.Stop()
	for {
		s.balance(ctx)
		if time.Since(pruned) >= pruneEvery {
			pruned = time.Now()
			if _, err := s.cfg.Stores.Connections.PruneAnsweredMessages(ctx, 10_000); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("connections: prune answered messages", "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake:
		}
	}
}

// poke makes the lease loop look for free connections now.
func (s *Supervisor) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// renew renews every lease this replica holds and ends the work of those
// the renewal did not find. When the renewal fails, the leases that would
// expire before the next one end, since another replica may take them.
func (s *Supervisor) renew(ctx context.Context) {
	at := time.Now()
	held, err := s.cfg.Stores.Connections.RenewLeases(ctx, s.cfg.Owner, s.cfg.LeaseTTL)
	// A lease acquired while the statement ran may be missing from its
	// answer without being lost: only those held before it count.
	holders := s.runnersWhere(func(r *runner) bool { return r.heldSince(at) })
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("connections: renew leases", "error", err)
		}
		for _, r := range holders {
			r.expireBefore(at.Add(s.cfg.RenewEvery))
		}
		return
	}
	epochs := make(map[runnerKey]int64, len(held))
	for _, h := range held {
		epochs[runnerKey{h.AgentID, h.Platform}] = h.Epoch
	}
	for _, r := range holders {
		epoch, ok := epochs[r.key()]
		r.renewed(ok, epoch, at.Add(s.cfg.LeaseTTL))
	}
}

// balance takes free connections up to this replica's share, or hands
// over those beyond it. Each replica prefers its own connections by
// rendezvous hashing, so replicas seldom race for the same lease.
func (s *Supervisor) balance(ctx context.Context) {
	replicas, err := s.cfg.Stores.Connections.Heartbeat(ctx, s.cfg.Owner, s.cfg.LeaseTTL)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("connections: heartbeat", "error", err)
		}
		return
	}
	now := time.Now()
	wanted := s.runnersWhere(func(r *runner) bool { return r.ctx.Err() == nil && !r.isParked() })
	var holding, standby []*runner
	for _, r := range wanted {
		switch {
		case r.holds():
			holding = append(holding, r)
		case r.standby(now):
			standby = append(standby, r)
		}
	}
	share := fairShare(len(wanted), replicas)
	if over := len(holding) - share; over > 0 {
		s.byPreference(holding)
		for _, r := range holding[len(holding)-min(over, maxMovesPerRound):] {
			r.handOver()
		}
		return
	}
	room := min(share-len(holding), s.cfg.AcquireBatch)
	if room <= 0 {
		return
	}
	candidates, err := s.free(ctx, standby)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("connections: read free connections", "error", err)
		}
		return
	}
	s.byPreference(candidates)
	for _, r := range candidates[:min(room, len(candidates))] {
		err := r.acquire()
		switch {
		case errors.Is(err, domain.ErrNotFound):
			s.forget(r)
		case err != nil && ctx.Err() == nil:
			r.log.Warn("acquire connection lease", "error", err)
		}
	}
}

// free returns the runners of standby whose lease no other replica holds
// now, as one read of the store shows: trying the others would only cost
// writes.
func (s *Supervisor) free(ctx context.Context, standby []*runner) ([]*runner, error) {
	keys, err := s.cfg.Stores.Connections.LeasedElsewhere(ctx, s.cfg.Owner)
	if err != nil {
		return nil, err
	}
	taken := make(map[runnerKey]bool, len(keys))
	for _, k := range keys {
		taken[runnerKey{k.AgentID, k.Platform}] = true
	}
	return slices.DeleteFunc(standby, func(r *runner) bool { return taken[r.key()] }), nil
}

// fairShare is how many of n connections one of replicas live replicas
// may hold: an even split with 10% to spare, so that connections need not
// move at every small change.
func fairShare(n, replicas int) int {
	replicas = max(replicas, 1)
	return (n+replicas-1)/replicas + n/(10*replicas)
}

// byPreference sorts runners by this replica's rendezvous score, highest
// first: the ones it should hold before the others.
func (s *Supervisor) byPreference(runners []*runner) {
	score := func(r *runner) uint64 {
		h := fnv.New64a()
		h.Write([]byte(s.cfg.Owner + "\x00" + r.spec.agent.ID + "\x00" + r.spec.platform.Name()))
		return h.Sum64()
	}
	scores := make(map[*runner]uint64, len(runners))
	for _, r := range runners {
		scores[r] = score(r)
	}
	slices.SortFunc(runners, func(a, b *runner) int { return cmp.Compare(scores[b], scores[a]) })
}

// runnersWhere returns the runners for which keep is true.
func (s *Supervisor) runnersWhere(keep func(*runner) bool) []*runner {
	s.mu.Lock()
	all := make([]*runner, 0, len(s.runners))
	for _, r := range s.runners {
		all = append(all, r)
	}
	s.mu.Unlock()
	return slices.DeleteFunc(all, func(r *runner) bool { return !keep(r) })
}
