package connect

import (
	"context"
	"time"

	"github.com/agentd/agentd/store"
)

// Store is what connections need of persistence; *store.Store implements
// it. Lease-bound writes return store.ErrLeaseLost once the lease is gone.
type Store interface {
	// AgentsChangedSince returns up to limit agents configured at or after
	// since (all of them for a zero since) whose ids follow after, by id.
	AgentsChangedSince(ctx context.Context, since time.Time, after string, limit int) ([]store.Agent, error)
	GetAgent(ctx context.Context, accountID, id string) (store.Agent, error)
	// Secrets decrypts an agent's settings.secrets; store.ErrSecretUnreadable
	// when the key cannot open them.
	Secrets(a store.Agent) (store.Secrets, error)

	// AcquireLease returns ok false when another owner holds the lease and
	// store.ErrNotFound when the agent is gone.
	AcquireLease(ctx context.Context, agentID, platform, owner string, ttl time.Duration) (store.Lease, bool, error)
	RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error)
	CheckLease(ctx context.Context, l store.Lease) error
	ReleaseLease(ctx context.Context, l store.Lease, state store.ConnState, reason string) error
	SaveCursor(ctx context.Context, l store.Lease, cursor string) error
	SetConnectionState(ctx context.Context, l store.Lease, state store.ConnState, reason string) error
	// SetIdleConnections stores the states of connections no runner holds
	// (missing credentials), writing only the changed ones.
	SetIdleConnections(ctx context.Context, idle []store.IdleConnection) error
	// ClaimBot returns store.ErrBotInUse when another agent's live
	// connection has the same bot.
	ClaimBot(ctx context.Context, l store.Lease, botID, username string) error
	CountConnectionMessage(ctx context.Context, l store.Lease, in bool) error
	// ClaimPlatformMessage reports whether this is the first claim of the
	// platform message.
	ClaimPlatformMessage(ctx context.Context, agentID, platform, messageID string) (bool, error)

	// FindConversation returns store.ErrConversationNotFound when the agent
	// has no such conversation.
	FindConversation(ctx context.Context, accountID, agentID string, conv store.ConversationRef) (store.Conversation, error)
	DeleteConversation(ctx context.Context, accountID, agentID, id string) (int64, error)
}

var _ Store = (*store.Store)(nil)
