package streamlog_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/streamlog/streamlogtest"
)

// TestCloseCutsWhatStillRuns: Close gives running streams until its
// context ends, then cancels them, and the ends they write on the way out
// reach the Backend before it returns.
func TestCloseCutsWhatStillRuns(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t)).Streams()
	hub := streamlog.New(streamlog.Config{Backend: st})
	k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_1"}
	ctx, cancel := context.WithCancel(context.Background())
	run := hub.Start(k, cancel)
	run.Publish([]byte(`{"type":"start"}`))
	go func() { // the reply: it runs until it is cancelled
		<-ctx.Done()
		hub.End(run, []byte(`{"type":"done","partial":true}`), streamlog.State{Partial: true})
	}()
	closing, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	hub.Close(closing)
	events, state, err := st.ReadStream(context.Background(), k, 0)
	if err != nil || len(events) != 2 || state != (streamlog.State{Done: true, Partial: true}) {
		t.Fatalf("after Close: %d events, %+v, %v", len(events), state, err)
	}
}

// followSilently follows the stream k from its start and fails unless it
// emits nothing for quiet (the Backend b, which does not have the stream
// yet, says what it holds when it does); it returns the channel of the
// events that come after.
func followSilently(t *testing.T, ctx context.Context, hub *streamlog.Hub, k streamlog.Key, quiet time.Duration, b streamlog.Backend) <-chan streamlog.Event {
	t.Helper()
	follower, err := hub.Follow(ctx, k, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan streamlog.Event, 2)
	go follower.Each(ctx, streamlog.Sink{Emit: func(e streamlog.Event) error { got <- e; return nil }})
	select {
	case e := <-got:
		_, _, err := b.ReadStream(ctx, k, 0)
		t.Fatalf("event %d emitted while the Backend answers %v", e.ID, err)
	case <-time.After(quiet):
	}
	return got
}

// gatedBackend holds every AppendStreams until open is closed.
type gatedBackend struct {
	streamlog.Backend
	open chan struct{}
}

func (g gatedBackend) AppendStreams(ctx context.Context, batches []streamlog.Batch) error {
	select {
	case <-g.open:
		return g.Backend.AppendStreams(ctx, batches)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestNoEventBeforeTheBackendHasTheStream: a client that holds an event
// may resume or cancel it on another replica, so the starting client gets
// nothing until the Backend has the stream; from then on the others find
// it.
func TestNoEventBeforeTheBackendHasTheStream(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t)).Streams()
	gate := gatedBackend{Backend: st, open: make(chan struct{})}
	hub := streamlog.New(streamlog.Config{Backend: gate})
	k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := hub.Start(k, cancel)
	run.Publish([]byte(`{"type":"start"}`))
	got := followSilently(t, ctx, hub, k, 300*time.Millisecond, st)
	close(gate.open)
	e := <-got
	if _, _, err := st.ReadStream(ctx, k, 0); e.ID != 1 || err != nil {
		t.Fatalf("first event %d; the Backend answers %v", e.ID, err)
	}
	hub.End(run, []byte(`{"type":"done"}`), streamlog.State{})
	if e := <-got; e.ID != 2 {
		t.Fatalf("last event %d", e.ID)
	}
	hub.Close(ctx)
}

// slowBackend takes delay for every AppendStreams and counts them.
type slowBackend struct {
	streamlog.Backend
	delay   time.Duration
	appends atomic.Int64
}

func (b *slowBackend) AppendStreams(ctx context.Context, batches []streamlog.Batch) error {
	b.appends.Add(1)
	time.Sleep(b.delay)
	return b.Backend.AppendStreams(ctx, batches)
}

