package streamlog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/streamlog"
)

// backends are the Backends agentd runs with: the database (SQLite and
// PostgreSQL) and Redis.
func backends(t *testing.T, fn func(t *testing.T, b streamlog.Backend)) {
	storetest.Backends(t, func(t *testing.T, dsn string) { fn(t, storetest.Open(t, dsn).Streams()) })
	t.Run("redis", func(t *testing.T) { fn(t, streamlog.NewRedis(testutil.Redis(t))) })
}

func events(ids ...int) []streamlog.Event {
	out := make([]streamlog.Event, len(ids))
	for i, id := range ids {
		out[i] = streamlog.Event{ID: id, Data: fmt.Appendf(nil, `{"n":%d}`, id)}
	}
	return out
}

func ids(evs []streamlog.Event) []int {
	out := make([]int, len(evs))
	for i, e := range evs {
		out[i] = e.ID
		if want := fmt.Sprintf(`{"n":%d}`, e.ID); string(e.Data) != want {
			panic("event " + want + " read as " + string(e.Data))
		}
	}
	return out
}

// TestBackends: events read back in order after any id, only by the
// stream's own account and agent; cancels reach the owner once and never
// for an ended stream; the end's State is kept.
func TestBackends(t *testing.T) {
	backends(t, func(t *testing.T, b streamlog.Backend) {
		ctx := context.Background()
		k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_" + t.Name()}
		other := streamlog.Key{AccountID: "acct_2", AgentID: "agent_1", MessageID: k.MessageID}
		if _, _, err := b.ReadStream(ctx, k, 0); !errors.Is(err, streamlog.ErrNotFound) {
			t.Fatalf("unknown stream: %v", err)
		}
		testutil.OK(t, b.AppendStreams(ctx, []streamlog.Batch{{Key: k, Owner: "rep_a", Events: events(1, 2)}}))
		testutil.OK(t, b.AppendStreams(ctx, []streamlog.Batch{{Key: k, Owner: "rep_a", Events: events(3)}}))
		got, st, err := b.ReadStream(ctx, k, 1)
		if err != nil || !slices.Equal(ids(got), []int{2, 3}) || st.Done {
			t.Fatalf("read after 1: %v %+v %v", ids(got), st, err)
		}
		if _, _, err := b.ReadStream(ctx, other, 0); !errors.Is(err, streamlog.ErrNotFound) {
			t.Errorf("another account's read: %v", err)
		}
		if _, err := b.RequestStreamCancel(ctx, other); !errors.Is(err, streamlog.ErrNotFound) {
			t.Errorf("another account's cancel: %v", err)
		}
		if st, err := b.RequestStreamCancel(ctx, k); err != nil || st.Done {
			t.Fatalf("cancel: %+v %v", st, err)
		}
		if got, err := b.TakeStreamCancels(ctx, "rep_b"); err != nil || len(got) != 0 {
			t.Errorf("another owner's cancels: %v %v", got, err)
		}
		if got, err := b.TakeStreamCancels(ctx, "rep_a"); err != nil || !slices.Equal(got, []string{k.MessageID}) {
			t.Errorf("owner's cancels: %v %v", got, err)
		}
		if got, err := b.TakeStreamCancels(ctx, "rep_a"); err != nil || len(got) != 0 {
			t.Errorf("cancels taken twice: %v %v", got, err)
		}
		end := streamlog.State{Done: true, Partial: true}
		testutil.OK(t, b.AppendStreams(ctx, []streamlog.Batch{{Key: k, Owner: "rep_a", Events: events(4), End: end}}))
		got, st, err = b.ReadStream(ctx, k, 0)
		if err != nil || !slices.Equal(ids(got), []int{1, 2, 3, 4}) || st != end {
			t.Fatalf("read ended: %v %+v %v", ids(got), st, err)
		}
		if st, err := b.RequestStreamCancel(ctx, k); err != nil || st != end {
			t.Errorf("cancel of an ended stream: %+v %v", st, err)
		}
		if got, _ := b.TakeStreamCancels(ctx, "rep_a"); len(got) != 0 {
			t.Errorf("an ended stream's cancel reached its owner: %v", got)
		}
		// Kept Retention after its end, then forgotten (Redis expires it).
		testutil.OK(t, b.PruneStreams(ctx, time.Now().Add(streamlog.Retention-time.Minute)))
		if _, _, err := b.ReadStream(ctx, k, 0); err != nil {
			t.Errorf("pruned before its time: %v", err)
		}
		if _, ok := b.(*streamlog.Redis); !ok {
			testutil.OK(t, b.PruneStreams(ctx, time.Now().Add(streamlog.Retention+time.Minute)))
			if _, _, err := b.ReadStream(ctx, k, 0); !errors.Is(err, streamlog.ErrNotFound) {
				t.Errorf("kept past its retention: %v", err)
			}
		}
	})
}

// TestLostStreams: a stream whose owner's heartbeat is older than the
// silence asked about ends, once, with the event given after its last
// (marked done and partial); a stream kept alive, or done, does not; only
// the stream's own account and agent can end it.
func TestLostStreams(t *testing.T) {
	backends(t, func(t *testing.T, b streamlog.Backend) {
		ctx := context.Background()
		k := streamlog.Key{AccountID: "acct_1", AgentID: "agent_1", MessageID: "msg_" + t.Name()}
		lost := []byte(`{"n":3}`)
		testutil.OK(t, b.AppendStreams(ctx, []streamlog.Batch{{Key: k, Owner: "rep_a", Events: events(1, 2)}}))
		if ended, err := b.EndLostStream(ctx, k, time.Minute, lost); err != nil || ended {
			t.Fatalf("a stream just started taken for lost: %v %v", ended, err)
		}
		time.Sleep(300 * time.Millisecond)
		testutil.OK(t, b.KeepStreams(ctx, "rep_a", []string{k.MessageID}))
		if ended, err := b.EndLostStream(ctx, k, 200*time.Millisecond, lost); err != nil || ended {
			t.Fatalf("a stream kept alive taken for lost: %v %v", ended, err)
		}
		other := streamlog.Key{AccountID: "acct_2", AgentID: "agent_1", MessageID: k.MessageID}
		if _, err := b.EndLostStream(ctx, other, 0, lost); !errors.Is(err, streamlog.ErrNotFound) {
			t.Fatalf("another account ended the stream: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		if ended, err := b.EndLostStream(ctx, k, 200*time.Millisecond, lost); err != nil || !ended {
			t.Fatalf("a silent stream not ended: %v %v", ended, err)
		}
		if ended, err := b.EndLostStream(ctx, k, 0, []byte(`{"n":4}`)); err != nil || ended {
			t.Fatalf("a lost stream ended twice: %v %v", ended, err)
		}
		got, st, err := b.ReadStream(ctx, k, 0)
		if err != nil || !slices.Equal(ids(got), []int{1, 2, 3}) || st != (streamlog.State{Done: true, Partial: true, Lost: true}) {
			t.Fatalf("read a lost stream: %v %+v %v", ids(got), st, err)
		}

		done := streamlog.Key{AccountID: k.AccountID, AgentID: k.AgentID, MessageID: k.MessageID + "_done"}
		testutil.OK(t, b.AppendStreams(ctx, []streamlog.Batch{{Key: done, Owner: "rep_a", Events: events(1), End: streamlog.State{Done: true}}}))
		time.Sleep(10 * time.Millisecond)
		if ended, err := b.EndLostStream(ctx, done, 0, lost); err != nil || ended {
			t.Fatalf("a stream done taken for lost: %v %v", ended, err)
		}
	})
}
