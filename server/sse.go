package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/turn"
)

// sseResponse streams a turn's reply as server-sent events. It is the
// response of both Send Message with `stream: true` and the stream path.
type sseResponse struct {
	s    *Server
	ctx  context.Context
	turn *turn.Turn
}

var (
	_ gen.SendMessageResponseObject   = (*sseResponse)(nil)
	_ gen.StreamMessageResponseObject = (*sseResponse)(nil)
)

// VisitSendMessageResponse streams the reply.
func (r *sseResponse) VisitSendMessageResponse(w http.ResponseWriter) error { return r.stream(w) }

// VisitStreamMessageResponse streams the reply.
func (r *sseResponse) VisitStreamMessageResponse(w http.ResponseWriter) error { return r.stream(w) }

// stream starts the run and follows its events, from its start event on,
// with pings while it waits its turn.
func (r *sseResponse) stream(w http.ResponseWriter) error {
	live := r.s.detach(r.ctx, r.turn, true)
	f, err := r.s.streams.Follow(r.ctx, live.key, 0)
	if err != nil {
		return err // only the stream of a run a message was merged into can be gone
	}
	return r.s.followStream(r.ctx, w, f)
}

// resumedStream follows a stream from where the client lost it.
type resumedStream struct {
	s        *Server
	ctx      context.Context
	follower *streamlog.Follower
}

// VisitResumeStreamResponse streams the events.
func (r *resumedStream) VisitResumeStreamResponse(w http.ResponseWriter) error {
	return r.s.followStream(r.ctx, w, r.follower)
}

// afterDecisions follows a run that waits for decisions until it ends:
// its events while it goes on in this process (a decision made here),
// and the event that ends the stream, built from the ended run.
func (s *Server) afterDecisions(ctx context.Context, r domain.Run, publish func(turn.Event)) (any, streamlog.State) {
	stop := s.cfg.Turns.Follow(r.ID, publish)
	defer stop()
	if ended, err := s.cfg.Turns.WaitEnd(ctx, r.AccountID, r.AgentID, r.ID); err == nil {
		r = ended // else the run was deleted: the stream ends with what is known
	}
	return runEnd(r), streamlog.State{Partial: r.Status != domain.RunCompleted}
}

// lastEvent is the event that ends a stream: done (marked partial when a
// cancel cut the reply, or the run before it began) or error.
func (s *Server) lastEvent(ctx context.Context, res turn.Result, err error) (any, streamlog.State) {
	if endedWell(err) {
		partial := res.Partial || err != nil
		done := gen.StreamDoneEvent{Type: gen.StreamEventTypeDone, MessageId: res.MessageID, Metadata: messageMetadata(res.Metadata)}
		if partial {
			done.Partial = &partial
		}
		return done, streamlog.State{Partial: partial}
	}
	env := s.toAPIErrorContext(ctx, err, requestIDFrom(ctx)).envelope()
	return gen.StreamErrorEvent{Type: gen.StreamEventTypeError, Error: gen.Error{
		Code: env.Error.Code, Message: env.Error.Message, Details: detailsOf(env.Error.Details)}}, streamlog.State{}
}

// endedWell reports whether a run whose turn ended with err ends its
// stream with done: it answered, or a cancel stopped it (its context's,
// or its run's while it waited its turn), what it said kept as partial.
func endedWell(err error) bool {
	var stopped *turn.StoppedError
	return err == nil || errors.Is(err, context.Canceled) ||
		errors.As(err, &stopped) && stopped.Run.Status == domain.RunCancelled
}

// lostEvent is the last event of a stream whose replica died before the
// reply ended, written by whichever replica finds it so.
func lostEvent() []byte {
	b, _ := json.Marshal(gen.StreamErrorEvent{Type: gen.StreamEventTypeError, Error: gen.Error{Code: gen.STREAMLOST,
		Message: "The replica running this reply stopped before it ended; what was streamed is as far as it got."}})
	return b // the generated types always encode
}

// eventJSON encodes a stream event; the generated types always encode.
func (s *Server) eventJSON(ctx context.Context, ev any) []byte {
	b, err := json.Marshal(ev)
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "encode stream event", "request_id", requestIDFrom(ctx), "error", err)
	}
	return b
}

// followStream writes the follower's events as server-sent events, each
// with its id, and a ping comment while waiting, until the stream's last
// event or the client going away (which leaves the stream running).
func (s *Server) followStream(ctx context.Context, w http.ResponseWriter, f *streamlog.Follower) error {
	ctx, gone := context.WithCancel(ctx)
	defer gone()
	ev, err := s.openStream(w, gone)
	if err != nil {
		return nil // the client is gone before the first byte
	}
	err = f.Each(ctx, streamlog.Sink{Emit: ev.logEvent, Flush: ev.flush, Ping: ev.ping, PingEvery: s.cfg.PingInterval})
	if err != nil && ctx.Err() == nil {
		// Only reading another replica's events can fail here; the
		// client resumes again.
		s.cfg.Logger.WarnContext(ctx, "follow stream", "request_id", requestIDFrom(ctx), "error", err)
	}
	return nil
}

