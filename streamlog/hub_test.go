package streamlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/streamlog"
)

// TestCloseCutsWhatStillRuns: Close gives running streams until its
// context ends, then cancels them, and the ends they write on the way out
// reach the Backend before it returns.
func TestCloseCutsWhatStillRuns(t *testing.T) {
	st := storetest.Open(t, storetest.SQLiteDSN(t))
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
