package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/agentd/agentd/gen"
)

// sseResponse streams a turn's reply as server-sent events. It is the
// response of both Send Message with `stream: true` and the stream path.
type sseResponse struct {
	s    *Server
	ctx  context.Context
	turn *turn
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
// goes away cancels the provider call (the request context ends).
func (r *sseResponse) stream(w http.ResponseWriter) error {
	defer r.turn.release()
	rc := http.NewResponseController(w)
	// A stream outlives the server's write timeout by design.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ev := &eventWriter{w: w, rc: rc}
	if err := rc.Flush(); err != nil {
		return nil // the client is gone before the first byte
	}
	stopPings := ev.pingEvery(r.s.cfg.PingInterval)
	reply, err := r.s.cfg.Replier.Stream(r.ctx, r.turn.llmReq, func(fragment string) error {
		return ev.event(gen.StreamTokenEvent{Type: gen.StreamEventTypeToken, Content: fragment})
	})
	stopPings()
	msg, err := r.s.finishTurn(r.ctx, r.turn, reply, err)
	if r.ctx.Err() != nil {
		return nil // nobody to tell
	}
	if err != nil {
		ae := r.s.toAPIError(err, requestIDFrom(r.ctx))
		env := ae.envelope()
		return ev.event(gen.StreamErrorEvent{Type: gen.StreamEventTypeError, Error: gen.Error{
			Code: env.Error.Code, Message: env.Error.Message, Details: detailsOf(env.Error.Details),
		}})
	}
	return ev.event(gen.StreamDoneEvent{Type: gen.StreamEventTypeDone, MessageId: msg.MessageId, Metadata: msg.Metadata})
}

// eventWriter serialises the writes of the token callback and the pinger.
type eventWriter struct {
	mu sync.Mutex
	w  io.Writer
	rc *http.ResponseController
}

// event writes one `data: <json>` event and flushes it; ev is one of the
// branches of gen.StreamEvent (StreamTokenEvent, StreamDoneEvent,
// StreamErrorEvent).
func (e *eventWriter) event(ev any) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("server: encode stream event: %w", err)
	}
	return e.write("data: " + string(b) + "\n\n")
}

func (e *eventWriter) write(frame string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := io.WriteString(e.w, frame); err != nil {
		return err
	}
	return e.rc.Flush()
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
