package server

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/turn"
)

// liveRun is a run of the API that goes on without its caller: its events
// are kept by the streams under key, its outcome arrives on outcome.
type liveRun struct {
	key     streamlog.Key
	outcome <-chan turn.Outcome
}

// detach runs t's run on its own, every run of the API alike (Send Message
// plain, streamed or in the background, Chat Completions, MCP, A2A), and
// keeps its events in the streams under the reply's message id: the start
// event at once, while the run may still be queued, then its tokens and
// tool events, then done or error. So the run's stream shows its tokens
// live on any replica, resumes with Last-Event-ID and replays for as long
// as streams are kept, whoever started it.
//
// The caller going away does not stop the run; a cancel does (the
// message's, from any replica), as do the stream's size bound and the
// server's Close once its drain time is out (a stopping process hands its
// runs over before that: turn.Service.HandOver). watched is set for a
// streamed reply, which is cut when no client has followed it for
// UnwatchedStream; a run its caller left on purpose (background, or a
// wait that ran out) runs on. A message merged
// into a queued run writes nothing: that run's stream is its stream. A
// streamed request's Idempotency-Key is settled when the stream ends.
func (s *Server) detach(ctx context.Context, t *turn.Turn, watched bool) liveRun {
	key := streamlog.Key{AccountID: t.AccountID(), AgentID: t.AgentID(), MessageID: t.ReplyID()}
	if t.Merged() {
		return liveRun{key: key, outcome: s.cfg.Turns.Detach(context.WithoutCancel(ctx), t, func(turn.Event) error { return nil })}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	start := s.streams.StartDetached
	if watched {
		start = s.streams.Start
	}
	run := start(key, cancel)
	run.Publish(s.eventJSON(ctx, gen.StreamStartEvent{Type: gen.StreamEventTypeStart, MessageId: key.MessageID,
		RunId: optional[string](t.Run().ID)}))
	claim := takeStreamClaim(ctx)
	publish := func(e turn.Event) { run.Publish(s.eventJSON(ctx, streamEvent(e))) }
	outcome := s.cfg.Turns.Detach(runCtx, t, func(e turn.Event) error {
		publish(e)
		return nil
	})
	out := make(chan turn.Outcome, 1)
	go func() {
		defer cancel()
		o := <-outcome
		// The outcome is there before the last event is, so a follower
		// that reached the end finds it, and a waiter learns at once of a
		// run that goes on waiting for decisions.
		out <- o
		last, st := s.lastEvent(ctx, o.Result, o.Err)
		if waiting := (*turn.AwaitingDecisionError)(nil); errors.As(o.Err, &waiting) {
			last, st = s.afterDecisions(runCtx, waiting.Run, publish)
		}
		data := s.eventJSON(ctx, last)
		_, done := last.(gen.StreamDoneEvent)
		// The key is settled before any client sees the last event, so a
		// retry sent on seeing it finds the key answered or free.
		events := run.Events()
		claim.settle(ctx, append(events, streamlog.Event{ID: len(events) + 1, Data: data}), done)
		s.streams.End(run, data, st)
	}()
	return liveRun{key: key, outcome: out}
}

// goesOn reports whether a run whose turn ended with err goes on without
// it: it waits for decisions on its tool calls, or this process stopping
// handed it over to be resumed elsewhere. Its caller answers it pending.
func goesOn(err error) bool {
	var waiting *turn.AwaitingDecisionError
	return errors.As(err, &waiting) || errors.Is(err, turn.ErrHandedOver)
}

// waitForRun detaches t's run and waits for its outcome up to RunWait
// (twice the provider timeout), as the synchronous ways in do: ended is
// false when the wait ran out first. ctx ending (the client gone) is the
// error. Either way the run goes on.
func (s *Server) waitForRun(ctx context.Context, t *turn.Turn) (o turn.Outcome, ended bool, err error) {
	outcome := s.detach(ctx, t, false).outcome
	wait := time.NewTimer(s.cfg.RunWait)
	defer wait.Stop()
	select {
	case o = <-outcome:
		return o, true, nil
	case <-wait.C:
		return turn.Outcome{}, false, nil
	case <-ctx.Done():
		return turn.Outcome{}, false, ctx.Err()
	}
}

// awaitReply is waitForRun for the ways in whose shapes have no room for a
// run that goes on (OpenAI's, MCP's): the reply, or why there is none,
// naming the run that goes on: a 409 when it waits for decisions on its
// tool calls, a 504 when it is still going past the wait (or elsewhere).
func (s *Server) awaitReply(ctx context.Context, t *turn.Turn) (turn.Result, error) {
	run := t.Run() // before the run goes on its own
	o, ended, err := s.waitForRun(ctx, t)
	var waiting *turn.AwaitingDecisionError
	switch {
	case err != nil:
		return turn.Result{}, err
	case errors.As(o.Err, &waiting):
		return turn.Result{}, approvalRequired(run)
	case !ended || goesOn(o.Err):
		return turn.Result{}, runPending(run)
	}
	return o.Result, o.Err
}
