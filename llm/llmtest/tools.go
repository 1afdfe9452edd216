package llmtest

import (
	"encoding/json"
	"unicode/utf8"
)

// ToolCall is one tool call a reply asks for.
type ToolCall struct {
	// ID is the provider's call id; empty makes one ("call_<n>" for
	// OpenAI, "toolu_<n>" for Anthropic; ollama sends none unless given).
	ID   string
	Name string
	// Arguments is the arguments as the model writes them: normally a JSON
	// object, but tests may give invalid JSON or a non-object on purpose.
	Arguments string
}

// ToolResult is one tool result a request carries.
type ToolResult struct {
	// CallID is the id of the call answered; Name is the tool's name where
	// the format sends it (ollama's tool_name).
	CallID, Name, Content string
}

// input returns the arguments as a JSON object, for the wire formats that
// carry an object rather than text (Anthropic's input, ollama's arguments).
// Arguments that are not a JSON object cannot be carried there and become
// {}; the original text is kept otherwise, so key order survives.
func (c ToolCall) input() json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(c.Arguments), &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(c.Arguments)
}

// halves splits streamed arguments in two pieces, as providers send them in
// several deltas, so that clients must join them. The cut is at a rune
// boundary, since each piece is a JSON string, and empty pieces are dropped:
// providers send none, and langchaingo's openai client takes an arguments
// delta whose arguments are empty for the start of a new call.
func halves(s string) []string {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	switch {
	case s == "":
		return nil
	case i == 0:
		return []string{s}
	}
	return []string{s[:i], s[i:]}
}
