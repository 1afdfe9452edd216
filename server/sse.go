package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/agentd/agentd/gen"
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

// stream writes the token events as the provider produces them, a ping
// comment while waiting, and one final done or error event. A client that
// goes away, or stops reading for a whole StreamWriteTimeout, cancels the
// provider call.
func (r *sseResponse) stream(w http.ResponseWriter) error {
	defer r.turn.Release()
	ctx, gone := context.WithCancel(r.ctx)
	defer gone()
	ev, err := r.s.openStream(w, gone)
	if err != nil {
		return nil // the client is gone before the first byte
	}
	stopPings := ev.pingEvery(r.s.cfg.PingInterval)
	res, err := r.s.cfg.Turns.Stream(ctx, r.turn, func(e turn.Event) error { return ev.event(streamEvent(e)) })
	stopPings()
	if ctx.Err() != nil {
		return nil // nobody to tell
	}
	if err != nil {
		ae := r.s.toAPIError(err, requestIDFrom(ctx))
		env := ae.envelope()
		return ev.event(gen.StreamErrorEvent{Type: gen.StreamEventTypeError, Error: gen.Error{
			Code: env.Error.Code, Message: env.Error.Message, Details: detailsOf(env.Error.Details),
		}})
	}
	return ev.event(gen.StreamDoneEvent{Type: gen.StreamEventTypeDone, MessageId: res.MessageID, Metadata: messageMetadata(res.Metadata)})
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
	}
	return gen.StreamTokenEvent{Type: gen.StreamEventTypeToken, Content: e.Token}
}

// eventWriter serialises the writes of the token callback and the pinger.
// Each frame gets its own write deadline in place of the server's
// WriteTimeout, which a stream outlives by design: without one, a client
// that stops reading would block a write, and this lock, forever. A failed
// write calls gone, so the stream ends as if the client had disconnected.
type eventWriter struct {
	mu      sync.Mutex
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
	gone    context.CancelFunc
}

// event writes one `data: <json>` event and flushes it; ev is one of the
// branches of gen.StreamEvent (StreamTokenEvent, StreamDoneEvent,
// StreamErrorEvent) or of gen.ChatCompletionStreamEvent.
func (e *eventWriter) event(ev any) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("server: encode stream event: %w", err)
	}
	return e.write("data: " + string(b) + "\n\n")
}

// write writes frame (none, to send just the header) and flushes it
// within the timeout.
func (e *eventWriter) write(frame string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.rc.SetWriteDeadline(time.Now().Add(e.timeout))
	if errors.Is(err, http.ErrNotSupported) {
		err = nil // a writer without deadlines (httptest.ResponseRecorder) cannot block
	}
	if err == nil {
		_, err = io.WriteString(e.w, frame)
	}
	if err == nil {
		err = e.rc.Flush()
	}
	if err != nil {
		e.gone()
		return fmt.Errorf("server: write stream frame: %w", err)
	}
	return nil
}

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
				if e.write(": ping\n\n") != nil {
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
