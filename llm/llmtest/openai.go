package llmtest

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// NewOpenAI starts a server speaking the OpenAI chat-completions format
// (POST {URL}/chat/completions), as openai, groq and google's
// OpenAI-compatible endpoint do, and the embeddings API (POST
// {URL}/embeddings).
func NewOpenAI(t testing.TB) *Server {
	loadOpenAISpec(t)
	return newServer(t, openaiFormat{}, "/v1")
}

// loadOpenAISpec loads OpenAI's document before the server answers
// anything: loaded beside the first request, its seconds of work would
// compete with the timeouts the tests measure.
func loadOpenAISpec(t testing.TB) {
	t.Helper()
	if _, err := openaiRouter(); err != nil {
		t.Fatal(err)
	}
}

// NewGoogle starts a server speaking Google's OpenAI-compatible endpoint:
// the OpenAI format, but errors in Google's own shape, a list of one
// {"error": {"code", "message", "status"}}.
func NewGoogle(t testing.TB) *Server {
	loadOpenAISpec(t)
	return newServer(t, googleFormat{}, "/v1")
}

// googleFormat is the OpenAI format with Google's error bodies.
type googleFormat struct{ openaiFormat }

// writeError implements format.
func (googleFormat) writeError(w http.ResponseWriter, r Reply, model string) {
	status, msg := "INVALID_ARGUMENT", "Request contains an invalid argument."
	switch {
	case r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden:
		status, msg = "PERMISSION_DENIED", "API key not valid. Please pass a valid API key."
	case r.Status == http.StatusNotFound:
		status, msg = "NOT_FOUND", fmt.Sprintf("models/%s is not found for API version v1main, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", model)
	case r.Status == http.StatusTooManyRequests:
		status, msg = "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."
	case r.Status >= http.StatusInternalServerError:
		status, msg = "UNAVAILABLE", "The model is overloaded. Please try again later."
	}
	writeJSON(w, r.Status, []any{map[string]any{"error": map[string]any{
		"code": r.Status, "message": r.errorText(msg), "status": r.errorKind(status),
	}}})
}

// openaiFormat is the OpenAI chat-completions wire format.
type openaiFormat struct{}

// path implements format.
func (openaiFormat) path() string { return "/v1/chat/completions" }

// streaming implements format: the request asks for "stream": true.
func (openaiFormat) streaming(body map[string]any) bool {
	stream, _ := body["stream"].(bool)
	return stream
}

// usage is the usage object of a completion.
func (openaiFormat) usage(r Reply) map[string]any {
	return map[string]any{
		"prompt_tokens":     r.PromptTokens,
		"completion_tokens": r.CompletionTokens,
		"total_tokens":      r.PromptTokens + r.CompletionTokens,
	}
}

// writeJSON implements format.
func (f openaiFormat) writeJSON(w http.ResponseWriter, r Reply, model string) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      "chatcmpl-test",
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       f.message(r),
			"finish_reason": f.finishReason(r),
		}},
		"usage":              f.usage(r),
		"system_fingerprint": "fp_test",
	})
}

// message is the assistant message of a complete reply: a tool-use turn
// without text has content null, and its calls carry the arguments as text.
func (openaiFormat) message(r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if r.hasText() {
		msg["content"] = r.text()
	}
	if len(r.ToolCalls) == 0 {
		return msg
	}
	calls := make([]any, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		calls[i] = map[string]any{
			"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
		}
	}
	msg["tool_calls"] = calls
	return msg
}

// finishReason is "tool_calls" for a tool-use turn, else "stop".
func (openaiFormat) finishReason(r Reply) string {
	switch {
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	case r.Cut:
		return "length"
	}
	return "stop"
}

// chunk is one streamed chat.completion.chunk.
func (openaiFormat) chunk(model string, delta map[string]any, finish any) string {
	return "data: " + mustJSON(map[string]any{
		"id":      "chatcmpl-test",
		"object":  "chat.completion.chunk",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	}) + "\n\n"
}

// stream implements format: a role chunk, one chunk per fragment, the
// tool calls, a finish chunk, the usage chunk (langchaingo always asks for
// stream_options.include_usage) and [DONE].
func (f openaiFormat) stream(w http.ResponseWriter, r Reply, model string, out *output) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if !out.send(f.chunk(model, map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	content := func(frag string) string { return f.chunk(model, map[string]any{"content": frag}, nil) }
	failure := "data: " + mustJSON(f.errorBody(r, http.StatusInternalServerError, model)) + "\n\n"
	if !out.text(r.fragments(), content, failure) || !f.streamCalls(r.ToolCalls, model, out) {
		return
	}
	usage := "data: " + mustJSON(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model,
		"choices": []any{}, "usage": f.usage(r),
	}) + "\n\n"
	_ = out.send(f.chunk(model, map[string]any{}, f.finishReason(r))) && out.send(usage) && out.send("data: [DONE]\n\n")
}

// streamCalls streams tool calls as OpenAI does: for each, a chunk opening
// it with its id, type, name and empty arguments, then chunks carrying only
// the call's index and a piece of the arguments.
func (f openaiFormat) streamCalls(calls []ToolCall, model string, out *output) bool {
	for i, c := range calls {
		open := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
		if !out.send(f.chunk(model, f.callDelta(i, open), nil)) {
			return false
		}
		for _, part := range halves(c.Arguments) {
			if !out.send(f.chunk(model, f.callDelta(i, map[string]any{"function": map[string]any{"arguments": part}}), nil)) {
				return false
			}
		}
	}
	return true
}

// callDelta is the delta of a chunk carrying part of the index-th tool call.
func (openaiFormat) callDelta(index int, call map[string]any) map[string]any {
	call["index"] = index
	return map[string]any{"tool_calls": []any{call}}
}

// writeError implements format.
func (f openaiFormat) writeError(w http.ResponseWriter, r Reply, model string) {
	writeJSON(w, r.Status, f.errorBody(r, r.Status, model))
}

// callIDPrefix implements format.
func (openaiFormat) callIDPrefix() string { return "call_" }

// errorBody is OpenAI's error object for a status, as the real API sends it:
// the 401 shows the ends of the key, the 429 the organization id.
func (openaiFormat) errorBody(r Reply, status int, model string) map[string]any {
	typ, code, msg := "invalid_request_error", any(nil), "Invalid request."
	switch status {
	case http.StatusUnauthorized:
		code, msg = "invalid_api_key", "Incorrect API key provided: sk-abc1****************1234. You can find your API key at https://platform.openai.com/account/api-keys."
	case http.StatusForbidden:
		msg = "You are not allowed to sample from this model"
	case http.StatusNotFound:
		code, msg = "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)
	case http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", fmt.Sprintf("Rate limit reached for %s in organization org-abc123 on requests per min (RPM): Limit 3, Used 3, Requested 1.", model)
	case http.StatusBadRequest:
		msg = "Invalid value for 'temperature': expected a number between 0 and 2."
	default:
		if status >= http.StatusInternalServerError {
			typ, msg = "server_error", "The server had an error while processing your request. Sorry about that!"
		}
	}
	return map[string]any{"error": map[string]any{
		"message": r.errorText(msg), "type": r.errorKind(typ), "param": nil, "code": code,
	}}
}
