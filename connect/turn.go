package connect

import (
	"context"

	"github.com/agentd/agentd/store"
)

// TurnRequest is one platform message to an agent.
type TurnRequest struct {
	AccountID string
	AgentID   string
	Text      string
	// Conv is the chat's conversation: a room for group chats, the
	// speaker's direct conversation for private ones; Platform is set.
	Conv store.ConversationRef
	// UserID is the speaker, "<platform>:<user id>".
	UserID string
	// Channel names the chat for the prompt's context.
	Channel string
	// Post asks for an original post written from the character
	// (postExamples, topics, style, adjectives) instead of an answer; Text
	// is not used and UserID is empty.
	Post bool
	// MaxChars, when positive, is the platform's limit on a message: the
	// reply is shortened to it at a word boundary before it is stored.
	MaxChars int
}

// TurnReply is the agent's answer to a TurnRequest.
type TurnReply struct {
	Text string
}

// Turner answers platform messages through the same path as the API's Send
// Message (history, prompt, provider, metrics, stored exchange). An error
// means there is nothing to send: a provider failure, an agent that cannot
// answer now, or a store failure; its text is never meant for the chat.
type Turner interface {
	Turn(ctx context.Context, req TurnRequest) (TurnReply, error)
}
