package streamlog

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Config is what a Hub needs; Backend is required.
type Config struct {
	Backend Backend
	Logger  *slog.Logger
	// FlushInterval is the gap between two writes of new events to the
	// Backend (100ms): how far behind its owner a follower on another
	// replica is.
	FlushInterval time.Duration
	// PollInterval is the gap between two reads of a follower on another
	// replica (100ms).
	PollInterval time.Duration
	// CancelInterval is the gap between two checks for cancels sent by
	// other replicas (250ms), made only while the Hub runs streams.
	CancelInterval time.Duration
	// MaxStreamBytes bounds the events of one stream (DefaultMaxStreamBytes):
	// a stream that passes it is cancelled, as if a client had asked. A
	// stream no longer waits for its client, so nothing else stops a
	// provider that never ends from filling memory and the Backend.
	MaxStreamBytes int
	// Unwatched bounds how long a stream runs on with no client following
	// it on this replica (60s; agentd passes its provider timeout): past
	// it the stream is cancelled. A client that resumes in time stops the
	// clock.
	Unwatched time.Duration
	// LostAfter is how long a stream's owner may go without renewing its
	// heartbeat before the stream is taken for lost, its replica dead
	// (20s). The owner renews every quarter of it while the stream runs;
	// a follower on another replica checks as often, so a lost stream
	// ends within LostAfter and a quarter of its owner's last renewal:
	// before a cancel's wait (30s) runs out. The replicas' clocks must
	// agree within a fraction of it.
	LostAfter time.Duration
	// LostEvent is the last event of a lost stream, which the first
	// follower to find it lost writes (DefaultLostEvent).
	LostEvent []byte
}

// DefaultLostEvent is LostEvent unless configured: an error event in the
// shape of the API's stream events.
var DefaultLostEvent = []byte(`{"type":"error","error":{"code":"STREAM_LOST",` +
	`"message":"The replica writing this stream stopped before the reply ended."}}`)

// DefaultMaxStreamBytes is MaxStreamBytes unless configured: far more than
// a reply of the largest maxTokens, whose events are some 60 bytes a token.
const DefaultMaxStreamBytes = 4 << 20

// Hub runs the streams of one replica. It is safe for concurrent use.
type Hub struct {
	cfg   Config
	owner string

	mu   sync.Mutex
	runs map[string]*Run // by message id: running, or ended and not yet written

	running sync.WaitGroup // runs not ended
	kick    chan struct{}  // asks for a flush now (a stream has its first event)
	stop    chan struct{}
	stopped chan struct{}
}

