package server

import (
	"context"
	"net/http"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/turn"
	"github.com/oapi-codegen/nullable"
)

// chatStream streams a turn's reply as OpenAI `chat.completion.chunk`
// events: one with the role, one per fragment, one with the finish reason,
// the usage when asked for, then `data: [DONE]`. A failure once the stream
// has started is one `{"error": ...}` event in OpenAI's shape, without
// `[DONE]`. Like Send Message's stream, a client that goes away (or stops
// reading for a whole StreamWriteTimeout) cancels the provider call.
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
	defer r.turn.Release()
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
	stopPings := ev.pingEvery(r.s.cfg.PingInterval)
	res, err := r.s.cfg.Turns.Stream(ctx, r.turn, func(e turn.Event) error {
		if e.Kind != turn.EventToken || e.Token == "" {
			return nil // the agent's own tool calls are not the client's
		}
		return ev.event(r.c.chunk(gen.ChatCompletionChunkDelta{Content: &e.Token}, false))
	})
	stopPings()
	if ctx.Err() != nil {
		return nil // nobody to tell
	}
	if err != nil {
		return ev.event(r.s.toAPIErrorContext(ctx, err, requestIDFrom(ctx)).openAI())
	}
	if err := ev.event(r.c.chunk(gen.ChatCompletionChunkDelta{}, true)); err != nil {
		return nil
	}
	if r.usage {
		usage := r.c.chunk(gen.ChatCompletionChunkDelta{}, false)
		usage.Choices, usage.Usage = []gen.ChatCompletionChunkChoice{}, new(chatUsage(res.Metadata))
		if err := ev.event(usage); err != nil {
			return nil
		}
	}
	return ev.write("data: [DONE]\n\n")
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
