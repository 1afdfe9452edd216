package llmtest

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// NewOllama starts a server speaking ollama's chat API (POST /api/chat);
// URL is the server root, as OLLAMA_HOST.
func NewOllama(t testing.TB) *Server {
	return newServer(t, ollamaFormat{}, "")
}

// ollamaFormat is ollama's /api/chat wire format.
type ollamaFormat struct{}

// path implements format.
func (ollamaFormat) path() string { return "/api/chat" }

// streaming follows ollama: a request streams unless it says "stream": false.
func (ollamaFormat) streaming(body map[string]any) bool {
	stream, ok := body["stream"].(bool)
	return !ok || stream
}

// line is one response object, a stream line or the whole reply.
func (ollamaFormat) line(model, content string, done bool, r Reply) map[string]any {
	v := map[string]any{
		"model":      model,
		"created_at": time.Now().UTC().Format(time.RFC3339Nano),
		"message":    map[string]any{"role": "assistant", "content": content},
		"done":       done,
	}
	if done {
		v["done_reason"] = "stop"
		v["total_duration"] = 5_000_000
		v["prompt_eval_count"] = r.PromptTokens
		v["eval_count"] = r.CompletionTokens
	}
	return v
}

// writeJSON implements format.
func (f ollamaFormat) writeJSON(w http.ResponseWriter, r Reply, model string) {
	writeJSON(w, http.StatusOK, f.line(model, r.text(), true, r))
}

// stream implements format: one line per fragment, then the done line
// with the usage counts; a failure is an {"error": ...} line.
func (f ollamaFormat) stream(w http.ResponseWriter, r Reply, model string, out *output) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	frags := r.fragments()
	failAt := r.failAfter(len(frags))
	for i := 0; i <= len(frags); i++ {
		if i == failAt {
			out.fail(mustJSON(map[string]any{"error": r.errorText("an error was encountered while running the model: unexpected EOF")}) + "\n")
			return
		}
		if i < len(frags) && !out.fragment(mustJSON(f.line(model, frags[i], false, r))+"\n") {
			return
		}
	}
	out.send(mustJSON(f.line(model, "", true, r)) + "\n")
}

// writeError implements format.
func (ollamaFormat) writeError(w http.ResponseWriter, r Reply, model string) {
	msg := "unexpected server error"
	switch r.Status {
	case http.StatusNotFound:
		msg = fmt.Sprintf("model %q not found, try pulling it first", model)
	case http.StatusBadRequest:
		msg = "invalid options"
	case http.StatusUnauthorized:
		msg = "unauthorized"
	case http.StatusTooManyRequests:
		msg = "server busy, please try again. maximum pending requests exceeded"
	case http.StatusInternalServerError:
		msg = "llama runner process has terminated: signal: killed"
	}
	writeJSON(w, r.Status, map[string]any{"error": r.errorText(msg)})
}
