package llmtest

import (
	"fmt"
	"net/http"
	"testing"
)

// NewAnthropic starts a server speaking the Anthropic Messages format
// (POST {URL}/messages).
func NewAnthropic(t testing.TB) *Server {
	return newServer(t, anthropicFormat{}, "/v1")
}

// anthropicFormat is the Anthropic Messages wire format.
type anthropicFormat struct{}

// path implements format.
func (anthropicFormat) path() string { return "/v1/messages" }

// streaming implements format: the request asks for "stream": true.
func (anthropicFormat) streaming(body map[string]any) bool {
	stream, _ := body["stream"].(bool)
	return stream
}

// writeJSON implements format.
func (f anthropicFormat) writeJSON(w http.ResponseWriter, r Reply, model string) {
	var content []any
	if r.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": r.Thinking, "signature": "sig"})
	}
	if r.hasText() {
		content = append(content, map[string]any{"type": "text", "text": r.text()})
	}
	for _, c := range r.ToolCalls {
		// A whole reply carries the input as an object, so arguments that
		// are not a JSON object cannot be sent as written: input() makes {}.
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.input()})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": f.stopReason(r), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.PromptTokens, "output_tokens": r.CompletionTokens},
	})
}

// stopReason is "tool_use" for a tool-use turn, else "end_turn".
func (anthropicFormat) stopReason(r Reply) string {
	switch {
	case len(r.ToolCalls) > 0:
		return "tool_use"
	case r.Cut:
		return "max_tokens"
	}
	return "end_turn"
}

// event is one server-sent event.
func (anthropicFormat) event(name string, data map[string]any) string {
	data["type"] = name
	return "event: " + name + "\ndata: " + mustJSON(data) + "\n\n"
}

// stream implements format: message_start, ping, an optional thinking
// block, the text block, one tool_use block per tool call, message_delta
// with the output usage, message_stop.
func (f anthropicFormat) stream(w http.ResponseWriter, r Reply, model string, out *output) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	start := f.event("message_start", map[string]any{"message": map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.PromptTokens, "output_tokens": 1},
	}})
	if !out.send(start) || !out.send(f.event("ping", map[string]any{})) {
		return
	}
	index := 0
	if r.Thinking != "" {
		if !f.thinkingBlock(r.Thinking, index, out) {
			return
		}
		index++
	}
	index, ok := f.textBlock(r, index, model, out)
	for i := 0; ok && i < len(r.ToolCalls); i++ {
		ok = f.toolBlock(r.ToolCalls[i], index+i, out)
	}
	if !ok {
		return
	}
	_ = out.send(f.event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": f.stopReason(r), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.CompletionTokens},
	})) && out.send(f.event("message_stop", map[string]any{}))
}

// textBlock streams the text block at index, if the reply has one, or
// fails mid-stream with the error event (overloaded_error, the commonest in
// practice). It returns the index of the next block and whether the stream
// goes on.
func (f anthropicFormat) textBlock(r Reply, index int, model string, out *output) (int, bool) {
	failure := f.event("error", f.errorBody(r, 529, model))
	if !r.hasText() {
		// No text block, but a mid-stream failure still comes at its point.
		return index, out.text(nil, nil, failure)
	}
	if !out.send(f.event("content_block_start", map[string]any{
		"index": index, "content_block": map[string]any{"type": "text", "text": ""},
	})) {
		return index, false
	}
	delta := func(frag string) string {
		return f.event("content_block_delta", map[string]any{
			"index": index, "delta": map[string]any{"type": "text_delta", "text": frag},
		})
	}
	if !out.text(r.fragments(), delta, failure) {
		return index, false
	}
	return index + 1, out.send(f.event("content_block_stop", map[string]any{"index": index}))
}

// toolBlock streams a tool_use block: its start with an empty input, the
// arguments in input_json_delta pieces, as written even when they are not
// a JSON object (what a client does with those is what tests want to see),
// and its stop.
func (f anthropicFormat) toolBlock(c ToolCall, index int, out *output) bool {
	if !out.send(f.event("content_block_start", map[string]any{
		"index": index, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}},
	})) {
		return false
	}
	for _, part := range halves(c.Arguments) {
		if !out.send(f.event("content_block_delta", map[string]any{
			"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": part},
		})) {
			return false
		}
	}
	return out.send(f.event("content_block_stop", map[string]any{"index": index}))
}

// thinkingBlock streams a whole thinking block.
func (f anthropicFormat) thinkingBlock(text string, index int, out *output) bool {
	return out.send(f.event("content_block_start", map[string]any{
		"index": index, "content_block": map[string]any{"type": "thinking", "thinking": ""},
	})) && out.send(f.event("content_block_delta", map[string]any{
		"index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": text},
	})) && out.send(f.event("content_block_stop", map[string]any{"index": index}))
}

// writeError implements format.
func (f anthropicFormat) writeError(w http.ResponseWriter, r Reply, model string) {
	writeJSON(w, r.Status, f.errorBody(r, r.Status, model))
}

// callIDPrefix implements format.
func (anthropicFormat) callIDPrefix() string { return "toolu_" }

// errorBody is Anthropic's error object for a status.
func (anthropicFormat) errorBody(r Reply, status int, model string) map[string]any {
	typ, msg := "invalid_request_error", "messages: text content blocks must be non-empty"
	switch status {
	case http.StatusUnauthorized:
		typ, msg = "authentication_error", "invalid x-api-key"
	case http.StatusForbidden:
		typ, msg = "permission_error", "Your API key does not have permission to use the specified resource."
	case http.StatusNotFound:
		typ, msg = "not_found_error", fmt.Sprintf("model: %s", model)
	case http.StatusTooManyRequests:
		typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
	case 529:
		typ, msg = "overloaded_error", "Overloaded"
	default:
		if status >= http.StatusInternalServerError {
			typ, msg = "api_error", "Internal server error"
		}
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": r.errorKind(typ), "message": r.errorText(msg)}}
}
