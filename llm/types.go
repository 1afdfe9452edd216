package llm

import "encoding/json"

// Role is the author of a message in a conversation.
type Role string

// The roles of conversation messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one earlier message of a conversation.
type Message struct {
	Role    Role
	Content string
}

// Options are the sampling options of a call. A nil field is not set and is
// never sent, so the provider's own default applies.
type Options struct {
	Temperature      *float64
	MaxTokens        *int
	TopP             *float64
	FrequencyPenalty *float64
	PresencePenalty  *float64
}

// Request is one question to a model.
type Request struct {
	// Provider is one of Providers; Model is the provider's model name.
	Provider, Model string
	// APIKey, when not empty, is the key of this call (an agent's own key)
	// and wins over the configured one of Provider. It is never logged nor
	// copied into an error.
	APIKey string
	// System is the system prompt (see BuildSystemPrompt); empty sends none.
	System string
	// History holds earlier messages, oldest first.
	History []Message
	// Text is the user's new message, sent last.
	Text string
	// Options are the sampling options (see Character.Options).
	Options Options
	// MaxReplyChars caps the reply, and the stream, at this many characters
	// (runes); 0 means no cap (see Character.MaxReplyChars).
	MaxReplyChars int
	// Tools are offered to the model in the provider's wire format, unless
	// ToolsDone: then the model must answer in text.
	Tools     []Tool
	ToolsDone bool
	// Steps are the tool calls of this turn so far with their results, in
	// call order: they follow Text as the provider's tool messages.
	Steps []ToolStep
}

// Tool is a tool offered to the model.
type Tool struct {
	Name, Description string
	// Parameters is the JSON Schema (type object) of the arguments.
	Parameters json.RawMessage
}

// ToolCall is a call the model asked for.
type ToolCall struct {
	// ID is the provider's id of the call (made up for ollama, which has
	// none), given back with its result.
	ID   string
	Name string
	// Arguments is the arguments as the model wrote them; normally a JSON
	// object, but the model may write anything.
	Arguments string
}

// ToolStep is a call of the turn with its result as the model sees it.
type ToolStep struct {
	Call   ToolCall
	Result string
}

// Usage counts the tokens of one call as the provider reported them; all
// zero when the provider reported nothing.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int
}

// Reply is a model's answer.
type Reply struct {
	// Text is the reply; for Stream, the concatenation of the fragments
	// passed to onToken.
	Text string
	// Usage is the token usage reported by the provider.
	Usage Usage
	// Model is the model that answered, from the provider's reply when it
	// names one, else the requested model.
	Model string
	// ToolCalls are the calls the model asked for, in its order; none when
	// it answered in text only.
	ToolCalls []ToolCall
	// Cut is set when the reply stopped for its length, not because the
	// model was done: the provider's token limit (max tokens), or
	// MaxReplyChars.
	Cut bool
}
