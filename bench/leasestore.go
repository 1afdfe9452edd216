package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/turn"
)

// writeMethod is one of the connect.Connections methods that write to the
// database (PendingPlatformMessages, a read under the lease, is counted
// with them: it is a statement per connection start).
type writeMethod int

// The counted methods, in the order of the report.
const (
	mAcquireLease writeMethod = iota
	mRenewLeases
	mHeartbeat
	mLeaveReplicas
	mReleaseLease
	mReleaseLeases
	mSaveCursor
	mSetConnectionState
	mSetIdleConnections
	mClaimBot
	mCountConnectionMessage
	mTakePlatformMessages
	mPendingPlatformMessages
	mFinishPlatformMessage
	mPruneAnsweredMessages
	// The detail rows: not in the totals.
	mAcquireMissed // AcquireLease calls that found the lease held by another replica
	mIdleEmpty     // SetIdleConnections calls with nothing to store: no statement
	nWriteMethods
)

// firstDetail is the first detail row: the rows from it on are not counted
// in the totals.
const firstDetail = mAcquireMissed

var writeMethodNames = [nWriteMethods]string{
	"AcquireLease", "RenewLeases", "Heartbeat", "LeaveReplicas", "ReleaseLease", "ReleaseLeases", "SaveCursor",
	"SetConnectionState", "SetIdleConnections", "ClaimBot", "CountConnectionMessage",
	"TakePlatformMessages", "PendingPlatformMessages", "FinishPlatformMessage", "PruneAnsweredMessages",
	"AcquireLease calls that did not acquire (another replica held the lease)",
	"SetIdleConnections calls with nothing to store (no statement; not counted above)",
}

func (m writeMethod) String() string { return writeMethodNames[m] }

// writeCounts counts one replica's calls of each write method, and those
// that failed.
type writeCounts struct {
	calls, errs [nWriteMethods]atomic.Int64
	lost        atomic.Int64 // lease-bound writes that found the lease lost
	lastRenew   atomic.Int64 // when the last RenewLeases started, Unix ns
	maxGap      atomic.Int64 // the longest gap between RenewLeases calls since the last snapshot, ns
}

// writeTally is a snapshot of writeCounts, or a difference of two.
type writeTally struct {
	calls, errs [nWriteMethods]int64
	lost        int64
	// maxGap is the longest gap between two renewals of the replica (in
	// a sum of replicas, the longest of theirs).
	maxGap time.Duration
}

// snapshot reads c, and starts a new longest renewal gap.
func (c *writeCounts) snapshot() writeTally {
	var t writeTally
	for m := range nWriteMethods {
		t.calls[m], t.errs[m] = c.calls[m].Load(), c.errs[m].Load()
	}
	t.lost = c.lost.Load()
	t.maxGap = time.Duration(c.maxGap.Swap(0))
	return t
}

// renewing notes that a renewal starts now.
func (c *writeCounts) renewing() {
	now := time.Now().UnixNano()
	last := c.lastRenew.Swap(now)
	if last == 0 {
		return
	}
	for gap := now - last; ; {
		cur := c.maxGap.Load()
		if gap <= cur || c.maxGap.CompareAndSwap(cur, gap) {
			return
		}
	}
}

// minus is t less the earlier snapshot u; t's longest gap is kept (the
// snapshot started a new one).
func (t writeTally) minus(u writeTally) writeTally {
	for m := range nWriteMethods {
		t.calls[m] -= u.calls[m]
		t.errs[m] -= u.errs[m]
	}
	t.lost -= u.lost
	return t
}

// plus is the sum of t and u (two replicas' tallies).
func (t writeTally) plus(u writeTally) writeTally {
	for m := range nWriteMethods {
		t.calls[m] += u.calls[m]
		t.errs[m] += u.errs[m]
	}
	t.lost += u.lost
	t.maxGap = max(t.maxGap, u.maxGap)
	return t
}

// total is every call of t, and every failure (the detail rows left out).
func (t writeTally) total() (calls, errs int64) {
	for m := range firstDetail {
		calls += t.calls[m]
		errs += t.errs[m]
	}
	return calls, errs
}

// countingStore is the connect.Connections a bench replica runs on: the
// real store's, with each call that writes to the database counted.
type countingStore struct {
	connect.Connections
	n *writeCounts
}

var _ connect.Connections = countingStore{}

func (s countingStore) note(m writeMethod, err error) {
	s.n.calls[m].Add(1)
	if err != nil {
		s.n.errs[m].Add(1)
	}
	if errors.Is(err, domain.ErrLeaseLost) {
		s.n.lost.Add(1)
	}
}

func (s countingStore) AcquireLease(ctx context.Context, agentID, platform, owner string, ttl time.Duration) (domain.Lease, bool, error) {
	l, ok, err := s.Connections.AcquireLease(ctx, agentID, platform, owner, ttl)
	s.note(mAcquireLease, err)
	if err == nil && !ok {
		s.note(mAcquireMissed, nil)
	}
	return l, ok, err
}

