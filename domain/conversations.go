package domain

import (
	"encoding/json"
	"time"
)

// Role says who wrote a message.
type Role string

// The message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// The platforms a conversation comes from.
const (
	PlatformAPI = "api"
)

// ConversationKind tells a room from a direct conversation.
type ConversationKind string

// The conversation kinds.
const (
	KindRoom   ConversationKind = "room"
	KindDirect ConversationKind = "direct"
)

// ConversationRef names the conversation a message belongs to: the room
// RoomID when set, else the direct conversation with UserID, else none (the
// message is answered without history). Platform is where a new
// conversation comes from (PlatformAPI when empty).
type ConversationRef struct {
	RoomID   string
	UserID   string
	Platform string
}

// Conversation is one stored conversation.
type Conversation struct {
	ID            string // "conv_" + lowercase ULID
	AgentID       string
	Kind          ConversationKind
	RoomID        string // rooms only
	UserID        string // direct conversations only
	Platform      string
	Title         string // the first user message, cut to MaxTitle characters; "" until there is one
	MessageCount  int64  // both sides
	StartedAt     time.Time
	LastMessageAt time.Time
	Summary       string // condenses the oldest Summarized messages; "" for none
	Summarized    int
}

// Message is one stored message of a conversation.
type Message struct {
	ID               string // "msg_" + lowercase ULID; assigned by the store's SaveExchange when empty
	Role             Role
	UserID           string // the user who wrote it, or whom the reply answers
	Text             string
	Model            string // the model that wrote a reply
	PromptTokens     int
	CompletionTokens int
	TokensUsed       int        // a reply's tokens, prompt and completion
	CostMicros       int64      // what a reply cost, in millionths of a US dollar
	ResponseMillis   float64    // a reply's time from request to completion
	Partial          bool       // a reply cut short when its client went away
	CreatedAt        time.Time  // UTC, millisecond precision
	ToolCalls        []ToolCall // a reply's tool calls, in call order
	// RunID is the run that made a reply, as the message.completed event
	// names it; "" when none did.
	RunID string
}

// ToolCall is one tool call of a turn as the API shows it.
type ToolCall struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	OK         bool            `json:"ok"`
	Result     string          `json:"result"`
	DurationMs float64         `json:"durationMs"`
	// Approval is the decision on a call that waited for one; nil for
	// the others.
	Approval *Approval `json:"approval,omitempty"`
}

// Approval is a person's decision on a tool call, or its expiry's.
type Approval struct {
	Approved bool `json:"approved"`
	// By is the deciding key's prefix, the platform user
	// ("telegram:<id>", "discord:<id>") or "expiry"; ByName the platform
	// user's username when known.
	By        string    `json:"by"`
	ByName    string    `json:"byName,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	DecidedAt time.Time `json:"decidedAt"`
}

// ConversationQuery selects a page of an agent's conversations, the most
// recently active first.
type ConversationQuery struct {
	Page, Limit int    // 1-based page; < 1 means 1 and DefaultPageLimit
	UserID      string // conversations in which this user spoke
	RoomID      string // the conversation of this room
	Platform    string // conversations from this platform
	Text        string // conversations with a message containing this text, ignoring case
}

// MaxTitle is the most characters of a conversation's Title.
const MaxTitle = 80

// ConversationTitle is the title a conversation takes from its first user
// message: the text cut to MaxTitle characters.
func ConversationTitle(text string) string { return CutText(text, MaxTitle) }

// CutText is text cut to its first n characters.
func CutText(text string, n int) string {
	count := 0
	for i := range text {
		if count == n {
			return text[:i]
		}
		count++
	}
	return text
}

// MessageQuery selects a page of a conversation's messages.
type MessageQuery struct {
	Page, Limit int  // as in ConversationQuery
	Desc        bool // newest first; oldest first otherwise
}

// MaxImportedMessages bounds the messages one store ImportConversation stores.
const MaxImportedMessages = 10000