// TestSlowFlushesComeLessOften: a Backend that takes 50ms a write, under a
// stream with a new event every millisecond, gets a flush every 200ms or
// less often (the flushes take a quarter of its time at most), not one
// after the other every 60ms.
func TestSlowFlushesComeLessOften(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t)).Streams()
	slow := &slowBackend{Backend: st, delay: 50 * time.Millisecond}
	hub := streamlog.New(streamlog.Config{Backend: slow, FlushInterval: 10 * time.Millisecond})
	k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_1"}
	ctx, cancel := context.WithCancel(context.Background())
	run := hub.Start(k, cancel)
	began := time.Now()
	for time.Since(began) < time.Second {
		run.Publish([]byte(`{"type":"token"}`))
		time.Sleep(time.Millisecond)
	}
	n := slow.appends.Load()
	hub.End(run, []byte(`{"type":"done"}`), streamlog.State{})
	hub.Close(ctx)
	if n > 7 {
		t.Errorf("%d flushes in a second of a Backend taking 50ms a write", n)
	}
	events, _, err := st.ReadStream(context.Background(), k, 0)
	if err != nil || len(events) != len(run.Events()) {
		t.Fatalf("the Backend has %d of %d events: %v", len(events), len(run.Events()), err)
	}
}

// TestFollowerFlushesWhatIsAtHandOnce: a follower that finds many events
// waiting emits them all and flushes once, so a client that fell behind
// catches up in one write rather than one per event.
func TestFollowerFlushesWhatIsAtHandOnce(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t)).Streams()
	hub := streamlog.New(streamlog.Config{Backend: st})
	k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := hub.Start(k, cancel)
	for range 50 {
		run.Publish([]byte(`{"type":"token"}`))
	}
	hub.End(run, []byte(`{"type":"done"}`), streamlog.State{})
	follower, err := hub.Follow(ctx, k, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	flushes := 0
	err = follower.Each(ctx, streamlog.Sink{
		Emit:  func(e streamlog.Event) error { ids = append(ids, e.ID); return nil },
		Flush: func() error { flushes++; return nil },
	})
	if err != nil || len(ids) != 41 || ids[0] != 11 || ids[40] != 51 || flushes != 1 {
		t.Fatalf("emitted %d events (%v…), flushed %d times: %v", len(ids), ids[:min(len(ids), 3)], flushes, err)
	}
	hub.Close(ctx)
}

// heldBackend holds AppendStreams while held is set.
type heldBackend struct {
	streamlog.Backend
	held atomic.Bool
}

func (h *heldBackend) AppendStreams(ctx context.Context, batches []streamlog.Batch) error {
	for h.held.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return h.Backend.AppendStreams(ctx, batches)
}

// TestStreamWithoutEventsIsNotVisible: flushes that run before a stream's
// first event do not make it visible: its first event is emitted only once
// the Backend has the stream, so a client never holds an event of a stream
// another replica cannot find.
func TestStreamWithoutEventsIsNotVisible(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t)).Streams()
	held := &heldBackend{Backend: st}
	hub := streamlog.New(streamlog.Config{Backend: held, FlushInterval: time.Millisecond})
	k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := hub.Start(k, cancel)
	time.Sleep(30 * time.Millisecond) // flushes run while the stream has no event
	held.held.Store(true)
	run.Publish([]byte(`{"type":"start"}`))
	got := followSilently(t, ctx, hub, k, 200*time.Millisecond, st)
	held.held.Store(false)
	if e := <-got; e.ID != 1 {
		t.Fatalf("first event %d", e.ID)
	}
	if _, _, err := st.ReadStream(ctx, k, 0); err != nil {
		t.Fatalf("the Backend answers %v once the first event is out", err)
	}
	hub.End(run, []byte(`{"type":"done"}`), streamlog.State{})
	hub.Close(ctx)
}

// lateBackend answers ErrNotFound to the first hide reads and cancels of
// any stream, as a replica's database may before another replica's first
// write of the stream shows.
type lateBackend struct {
	streamlog.Backend
	hide atomic.Int32
}

func (b *lateBackend) ReadStream(ctx context.Context, k streamlog.Key, after int) ([]streamlog.Event, streamlog.State, error) {
	if b.hide.Add(-1) >= 0 {
		return nil, streamlog.State{}, streamlog.ErrNotFound
	}
	return b.Backend.ReadStream(ctx, k, after)
}

func (b *lateBackend) RequestStreamCancel(ctx context.Context, k streamlog.Key) (streamlog.State, error) {
	if b.hide.Add(-1) >= 0 {
		return streamlog.State{}, streamlog.ErrNotFound
	}
	return b.Backend.RequestStreamCancel(ctx, k)
}

