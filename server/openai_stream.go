package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/turn"
	"github.com/oapi-codegen/nullable"
)

// chatStream streams a turn's reply as OpenAI `chat.completion.chunk`
// events: one with the role, one per fragment, one with the finish reason,
// the usage when asked for, then `data: [DONE]`. A failure once the stream
// has started is one `{"error": ...}` event in OpenAI's shape, without
// `[DONE]`, and so is a run that comes to wait for a decision on its tool
// calls (approval_required; the run goes on). The run is the API's
// (detach): the chunks are read from its kept events, which its run
// stream shows too, and like Send Message's stream it goes on when the
// client goes away, for UnwatchedStream.
type chatStream struct {
	s     *Server
	ctx   context.Context
	turn  *turn.Turn
	c     completion
	usage bool // stream_options.include_usage
	// ignored is the agentd-ignored header, nil for none.
	ignored *string
}

var _ gen.CreateChatCompletionResponseObject = (*chatStream)(nil)

// VisitCreateChatCompletionResponse streams the reply.
func (r *chatStream) VisitCreateChatCompletionResponse(w http.ResponseWriter) error {
	run := r.turn.Run() // before the run goes on its own
	live := r.s.detach(r.ctx, r.turn, true)
	f, err := r.s.streams.Follow(r.ctx, live.key, 0)
	if err != nil {
		return err // only the stream of a run a message was merged into can be gone
	}
	ctx, gone := context.WithCancel(r.ctx)
	defer gone()
	if r.ignored != nil {
		w.Header().Set("agentd-ignored", *r.ignored)
	}
	ev, err := r.s.openStream(w, gone)
	if err != nil {
		return nil // the client is gone before the first byte
	}
	role := gen.ChatCompletionAssistantRoleAssistant
	if err := ev.event(r.c.chunk(gen.ChatCompletionChunkDelta{Role: &role, Content: new(string)}, false)); err != nil {
		return nil
	}
	err = f.Each(ctx, streamlog.Sink{Emit: func(e streamlog.Event) error { return r.token(ev, e) },
		Ping: ev.ping, PingEvery: r.s.cfg.PingInterval})
	if errors.Is(err, errAwaitsDecision) {
		return ev.event(approvalRequired(run).openAI())
	}
	var o turn.Outcome
	if err == nil {
		select { // there once the last event is
		case o = <-live.outcome:
		case <-ctx.Done():
		}
	}
	if err != nil || ctx.Err() != nil {
		return nil // nobody to tell, or reading another replica failed: the run goes on
	}
	if !endedWell(o.Err) {
		return ev.event(r.s.toAPIErrorContext(ctx, o.Err, requestIDFrom(ctx)).openAI())
	}
	if err := ev.event(r.c.chunk(gen.ChatCompletionChunkDelta{}, true)); err != nil {
		return nil
	}
	if r.usage {
		usage := r.c.chunk(gen.ChatCompletionChunkDelta{}, false)
		usage.Choices, usage.Usage = []gen.ChatCompletionChunkChoice{}, new(chatUsage(o.Result.Metadata))
		if err := ev.event(usage); err != nil {
			return nil
		}
	}
	return ev.write("data: [DONE]\n\n")
}

// errAwaitsDecision stops following a run that waits for a decision on
// its tool calls: the completion ends there, the run goes on.
var errAwaitsDecision = errors.New("server: the run waits for a decision")

// token writes the run's event e as a chunk when it is a fragment of the
// reply, and stops at a requires_action event (errAwaitsDecision): the
// agent's own tool calls are not the client's, and the end is told from
// the run's outcome, in OpenAI's terms.
func (r *chatStream) token(ev *eventWriter, e streamlog.Event) error {
	var token gen.StreamTokenEvent
	if json.Unmarshal(e.Data, &token) != nil {
		return nil
	}
	switch {
	case token.Type == gen.StreamEventTypeRequiresAction:
		return errAwaitsDecision
	case token.Type != gen.StreamEventTypeToken || token.Content == "":
		return nil
	}
	return ev.event(r.c.chunk(gen.ChatCompletionChunkDelta{Content: &token.Content}, false))
}

// chunk is a chunk of the completion carrying delta; last marks the chunk
// that ends the reply (finish_reason `stop`, null before).
func (c completion) chunk(delta gen.ChatCompletionChunkDelta, last bool) gen.ChatCompletionChunk {
	finish := nullable.NewNullNullable[gen.ChatCompletionChunkFinishReason]()
	if last {
		finish = nullable.NewNullableWithValue(gen.ChatCompletionChunkFinishReasonStop)
	}
	return gen.ChatCompletionChunk{Id: c.id, Object: gen.ChatCompletionChunkObjectChatCompletionChunk, Created: c.created,
		Model: c.model, Choices: []gen.ChatCompletionChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}}
}
