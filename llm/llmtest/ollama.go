package llmtest

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// NewOllama starts a server speaking ollama's chat API (POST /api/chat) and
// embeddings API (POST /api/embed); URL is the server root, as OLLAMA_HOST.
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

// line is one response object, a stream line or the whole reply, whose
// message has content and calls.
func (f ollamaFormat) line(model, content string, calls []ToolCall, done bool, r Reply) map[string]any {
	v := map[string]any{
		"model":      model,
		"created_at": time.Now().UTC().Format(time.RFC3339Nano),
		"message":    f.message(content, calls),
		"done":       done,
	}
	if done {
		v["done_reason"] = "stop"
		if r.Cut {
			v["done_reason"] = "length"
		}
		v["total_duration"] = 5_000_000
		v["prompt_eval_count"] = r.PromptTokens
		v["eval_count"] = r.CompletionTokens
	}
	return v
}

// message is the assistant message of a line. Ollama sends a call's
// arguments as an object, so arguments that are not a JSON object become {}
// (see input), and a call's id only when the test gave one, as ollama
// versions before ids did.
func (ollamaFormat) message(content string, calls []ToolCall) map[string]any {
	msg := map[string]any{"role": "assistant", "content": content}
	if len(calls) == 0 {
		return msg
	}
	list := make([]any, len(calls))
	for i, c := range calls {
		call := map[string]any{"function": map[string]any{"index": i, "name": c.Name, "arguments": c.input()}}
		if c.ID != "" {
			call["id"] = c.ID
		}
		list[i] = call
	}
	msg["tool_calls"] = list
	return msg
}

// writeJSON implements format.
func (f ollamaFormat) writeJSON(w http.ResponseWriter, r Reply, model string) {
	writeJSON(w, http.StatusOK, f.line(model, r.text(), r.ToolCalls, true, r))
}

// stream implements format: one line per fragment, one line with all the
// tool calls and no content (ollama parses whole calls before sending
// them), then the done line with the usage counts; a failure is an
// {"error": ...} line.
func (f ollamaFormat) stream(w http.ResponseWriter, r Reply, model string, out *output) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	content := func(frag string) string { return mustJSON(f.line(model, frag, nil, false, r)) + "\n" }
	failure := mustJSON(map[string]any{"error": r.errorText("an error was encountered while running the model: unexpected EOF")}) + "\n"
	if !out.text(r.fragments(), content, failure) {
		return
	}
	if len(r.ToolCalls) > 0 && !out.send(mustJSON(f.line(model, "", r.ToolCalls, false, r))+"\n") {
		return
	}
	out.send(mustJSON(f.line(model, "", nil, true, r)) + "\n")
}

// callIDPrefix implements format: ollama makes no ids (recent versions do,
// which tests can mimic by giving ids).
func (ollamaFormat) callIDPrefix() string { return "" }

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
