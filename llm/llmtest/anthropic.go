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
func (anthropicFormat) writeJSON(w http.ResponseWriter, r Reply, model string) {
	var content []any
	if r.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": r.Thinking, "signature": "sig"})
	}
	content = append(content, map[string]any{"type": "text", "text": r.text()})
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.PromptTokens, "output_tokens": r.CompletionTokens},
	})
}

// event is one server-sent event.
func (anthropicFormat) event(name string, data map[string]any) string {
	data["type"] = name
	return "event: " + name + "\ndata: " + mustJSON(data) + "\n\n"
}

// stream implements format: message_start, ping, an optional thinking
// block, the text block, message_delta with the output usage, message_stop.
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
	if !f.textBlock(r, index, model, out) {
		return
	}
	_ = out.send(f.event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.CompletionTokens},
	})) && out.send(f.event("message_stop", map[string]any{}))
}

// textBlock streams the text block, or fails mid-stream with the error
// event (overloaded_error, the commonest in practice).
func (f anthropicFormat) textBlock(r Reply, index int, model string, out *output) bool {
	if !out.send(f.event("content_block_start", map[string]any{
		"index": index, "content_block": map[string]any{"type": "text", "text": ""},
	})) {
		return false
	}
	frags := r.fragments()
	failAt := r.failAfter(len(frags))
	for i := 0; i <= len(frags); i++ {
		if i == failAt {
			out.fail(f.event("error", f.errorBody(r, 529, model)))
			return false
		}
		if i < len(frags) && !out.fragment(f.event("content_block_delta", map[string]any{
			"index": index, "delta": map[string]any{"type": "text_delta", "text": frags[i]},
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
