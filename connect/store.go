package connect

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
)

// Stores is what connections need of persistence, one small interface per
// resource; cmd/agentd passes the faces of its *store.Store. Lease-bound
// writes return domain.ErrLeaseLost once the lease is gone.
type Stores struct {
	Agents        Agents
	Connections   Connections
	Conversations Conversations
	Runs          Runs
}

// Agents is what the supervisor reads of the agents it connects.
type Agents interface {
	// AgentVersionsChangedSince returns the ids, versions and clients of
	// up to limit agents configured at or after since (all of them for a
	// zero since) that follow after (the zero AgentVersion for the first
	// page), by last change then id.
	AgentVersionsChangedSince(ctx context.Context, since time.Time, after domain.AgentVersion, limit int) ([]domain.AgentVersion, error)
	// AgentsByID returns the agents of ids that still exist.
	AgentsByID(ctx context.Context, ids []string) ([]domain.Agent, error)
	// Secrets decrypts an agent's settings.secrets; domain.ErrSecretUnreadable
	// when the key cannot open them.
	Secrets(a domain.Agent) (domain.Secrets, error)
}

// Connections are the leases, states, cursors and inboxes of the
// platform connections.
type Connections interface {
	// AcquireLease returns ok false when another owner holds the lease and
	// domain.ErrNotFound when the agent is gone.
	AcquireLease(ctx context.Context, agentID, platform, owner string, ttl time.Duration) (domain.Lease, bool, error)
	// RenewLeases renews every live lease of owner's in one statement and
	// returns them.
	RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]domain.HeldLease, error)
	// Heartbeat records owner as live and returns how many replicas are.
	Heartbeat(ctx context.Context, owner string, ttl time.Duration) (int, error)
	LeaveReplicas(ctx context.Context, owner string) error
	// LeasedElsewhere returns the connections a live lease of another
	// owner holds.
	LeasedElsewhere(ctx context.Context, owner string) ([]domain.ConnKey, error)
	// ReleaseLeases frees every lease owner holds, in one statement.
	ReleaseLeases(ctx context.Context, owner string) error
	ReleaseLease(ctx context.Context, l domain.Lease, state domain.ConnState, reason string) error
	SaveCursor(ctx context.Context, l domain.Lease, cursor string) error
	SetConnectionState(ctx context.Context, l domain.Lease, state domain.ConnState, reason string) error
	// SetIdleConnections stores the states of connections no runner holds
	// (missing credentials), writing only the changed ones.
	SetIdleConnections(ctx context.Context, idle []domain.IdleConnection) error
	// ClaimBot returns domain.ErrBotInUse when another agent's live
	// connection has the same bot.
	ClaimBot(ctx context.Context, l domain.Lease, botID, username string) error
	CountConnectionMessage(ctx context.Context, l domain.Lease, in bool) error
	// TakePlatformMessages stores messages in the connection's inbox (and
	// the cursor) under the lease and returns the new ones.
	TakePlatformMessages(ctx context.Context, l domain.Lease, cursor string, msgs []domain.InboxMessage) ([]domain.InboxMessage, error)
	PendingPlatformMessages(ctx context.Context, l domain.Lease) ([]domain.InboxMessage, error)
	// FinishPlatformMessage takes a message out of the inbox, remembered
	// as answered, under the lease; false when it was finished before.
	FinishPlatformMessage(ctx context.Context, l domain.Lease, id string) (bool, error)
	PruneAnsweredMessages(ctx context.Context, limit int) (int64, error)
	// RememberContact records that platform user userID, named
	// username, wrote to the agent's bot in private; domain.ErrNotFound
	// when the agent is gone.
	RememberContact(ctx context.Context, agentID, platform, userID, username string) error
	// ContactByUsername returns the id of the user named username who
	// wrote to the agent's bot in private; domain.ErrNotFound when none
	// did.
	ContactByUsername(ctx context.Context, agentID, platform, username string) (string, error)
}

// Conversations is what a platform's /reset command needs.
type Conversations interface {
	// FindConversation returns domain.ErrConversationNotFound when the agent
	// has no such conversation.
	FindConversation(ctx context.Context, accountID, agentID string, conv domain.ConversationRef) (domain.Conversation, error)
	DeleteConversation(ctx context.Context, accountID, agentID, id string) (int64, error)
}

// Runs is what a press of an approval button needs of the runs.
type Runs interface {
	// RunOfWaitingCall returns the agent's run that waits for a decision
	// on call callID; domain.ErrRunNotFound when none does (unknown, or
	// decided already).
	RunOfWaitingCall(ctx context.Context, agentID, callID string) (domain.Run, error)
}