// New returns a Hub writing to cfg.Backend; Close stops it.
func New(cfg Config) *Hub {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 100 * time.Millisecond
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.CancelInterval <= 0 {
		cfg.CancelInterval = 250 * time.Millisecond
	}
	if cfg.MaxStreamBytes <= 0 {
		cfg.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if cfg.Unwatched <= 0 {
		cfg.Unwatched = time.Minute
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = 20 * time.Second
	}
	if cfg.LostEvent == nil {
		cfg.LostEvent = DefaultLostEvent
	}
	h := &Hub{cfg: cfg, owner: "rep_" + rand.Text(), runs: map[string]*Run{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go h.loop()
	return h
}

// Close waits until ctx ends for the streams running to end by themselves,
// then cancels those left and waits for them, writes what is left to the
// Backend and stops.
func (h *Hub) Close(ctx context.Context) {
	ended := make(chan struct{})
	go func() { h.running.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
		h.mu.Lock()
		for _, r := range h.runs {
			r.cancel()
		}
		h.mu.Unlock()
		<-ended
	}
	close(h.stop)
	<-h.stopped
}

// Start registers a stream the caller runs: cancel stops it (a cancel
// request from any replica calls it). The caller publishes its events and
// must call End.
func (h *Hub) Start(k Key, cancel context.CancelFunc) *Run {
	r := h.start(k, cancel)
	r.unwatched, r.unwatchedFor = time.AfterFunc(h.cfg.Unwatched, cancel), h.cfg.Unwatched
	return r
}

// StartDetached is Start for a stream whose writer goes on whether anyone
// follows it or not (a run its client left on purpose, as a background
// run): Unwatched does not cut it. A cancel, the size bound and Close
// still stop it.
func (h *Hub) StartDetached(k Key, cancel context.CancelFunc) *Run { return h.start(k, cancel) }

// start registers a stream the caller runs, without the unwatched clock.
func (h *Hub) start(k Key, cancel context.CancelFunc) *Run {
	r := &Run{key: k, cancel: cancel, room: h.cfg.MaxStreamBytes, wake: make(chan struct{}),
		ended: make(chan struct{}), visible: make(chan struct{}), kick: h.kick}
	h.running.Add(1)
	h.mu.Lock()
	h.runs[k.MessageID] = r
	h.mu.Unlock()
	return r
}

// End publishes the stream's last event and marks it ended with st.
func (h *Hub) End(r *Run, data []byte, st State) {
	r.mu.Lock()
	r.append(data)
	r.state = State{Done: true, Partial: st.Partial}
	r.mu.Unlock()
	if r.unwatched != nil {
		r.unwatched.Stop()
	}
	close(r.ended)
	h.running.Done()
}

// Follow opens the stream k after the event with id after; the
// Follower's Each writes the events from there to the last. A stream this
// replica runs is followed in memory, another replica's through the
// Backend. ErrNotFound, before anything is written, when the stream is not
// kept.
func (h *Hub) Follow(ctx context.Context, k Key, after int) (*Follower, error) {
	if r := h.local(k); r != nil {
		return &Follower{run: r, next: after}, nil
	}
	var events []Event
	st, err := h.untilFound(ctx, func() (st State, err error) {
		events, st, err = h.cfg.Backend.ReadStream(ctx, k, after)
		return st, err
	})
	if err != nil {
		return nil, err
	}
	return &Follower{hub: h, key: k, next: after, pending: events, state: st}, nil
}

// Cancel stops the stream k wherever it runs, waits for it to end and
// returns its State; a stream already ended is left as it is.
// ErrNotFound when the stream is not kept.
func (h *Hub) Cancel(ctx context.Context, k Key) (State, error) {
	if r := h.local(k); r != nil {
		r.cancel()
		select {
		case <-r.ended:
		case <-ctx.Done():
			return State{}, ctx.Err()
		}
		return r.end(), nil
	}
	st, err := h.untilFound(ctx, func() (State, error) { return h.cfg.Backend.RequestStreamCancel(ctx, k) })
	if err != nil || st.Done {
		return st, err
	}
	return h.awaitEnd(ctx, k)
}

// untilFound runs ask, the Backend's answer about a stream, again every
// poll interval for up to a second while it answers ErrNotFound: another
// replica may be writing the stream still, its first write having lost a
// race for the database. A resume or a cancel of a stream a client holds
// events of must not be refused for that.
func (h *Hub) untilFound(ctx context.Context, ask func() (State, error)) (State, error) {
	deadline := time.Now().Add(time.Second)
	for {
		st, err := ask()
		if !errors.Is(err, ErrNotFound) || time.Now().After(deadline) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, err
		case <-time.After(h.cfg.PollInterval):
		}
	}
}

// awaitEnd polls the Backend until the stream k ended, ending it when its
// owner is found dead.
func (h *Hub) awaitEnd(ctx context.Context, k Key) (State, error) {
	tick := time.NewTicker(h.cfg.PollInterval)
	defer tick.Stop()
	lost := h.lostCheck()
	for {
		if lost.due() {
			if err := h.endIfLost(ctx, k); err != nil {
				return State{}, err
			}
		}
		select {
		case <-ctx.Done():
			return State{}, ctx.Err()
		case <-tick.C:
		}
		_, st, err := h.cfg.Backend.ReadStream(ctx, k, maxEventID)
		if err != nil || st.Done {
			return st, err
		}
	}
}

// lostCheck paces a follower's checks of its stream's owner: due every
// quarter of LostAfter, the first at once (a client resuming after a
// crash need not wait for the first check).
type lostCheck struct {
	every time.Duration
	next  time.Time
}

func (h *Hub) lostCheck() *lostCheck { return &lostCheck{every: h.cfg.LostAfter / 4} }

// due reports whether a check is due, and if so counts it made.
func (c *lostCheck) due() bool {
	now := time.Now()
	if now.Before(c.next) {
		return false
	}
	c.next = now.Add(c.every)
	return true
}

// endIfLost ends the stream k with the lost event when its owner is dead;
// the next read finds it ended. A stream no longer kept is left to that
// read to report.
func (h *Hub) endIfLost(ctx context.Context, k Key) error {
	ended, err := h.cfg.Backend.EndLostStream(ctx, k, h.cfg.LostAfter, h.cfg.LostEvent)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if ended {
		h.cfg.Logger.Warn("stream lost: its replica stopped renewing it", "message_id", k.MessageID)
	}
	return err
}

// maxEventID is past any stream's last event: a read after it returns the
// State alone.
const maxEventID = 1 << 30

// local returns the Run of k on this replica, nil when there is none.
func (h *Hub) local(k Key) *Run {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.runs[k.MessageID]; r != nil && r.key == k {
		return r
	}
	return nil
}

// flushShare bounds the part of the Backend's time the flushes take: after
// a flush that took d, the next one waits at least (flushShare-1)·d, and at
// most maxFlushGap. On SQLite the flushes share the one writer with every
// exchange; a load of streams that makes flushes slow makes them rarer
// (and each chunk of a stream longer), so the writer is never theirs
// alone. The cap keeps followers on other replicas within seconds of the
// stream when the whole machine is slow, not only the Backend.
const (
	flushShare  = 4
	maxFlushGap = 2 * time.Second
)

// flushGap is the wait before the next flush after one that took took.
func flushGap(interval, took time.Duration) time.Duration {
	return max(interval, min((flushShare-1)*took, maxFlushGap))
}

// loop writes new events every FlushInterval, or less often when flushes
// are slow (see flushShare); it writes a stream at once when it gets its
// first event, so the others can find it; it checks for cancels every
// CancelInterval while streams run, renews their heartbeat every quarter
// of LostAfter and prunes the Backend every minute, until Close.
func (h *Hub) loop() {
	defer close(h.stopped)
	flush := time.NewTimer(h.cfg.FlushInterval)
	defer flush.Stop()
	cancels := time.NewTicker(h.cfg.CancelInterval)
	defer cancels.Stop()
	beat := time.NewTicker(h.cfg.LostAfter / 4)
	defer beat.Stop()
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	ctx := context.Background()
	for {
		select {
		case <-h.stop:
			h.flush(ctx, false)
			return
		case <-flush.C:
			took := h.flush(ctx, false)
			flush.Reset(flushGap(h.cfg.FlushInterval, took))
		case <-h.kick:
			h.flush(ctx, true)
		case <-cancels.C:
			h.takeCancels(ctx)
		case <-beat.C:
			h.keep(ctx)
		case <-prune.C:
			if err := h.cfg.Backend.PruneStreams(ctx, time.Now()); err != nil {
				h.cfg.Logger.Warn("prune streams", "error", err)
			}
		}
	}
}

// flush writes the events not yet written of every stream (of the streams
// the Backend does not have yet, when started) in one AppendStreams,
// forgets the streams whose end is written and returns how long it took.
// A failed write is retried at the next flush.
func (h *Hub) flush(ctx context.Context, started bool) time.Duration {
	began := time.Now()
	h.mu.Lock()
	runs := make([]*Run, 0, len(h.runs))
	for _, r := range h.runs {
		runs = append(runs, r)
	}
	h.mu.Unlock()
	var batches []Batch
	var sent []*Run
	var upTo []int
	for _, r := range runs {
		b, n, ok := r.unwritten(h.owner, started)
		if ok {
			batches, sent, upTo = append(batches, b), append(sent, r), append(upTo, n)
		}
	}
	if len(batches) == 0 {
		return time.Since(began)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := h.cfg.Backend.AppendStreams(ctx, batches); err != nil {
		h.cfg.Logger.Warn("write stream events", "streams", len(batches), "error", err)
		return time.Since(began)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, r := range sent {
		if r.written(upTo[i], batches[i].End.Done) {
			delete(h.runs, r.key.MessageID)
		}
	}
	return time.Since(began)
}

// keep renews the heartbeat of the streams this replica runs that the
// Backend has and that have not ended, so followers elsewhere know their
// writer lives through a long silence (a slow tool, a slow provider).
func (h *Hub) keep(ctx context.Context) {
	h.mu.Lock()
	var ids []string
	for id, r := range h.runs {
		if r.alive() {
			ids = append(ids, id)
		}
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.LostAfter/4)
	defer cancel()
	if err := h.cfg.Backend.KeepStreams(ctx, h.owner, ids); err != nil {
		h.cfg.Logger.Warn("renew streams", "streams", len(ids), "error", err)
	}
}

// takeCancels cancels the streams other replicas asked to stop.
func (h *Hub) takeCancels(ctx context.Context) {
	h.mu.Lock()
	n := len(h.runs)
	h.mu.Unlock()
	if n == 0 {
		return
	}
	ids, err := h.cfg.Backend.TakeStreamCancels(ctx, h.owner)
	if err != nil {
		h.cfg.Logger.Warn("read stream cancels", "error", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		if r := h.runs[id]; r != nil {
			r.cancel()
		}
	}
}

// Run is a stream this replica runs.
type Run struct {
	key    Key
	cancel context.CancelFunc
	ended  chan struct{} // closed by End
	// visible is closed once the Backend has the stream: from then on a
	// resume or a cancel sent to any replica finds it.
	visible chan struct{}

	mu     sync.Mutex
	events []Event
	room   int // bytes of events left before the stream is cut
	state  State
	// watchers are the local followers; with none, unwatched runs the
	// clock of Config.Unwatched (nil for a stream started detached).
	watchers     int
	unwatched    *time.Timer
	unwatchedFor time.Duration
	wake         chan struct{}   // closed, and replaced, at each new event
	kick         chan<- struct{} // the Hub's: the first event asks for a flush at once
	flushed      int             // events in the Backend
	created      bool            // the Backend has the stream
}

// Key is the stream's key.
func (r *Run) Key() Key { return r.key }

// alive reports whether the stream is in the Backend and not ended: one
// whose heartbeat matters.
func (r *Run) alive() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.created && !r.state.Done
}

// Publish adds an event to the stream and returns it.
func (r *Run) Publish(data []byte) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.append(data)
}

// append adds an event, and cancels the stream once it passes its size
// bound; r.mu is held.
func (r *Run) append(data []byte) Event {
	if r.room -= len(data); r.room < 0 {
		r.cancel()
	}
	e := Event{ID: len(r.events) + 1, Data: data}
	r.events = append(r.events, e)
	close(r.wake)
	r.wake = make(chan struct{})
	if e.ID == 1 {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	return e
}

// watch counts a follower in (+1) or out (-1): the first stops the
// unwatched clock, the last starts it again.
func (r *Run) watch(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watchers += n
	switch {
	case r.state.Done, r.unwatched == nil:
	case r.watchers == 0:
		r.unwatched.Reset(r.unwatchedFor)
	case r.watchers == n:
		r.unwatched.Stop()
	}
}

// Events returns the stream's events so far.
func (r *Run) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[:len(r.events):len(r.events)]
}

// end returns the State the stream ended with.
func (r *Run) end() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// unwritten is the batch of what the Backend lacks of the stream, the
// count of events it will hold after it, and false when it lacks nothing
// (or, with started, when it has the stream already). A stream without an
// event is not written: its first batch, which creates it in the Backend,
// starts with event 1.
func (r *Run) unwritten(owner string, started bool) (Batch, int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.events)
	if n == 0 || r.created && (started || n == r.flushed) {
		return Batch{}, 0, false
	}
	return Batch{Key: r.key, Owner: owner, Events: r.events[r.flushed:n], End: r.state}, n, true
}

// written records that the Backend holds n events (and the end, when
// done) and reports whether nothing is left to write of an ended stream.
func (r *Run) written(n int, done bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.created {
		close(r.visible)
	}
	r.flushed, r.created = n, true
	return done && n == len(r.events)
}

// Follower reads a stream in order from where it was opened.
type Follower struct {
	run *Run // a local stream; else hub and key
	hub *Hub
	key Key

	next    int // the id of the last event emitted
	pending []Event
	state   State
}

// Sink is where a Follower writes: Emit gets each event; Flush, when set,
// is called once the events at hand are emitted (Emit may then buffer:
// a follower that fell behind sends what it caught up with in one write);
// Ping, when set, is called every PingEvery while the stream goes on (a
// keep-alive), from the follower's own goroutine.
type Sink struct {
	Emit      func(Event) error
	Flush     func() error
	Ping      func() error
	PingEvery time.Duration
}

// emit emits events in order, then flushes, and returns the id of the
// last one emitted (next when none was).
func (s Sink) emit(events []Event, next int) (int, error) {
	for _, e := range events {
		if e.ID <= next {
			continue
		}
		if err := s.Emit(e); err != nil {
			return next, err
		}
		next = e.ID
	}
	if s.Flush == nil || len(events) == 0 {
		return next, nil
	}
	return next, s.Flush()
}

// pinger returns the channel of the sink's pings and its stop; a nil
// channel (never ready) when it has none.
func (s Sink) pinger() (<-chan time.Time, func()) {
	if s.Ping == nil || s.PingEvery <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(s.PingEvery)
	return t.C, t.Stop
}

// emitLost emits the lost event of a lost stream, with the id after the
// follower's last, when the follower emitted no event past before (the id
// its client held) in its last round: the client holds that id for an
// event the dead owner streamed from memory and never wrote, so the lost
// event written under the same id would never reach it.
func (f *Follower) emitLost(sink Sink, before int) error {
	if !f.state.Lost || f.next > before {
		return nil
	}
	_, err := sink.emit([]Event{{ID: f.next + 1, Data: f.hub.cfg.LostEvent}}, f.next)
	return err
}

// Each writes every event in order to sink until the stream's last, ctx
// ends or a write fails.
func (f *Follower) Each(ctx context.Context, sink Sink) error {
	pings, stop := sink.pinger()
	defer stop()
	if f.run != nil {
		return f.eachLocal(ctx, sink, pings)
	}
	return f.eachRemote(ctx, sink, pings)
}

func (f *Follower) eachLocal(ctx context.Context, sink Sink, pings <-chan time.Time) error {
	r := f.run
	r.watch(1)
	defer r.watch(-1)
	// A client that has an event may resume or cancel on any replica, so
	// none is emitted before the Backend has the stream (the flush its
	// first event kicks). An ended stream goes out whole regardless,
	// so a Backend that cannot be written delays the client, not loses it.
	if err := wait(ctx, sink, pings, r.visible, r.ended); err != nil {
		return err
	}
	for {
		r.mu.Lock()
		var events []Event
		if f.next < len(r.events) {
			events = r.events[f.next:]
		}
		done, wake := r.state.Done, r.wake
		r.mu.Unlock()
		var err error
		if f.next, err = sink.emit(events, f.next); err != nil {
			return err
		}
		if done {
			return nil
		}
		if err := wait(ctx, sink, pings, wake, nil); err != nil {
			return err
		}
	}
}

// wait returns when ready or orReady is (a nil one never is), pinging
// sink meanwhile; ctx's error when it ends first, a ping's when one fails.
func wait[T any](ctx context.Context, sink Sink, pings <-chan time.Time, ready <-chan T, orReady <-chan struct{}) error {
	for {
		select {
		case <-ready:
			return nil
		case <-orReady:
			return nil
		case <-pings:
			if err := sink.Ping(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *Follower) eachRemote(ctx context.Context, sink Sink, pings <-chan time.Time) error {
	tick := time.NewTicker(f.hub.cfg.PollInterval)
	defer tick.Stop()
	lost := f.hub.lostCheck()
	for {
		before := f.next
		var err error
		if f.next, err = sink.emit(f.pending, f.next); err != nil {
			return err
		}
		if f.state.Done {
			return f.emitLost(sink, before)
		}
		if lost.due() {
			if err := f.hub.endIfLost(ctx, f.key); err != nil {
				return err
			}
		}
		if err := wait(ctx, sink, pings, tick.C, nil); err != nil {
			return err
		}
		f.pending, f.state, err = f.hub.cfg.Backend.ReadStream(ctx, f.key, f.next)
		if errors.Is(err, ErrNotFound) && f.next > 0 {
			return nil // pruned under us: nothing more will come
		}
		if err != nil {
			return err
		}
	}
}