// TestAStreamNotYetSeenIsAskedForAgain: a resume or a cancel on a replica
// whose Backend does not show the stream yet asks again before answering
// not found; a stream that is not kept is not found.
func TestAStreamNotYetSeenIsAskedForAgain(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t)).Streams()
	k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_1"}
	err := st.AppendStreams(context.Background(), []streamlog.Batch{{Key: k, Owner: "a",
		Events: []streamlog.Event{{ID: 1, Data: []byte(`{"type":"start"}`)}, {ID: 2, Data: []byte(`{"type":"done"}`)}},
		End:    streamlog.State{Done: true}}})
	if err != nil {
		t.Fatal(err)
	}
	late := &lateBackend{Backend: st}
	hub := streamlog.New(streamlog.Config{Backend: late, PollInterval: 10 * time.Millisecond})
	t.Cleanup(func() { hub.Close(context.Background()) })
	ctx := context.Background()

	late.hide.Store(3)
	follower, err := hub.Follow(ctx, k, 1)
	if err != nil {
		t.Fatalf("resume of a stream shown late: %v", err)
	}
	var got []int
	if err := follower.Each(ctx, streamlog.Sink{Emit: func(e streamlog.Event) error { got = append(got, e.ID); return nil }}); err != nil || len(got) != 1 || got[0] != 2 {
		t.Fatalf("resumed after event 1: %v, %v", got, err)
	}
	late.hide.Store(3)
	if st, err := hub.Cancel(ctx, k); err != nil || !st.Done {
		t.Fatalf("cancel of a stream shown late: %+v, %v", st, err)
	}
	unknown := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_none"}
	if _, err := hub.Follow(ctx, unknown, 0); !errors.Is(err, streamlog.ErrNotFound) {
		t.Fatalf("resume of a stream not kept: %v", err)
	}
	if _, err := hub.Cancel(ctx, unknown); !errors.Is(err, streamlog.ErrNotFound) {
		t.Fatalf("cancel of a stream not kept: %v", err)
	}
}