// openStream sends the status and headers of an event stream and returns
// its writer; a failed write calls gone. An error means the client went
// away before the first byte.
func (s *Server) openStream(w http.ResponseWriter, gone context.CancelFunc) (*eventWriter, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ev := &eventWriter{w: w, rc: http.NewResponseController(w), timeout: s.cfg.StreamWriteTimeout, gone: gone}
	return ev, ev.write("")
}

// streamEvent is the stream event of a turn's event.
func streamEvent(e turn.Event) any {
	switch e.Kind {
	case turn.EventToolCall:
		return gen.StreamToolCallEvent{Type: gen.StreamEventTypeToolCall, Id: e.Call.ID, Name: e.Call.Name,
			Arguments: gen.JSONObject(e.Call.Arguments)}
	case turn.EventToolResult:
		return gen.StreamToolResultEvent{Type: gen.StreamEventTypeToolResult, Id: e.Call.ID, Name: e.Call.Name,
			Ok: e.Call.OK, Result: e.Call.Result}
	case turn.EventRequiresAction:
		return gen.StreamRequiresActionEvent{Type: gen.StreamEventTypeRequiresAction, RunId: e.RunID,
			ToolCalls: waitingCalls(e.Required.ToolCalls), ExpiresAt: timestamp(e.Required.ExpiresAt)}
	}
	return gen.StreamTokenEvent{Type: gen.StreamEventTypeToken, Content: e.Token}
}

// eventWriter serialises the writes of the token callback and the pinger.
// Each frame gets its own write deadline in place of the server's
// WriteTimeout, which a stream outlives by design: without one, a client
// that stops reading would block a write, and this lock, forever; between
// frames there is none. A failed
// write calls gone, so the stream ends as if the client had disconnected.
type eventWriter struct {
	mu      sync.Mutex
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
	gone    context.CancelFunc
}

// logEvent writes one event of a stream's log, with its id, without
// flushing it: the follower flushes once it wrote the events at hand.
func (e *eventWriter) logEvent(ev streamlog.Event) error { return e.send(sseFrame(ev), false) }

// flush sends what logEvent wrote.
func (e *eventWriter) flush() error { return e.send("", true) }

// sseFrame is the server-sent event of a stream's event.
func sseFrame(ev streamlog.Event) string {
	return "id: " + strconv.Itoa(ev.ID) + "\ndata: " + string(ev.Data) + "\n\n"
}

// event writes one `data: <json>` event without an id and flushes it; ev
// is a gen.ChatCompletionStreamEvent or an A2A response.
func (e *eventWriter) event(ev any) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("server: encode stream event: %w", err)
	}
	return e.write("data: " + string(b) + "\n\n")
}

// write writes frame (none, to send just the header) and flushes it
// within the timeout.
func (e *eventWriter) write(frame string) error { return e.send(frame, true) }

// send writes frame, and flushes when flush is set, within the timeout: a
// write that fills the response's buffer sends it too.
func (e *eventWriter) send(frame string, flush bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.rc.SetWriteDeadline(time.Now().Add(e.timeout))
	if errors.Is(err, http.ErrNotSupported) {
		err = nil // a writer without deadlines (httptest.ResponseRecorder) cannot block
	}
	if err == nil && frame != "" {
		_, err = io.WriteString(e.w, frame)
	}
	if err == nil && flush {
		err = e.rc.Flush()
	}
	if err == nil {
		// No deadline between frames: HTTP/2 resets a stream whose
		// deadline passes even when nothing is being written, and a
		// stream may wait long for its next frame (a run's end, a save).
		err = e.rc.SetWriteDeadline(time.Time{})
		if errors.Is(err, http.ErrNotSupported) {
			err = nil
		}
	}
	if err != nil {
		e.gone()
		return fmt.Errorf("server: write stream frame: %w", err)
	}
	return nil
}

// ping writes a `: ping` comment.
func (e *eventWriter) ping() error { return e.write(": ping\n\n") }

// pingEvery writes a `: ping` comment every interval until stopped.
func (e *eventWriter) pingEvery(interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if e.ping() != nil {
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// detailsOf converts envelope details into the generated type.
func detailsOf(d map[string]any) *gen.ErrorDetails {
	if len(d) == 0 {
		return nil
	}
	out := gen.ErrorDetails{AdditionalProperties: d}
	return &out
}
