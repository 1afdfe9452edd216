package llmtest

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// NewOpenAI starts a server speaking the OpenAI chat-completions format
// (POST {URL}/chat/completions), as openai, groq and google's
// OpenAI-compatible endpoint do.
func NewOpenAI(t testing.TB) *Server {
	return newServer(t, openaiFormat{}, "/v1")
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
			"message":       map[string]any{"role": "assistant", "content": r.text()},
			"finish_reason": "stop",
		}},
		"usage":              f.usage(r),
		"system_fingerprint": "fp_test",
	})
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

// stream implements format: a role chunk, one chunk per fragment, a
// finish chunk, the usage chunk (langchaingo always asks for
// stream_options.include_usage) and [DONE].
func (f openaiFormat) stream(w http.ResponseWriter, r Reply, model string, out *output) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if !out.send(f.chunk(model, map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	frags := r.fragments()
	failAt := r.failAfter(len(frags))
	for i := 0; i <= len(frags); i++ {
		if i == failAt {
			out.fail("data: " + mustJSON(f.errorBody(r, http.StatusInternalServerError, model)) + "\n\n")
			return
		}
		if i < len(frags) && !out.fragment(f.chunk(model, map[string]any{"content": frags[i]}, nil)) {
			return
		}
	}
	usage := "data: " + mustJSON(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model,
		"choices": []any{}, "usage": f.usage(r),
	}) + "\n\n"
	_ = out.send(f.chunk(model, map[string]any{}, "stop")) && out.send(usage) && out.send("data: [DONE]\n\n")
}

// writeError implements format.
func (f openaiFormat) writeError(w http.ResponseWriter, r Reply, model string) {
	writeJSON(w, r.Status, f.errorBody(r, r.Status, model))
}

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