func (s countingStore) RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]domain.HeldLease, error) {
	s.n.renewing()
	held, err := s.Connections.RenewLeases(ctx, owner, ttl)
	s.note(mRenewLeases, err)
	return held, err
}

func (s countingStore) Heartbeat(ctx context.Context, owner string, ttl time.Duration) (int, error) {
	n, err := s.Connections.Heartbeat(ctx, owner, ttl)
	s.note(mHeartbeat, err)
	return n, err
}

func (s countingStore) LeaveReplicas(ctx context.Context, owner string) error {
	err := s.Connections.LeaveReplicas(ctx, owner)
	s.note(mLeaveReplicas, err)
	return err
}

func (s countingStore) ReleaseLeases(ctx context.Context, owner string) error {
	err := s.Connections.ReleaseLeases(ctx, owner)
	s.note(mReleaseLeases, err)
	return err
}

func (s countingStore) ReleaseLease(ctx context.Context, l domain.Lease, state domain.ConnState, reason string) error {
	err := s.Connections.ReleaseLease(ctx, l, state, reason)
	s.note(mReleaseLease, err)
	return err
}

func (s countingStore) SaveCursor(ctx context.Context, l domain.Lease, cursor string) error {
	err := s.Connections.SaveCursor(ctx, l, cursor)
	s.note(mSaveCursor, err)
	return err
}

func (s countingStore) SetConnectionState(ctx context.Context, l domain.Lease, state domain.ConnState, reason string) error {
	err := s.Connections.SetConnectionState(ctx, l, state, reason)
	s.note(mSetConnectionState, err)
	return err
}

func (s countingStore) SetIdleConnections(ctx context.Context, idle []domain.IdleConnection) error {
	err := s.Connections.SetIdleConnections(ctx, idle)
	if len(idle) == 0 {
		s.note(mIdleEmpty, err)
	} else {
		s.note(mSetIdleConnections, err)
	}
	return err
}

func (s countingStore) ClaimBot(ctx context.Context, l domain.Lease, botID, username string) error {
	err := s.Connections.ClaimBot(ctx, l, botID, username)
	s.note(mClaimBot, err)
	return err
}

func (s countingStore) CountConnectionMessage(ctx context.Context, l domain.Lease, in bool) error {
	err := s.Connections.CountConnectionMessage(ctx, l, in)
	s.note(mCountConnectionMessage, err)
	return err
}

func (s countingStore) TakePlatformMessages(ctx context.Context, l domain.Lease, cursor string, msgs []domain.InboxMessage) ([]domain.InboxMessage, error) {
	out, err := s.Connections.TakePlatformMessages(ctx, l, cursor, msgs)
	s.note(mTakePlatformMessages, err)
	return out, err
}

func (s countingStore) PendingPlatformMessages(ctx context.Context, l domain.Lease) ([]domain.InboxMessage, error) {
	out, err := s.Connections.PendingPlatformMessages(ctx, l)
	s.note(mPendingPlatformMessages, err)
	return out, err
}

func (s countingStore) FinishPlatformMessage(ctx context.Context, l domain.Lease, id string) (bool, error) {
	ok, err := s.Connections.FinishPlatformMessage(ctx, l, id)
	s.note(mFinishPlatformMessage, err)
	return ok, err
}

func (s countingStore) PruneAnsweredMessages(ctx context.Context, limit int) (int64, error) {
	n, err := s.Connections.PruneAnsweredMessages(ctx, limit)
	s.note(mPruneAnsweredMessages, err)
	return n, err
}

// echoTurner answers every platform message with "re: <text>"; the bench
// sends none, so it only stands in for the turn service (no run of it
// waits for decisions: the embedded nil Turner is never called).
type echoTurner struct{ connect.Turner }

func (echoTurner) Reply(_ context.Context, in turn.Input) (turn.Result, error) {
	return turn.Result{Text: "re: " + in.Text}, nil
}

// warnLog counts the replicas' warnings and keeps the first of each of a
// few messages, instead of printing ten thousand lines.
type warnLog struct {
	mu    sync.Mutex
	n     int
	seen  []string // the messages kept
	first []string // the first warning of each, with its error
}

// warnHandler is a handler of a warnLog with the attributes of a With.
type warnHandler struct {
	log   *warnLog
	attrs []slog.Attr
}

// keptWarnings is how many messages a warnLog keeps.
const keptWarnings = 6

func (h warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	text := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "error" || a.Key == "reason" {
			text += ": " + a.Value.String()
		}
		return true
	})
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	h.log.n++
	if len(h.log.seen) < keptWarnings && !slices.Contains(h.log.seen, r.Message) {
		h.log.seen = append(h.log.seen, r.Message)
		h.log.first = append(h.log.first, text)
	}
	return nil
}

func (h warnHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnHandler{h.log, slices.Concat(h.attrs, attrs)}
}

func (h warnHandler) WithGroup(string) slog.Handler { return h }

// summary is the count of warnings and the first ones.
func (w *warnLog) summary() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n, slices.Clone(w.first)
}

// thousands writes n with its thousands separated by commas.
func thousands(n int64) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
