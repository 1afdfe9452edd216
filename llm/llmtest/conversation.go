package llmtest

import (
	"encoding/json"
	"strings"
)

// The readers below take the three request formats by their shape rather
// than by path, since the shapes never clash: tools are OpenAI's and
// ollama's {"function": {...}} or Anthropic's bare definitions; tool calls
// and results are OpenAI's and ollama's message members or Anthropic's
// content blocks; call arguments are OpenAI's text or an object otherwise.

// Message is one message of a recorded conversation.
type Message struct {
	Role, Content string
}

// Conversation returns the system prompt and the messages of a recorded
// request in any of the three formats: the system prompt is Anthropic's
// top-level "system" or the messages with role "system"; content given as
// an array of blocks is the join of its text blocks. Tool calls and tool
// results are no text (see ToolCallsSent and ToolResults): a message made
// of them only has empty content, except OpenAI's and ollama's "tool"
// messages, which keep the result as content.
func (r Recorded) Conversation() (system string, msgs []Message) {
	system = text(r.Body["system"])
	for _, m := range r.messages() {
		role, content := str(m, "role"), text(m["content"])
		if role == "system" {
			system += content
			continue
		}
		msgs = append(msgs, Message{Role: role, Content: content})
	}
	return system, msgs
}

// ToolNames returns the names of the tools the request offered, in order;
// nil when it offered none.
func (r Recorded) ToolNames() []string {
	var names []string
	for _, t := range objects(r.Body["tools"]) {
		names = append(names, str(toolDef(t), "name"))
	}
	return names
}

// ToolSchema returns the JSON schema offered for the tool named name
// (OpenAI's and ollama's function.parameters, Anthropic's input_schema),
// nil when absent.
func (r Recorded) ToolSchema(name string) map[string]any {
	for _, t := range objects(r.Body["tools"]) {
		def := toolDef(t)
		if str(def, "name") != name {
			continue
		}
		if schema, ok := def["parameters"].(map[string]any); ok {
			return schema
		}
		schema, _ := def["input_schema"].(map[string]any)
		return schema
	}
	return nil
}

// toolDef returns the definition in a tools entry: OpenAI's and ollama's
// "function" member, else the Anthropic entry itself.
func toolDef(t map[string]any) map[string]any {
	if fn, ok := t["function"].(map[string]any); ok {
		return fn
	}
	return t
}

// ToolResults returns the tool results the request carries, in order:
// OpenAI's and ollama's "tool" messages (ollama names the tool in
// tool_name) and Anthropic's tool_result blocks, whose content is a string
// or text blocks.
func (r Recorded) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range r.messages() {
		if str(m, "role") == "tool" {
			out = append(out, ToolResult{CallID: str(m, "tool_call_id"), Name: str(m, "tool_name"), Content: text(m["content"])})
			continue
		}
		for _, b := range blocks(m["content"], "tool_result") {
			out = append(out, ToolResult{CallID: str(b, "tool_use_id"), Content: text(b["content"])})
		}
	}
	return out
}

// ToolCallsSent returns the assistant tool calls the request replays
// (OpenAI's and ollama's assistant tool_calls, Anthropic's tool_use
// blocks), in order. Arguments sent as an object are given re-encoded,
// compact and with sorted keys.
func (r Recorded) ToolCallsSent() []ToolCall {
	var out []ToolCall
	for _, m := range r.messages() {
		if str(m, "role") != "assistant" {
			continue
		}
		for _, c := range objects(m["tool_calls"]) {
			fn, _ := c["function"].(map[string]any)
			out = append(out, ToolCall{ID: str(c, "id"), Name: str(fn, "name"), Arguments: arguments(fn["arguments"])})
		}
		for _, b := range blocks(m["content"], "tool_use") {
			out = append(out, ToolCall{ID: str(b, "id"), Name: str(b, "name"), Arguments: arguments(b["input"])})
		}
	}
	return out
}

// arguments returns a call's arguments as text: OpenAI's are a string
// already, Anthropic's and ollama's an object.
func arguments(v any) string {
	switch a := v.(type) {
	case string:
		return a
	case nil:
		return ""
	}
	return mustJSON(v)
}

// ToolChoice returns the request's tool_choice as raw JSON text, "" when
// absent.
func (r Recorded) ToolChoice() string {
	// The raw body rather than Body, so the text is exactly what was sent.
	var top map[string]json.RawMessage
	_ = json.Unmarshal(r.Raw, &top)
	return string(top["tool_choice"])
}

// messages returns the request's messages.
func (r Recorded) messages() []map[string]any {
	return objects(r.Body["messages"])
}

// objects returns the JSON objects of an array value, skipping anything
// else.
func objects(v any) []map[string]any {
	items, _ := v.([]any)
	var out []map[string]any
	for _, item := range items {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// blocks returns the content blocks of type typ in a content value; a
// string content has none.
func blocks(content any, typ string) []map[string]any {
	var out []map[string]any
	for _, b := range objects(content) {
		if str(b, "type") == typ {
			out = append(out, b)
		}
	}
	return out
}

// str returns the string member key of m, "" when absent or no string.
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// text reads a content value: a string or an array of blocks, of which
// only the text blocks count.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	for _, block := range blocks(v, "text") {
		b.WriteString(str(block, "text"))
	}
	return b.String()
}

// Options returns the request's sampling options object: ollama's
// "options", otherwise the body itself.
func (r Recorded) Options() map[string]any {
	if opts, ok := r.Body["options"].(map[string]any); ok {
		return opts
	}
	if _, ok := r.Body["options"]; ok || r.Path == "/api/chat" {
		return map[string]any{}
	}
	return r.Body
}