// TestStreamOfADeadReplicaEnds: a stream whose replica stays alive is
// followed from another replica through silences longer than LostAfter;
// once the replica dies (it stops writing and renewing), a resume and a
// cancel on another replica end it with the lost event, within LostAfter
// and a check, and the stream is done (security review N5).
func TestStreamOfADeadReplicaEnds(t *testing.T) {
	backends(t, func(t *testing.T, b streamlog.Backend) {
		const lostAfter = 400 * time.Millisecond
		lostEvent := []byte(`{"type":"error","error":{"code":"STREAM_LOST"}}`)
		writer := &streamlogtest.Dying{Backend: b}
		cfg := streamlog.Config{FlushInterval: 10 * time.Millisecond, PollInterval: 10 * time.Millisecond,
			LostAfter: lostAfter, LostEvent: lostEvent}
		wcfg, fcfg := cfg, cfg
		wcfg.Backend, fcfg.Backend = writer, b
		dying, other := streamlog.New(wcfg), streamlog.New(fcfg)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		keys := []streamlog.Key{
			{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_resumed" + t.Name()},
			{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_cancelled" + t.Name()},
		}
		var runs []*streamlog.Run
		for _, k := range keys {
			run := dying.Start(k, func() {})
			run.Publish([]byte(`{"type":"start"}`))
			runs = append(runs, run)
		}
		got := make(chan streamlog.Event, 10)
		var follower *streamlog.Follower
		for follower == nil { // until the Backend has it
			follower, _ = other.Follow(ctx, keys[0], 0)
		}
		ended := make(chan error, 1)
		go func() {
			ended <- follower.Each(ctx, streamlog.Sink{Emit: func(e streamlog.Event) error { got <- e; return nil }})
		}()
		if e := <-got; e.ID != 1 {
			t.Fatalf("first event %d", e.ID)
		}
		select { // the writer lives: its silence is no loss
		case e := <-got:
			t.Fatalf("event %d (%s) from a live writer that wrote nothing", e.ID, e.Data)
		case <-time.After(3 * lostAfter):
		}

		writer.Kill()
		died := time.Now()
		wait, stop := context.WithTimeout(ctx, 5*lostAfter)
		defer stop()
		if st, err := other.Cancel(wait, keys[1]); err != nil || st != (streamlog.State{Done: true, Partial: true, Lost: true}) {
			t.Fatalf("cancel of a dead replica's stream: %+v %v", st, err)
		}
		select {
		case e := <-got:
			if e.ID != 2 || string(e.Data) != string(lostEvent) {
				t.Fatalf("event %d %s, want the lost event", e.ID, e.Data)
			}
		case <-time.After(5 * lostAfter):
			t.Fatal("no lost event from a dead replica's stream")
		}
		if err := <-ended; err != nil {
			t.Fatalf("follower: %v", err)
		}
		if took := time.Since(died); took > 3*lostAfter {
			t.Errorf("the stream ended %v after its replica died", took)
		}
		for _, k := range keys {
			if _, st, err := b.ReadStream(ctx, k, 0); err != nil || !st.Done {
				t.Errorf("%s after the loss: %+v %v", k.MessageID, st, err)
			}
		}
		// A client holding ids the dead replica streamed from memory and
		// never wrote still gets the lost event, after its last.
		ahead, err := other.Follow(ctx, keys[0], 7)
		if err != nil {
			t.Fatal(err)
		}
		var last streamlog.Event
		testutil.OK(t, ahead.Each(ctx, streamlog.Sink{Emit: func(e streamlog.Event) error { last = e; return nil }}))
		if last.ID != 8 || string(last.Data) != string(lostEvent) {
			t.Errorf("resumed after 7: last event %d %s, want 8 and the lost event", last.ID, last.Data)
		}
		for _, run := range runs {
			dying.End(run, []byte(`{"type":"done"}`), streamlog.State{})
		}
		dying.Close(ctx)
		other.Close(ctx)
	})
}

// TestDetachedStreamRunsUnwatched: a stream nobody follows is cut after
// Unwatched, unless it was started detached: that one runs on, before any
// follower came and after the last one left, until its writer ends it.
func TestDetachedStreamRunsUnwatched(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t)).Streams()
	hub := streamlog.New(streamlog.Config{Backend: st, Unwatched: 50 * time.Millisecond})
	watchedCtx, cancelWatched := context.WithCancel(context.Background())
	detachedCtx, cancelDetached := context.WithCancel(context.Background())
	watched := hub.Start(streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_watched"}, cancelWatched)
	k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_detached"}
	detached := hub.StartDetached(k, cancelDetached)
	// The writers end their streams when cut, so Close returns.
	go func() {
		<-watchedCtx.Done()
		hub.End(watched, []byte(`{"type":"done","partial":true}`), streamlog.State{Partial: true})
	}()
	finish := make(chan struct{}) // the detached writer's reply is done
	go func() {
		select {
		case <-detachedCtx.Done():
			hub.End(detached, []byte(`{"type":"done","partial":true}`), streamlog.State{Partial: true})
		case <-finish:
			hub.End(detached, []byte(`{"type":"done"}`), streamlog.State{})
		}
	}()
	defer cancelDetached()
	detached.Publish([]byte(`{"type":"start"}`))
	// A follower comes and goes: its leaving starts no clock either.
	follower, err := hub.Follow(context.Background(), k, 0)
	if err != nil {
		t.Fatal(err)
	}
	quick, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	_ = follower.Each(quick, streamlog.Sink{Emit: func(streamlog.Event) error { return nil }})
	select {
	case <-watchedCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the watched stream was not cut")
	}
	time.Sleep(150 * time.Millisecond) // three Unwatched past the follower's leaving
	if detachedCtx.Err() != nil {
		t.Fatal("the detached stream was cut while nobody followed it")
	}
	close(finish)
	hub.Close(context.Background())
	if events, state, err := st.ReadStream(context.Background(), k, 0); err != nil || len(events) != 2 || !state.Done || state.Partial {
		t.Errorf("the detached stream as its writer ended it: %d events, %+v, %v", len(events), state, err)
	}
}
