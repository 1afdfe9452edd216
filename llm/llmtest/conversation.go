package llmtest

import "strings"

// Message is one message of a recorded conversation.
type Message struct {
	Role, Content string
}

// Conversation returns the system prompt and the messages of a recorded
// request in any of the three formats: the system prompt is Anthropic's
// top-level "system" or the messages with role "system"; content given as
// an array of text blocks is joined.
func (r Recorded) Conversation() (system string, msgs []Message) {
	system = text(r.Body["system"])
	items, _ := r.Body["messages"].([]any)
	for _, item := range items {
		m, _ := item.(map[string]any)
		role, _ := m["role"].(string)
		content := text(m["content"])
		if role == "system" {
			system += content
			continue
		}
		msgs = append(msgs, Message{Role: role, Content: content})
	}
	return system, msgs
}

// text reads a content value: a string or an array of {"type":"text"} blocks.
func text(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, block := range c {
			m, _ := block.(map[string]any)
			if t, ok := m["text"].(string); ok {
				b.WriteString(t)
			}
		}
		return b.String()
	}
	return ""
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
