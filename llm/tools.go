package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// toolCallBuilder gathers the tool calls of a reply from the wire: whole
// calls from a JSON body, or pieces from a stream, where each call has an
// index (OpenAI's tool call index, Anthropic's content block index) and
// its arguments come in fragments.
type toolCallBuilder struct {
	calls []ToolCall
	pos   map[int]int // stream index → place in calls
}

// add appends a whole call.
func (b *toolCallBuilder) add(c ToolCall) { b.calls = append(b.calls, c) }

// piece adds a fragment of the call at stream index: a new index starts a
// call, a known one gets the fragment's id and name when it had none and
// the fragment's arguments appended. A nil index (a provider that numbers
// nothing) continues the last call unless the fragment carries an id.
func (b *toolCallBuilder) piece(index *int, id, name, args string) {
	at, ok := -1, false
	switch {
	case index != nil:
		at, ok = b.pos[*index]
	case id == "" && len(b.calls) > 0:
		at, ok = len(b.calls)-1, true
	}
	if !ok {
		b.calls = append(b.calls, ToolCall{})
		at = len(b.calls) - 1
		if index != nil {
			if b.pos == nil {
				b.pos = map[int]int{}
			}
			b.pos[*index] = at
		}
	}
	c := &b.calls[at]
	if c.ID == "" {
		c.ID = id
	}
	if c.Name == "" {
		c.Name = name
	}
	c.Arguments += args
}

// result returns the calls, each with an id (made up when the provider
// gave none) and "{}" for arguments that never came.
func (b *toolCallBuilder) result() []ToolCall {
	if len(b.calls) == 0 {
		return nil
	}
	out := make([]ToolCall, len(b.calls))
	for i, c := range b.calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d", i)
		}
		if strings.TrimSpace(c.Arguments) == "" {
			c.Arguments = "{}"
		}
		out[i] = c
	}
	return out
}

// offered returns the tools the call offers: none once the turn's tools
// are done.
func offered(req *Request) []Tool {
	if req.ToolsDone {
		return nil
	}
	return req.Tools
}

// toolOptions offers tools through langchaingo. Where the last call must
// still define them (ad.toolsWhenDone) its wire format forbids their use;
// where langchaingo cannot send them (ad.wireTools) the wire format writes
// them.
func toolOptions(req *Request, ad adapter) []llms.CallOption {
	tools := offered(req)
	if ad.toolsWhenDone && req.ToolsDone && len(req.Steps) > 0 {
		tools = req.Tools
	}
	if ad.wireTools || len(tools) == 0 {
		return nil
	}
	defs := make([]llms.Tool, len(tools))
	for i, t := range tools {
		defs[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: schema(t.Parameters)}}
	}
	return []llms.CallOption{llms.WithTools(defs)}
}

// schema is a tool's parameters as a value langchaingo marshals back as
// they are.
func schema(raw json.RawMessage) any {
	if len(raw) == 0 {
		return map[string]any{"type": "object"}
	}
	return raw
}

// stepMessages are the steps as langchaingo messages: each call as an AI
// message followed by its result as a tool message, so a provider sees
// every call answered before the next one (langchaingo's anthropic client
// reads one call per AI message).
func stepMessages(steps []ToolStep) []llms.MessageContent {
	msgs := make([]llms.MessageContent, 0, 2*len(steps))
	for _, s := range steps {
		msgs = append(msgs,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{
				ID: s.Call.ID, Type: "function",
				FunctionCall: &llms.FunctionCall{Name: s.Call.Name, Arguments: s.Call.Arguments}}}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
				ToolCallID: s.Call.ID, Name: s.Call.Name, Content: s.Result}}})
	}
	return msgs
}
