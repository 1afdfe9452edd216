package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentd/agentd/a2a"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/streamlog"
)

// Store is what the HTTP layer needs of persistence. Every method that
// touches an agent's data takes the account, so tenancy is enforced by the
// store's queries rather than trusted to the caller. Errors are the store's
// *domain.Error, mapped to the contract by code in one table (storeErrors).
type Store interface {
	// Authenticate resolves an API key; domain.ErrUnauthorized when it is unusable.
	Authenticate(ctx context.Context, plaintext string) (domain.Principal, error)
	// Ping checks that the database answers.
	Ping(ctx context.Context) error

	// ClaimIdempotencyKey, RenewIdempotencyKey, CompleteIdempotencyKey and
	// ReleaseIdempotencyKey keep the answers of requests made with an
	// Idempotency-Key.
	ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRequest) (domain.IdempotencyClaim, error)
	RenewIdempotencyKey(ctx context.Context, accountID, key, token string, lease time.Duration) error
	CompleteIdempotencyKey(ctx context.Context, accountID, key, token string, a domain.IdempotentAnswer) error
	ReleaseIdempotencyKey(ctx context.Context, accountID, key, token string) error

	// The database keeps streamed replies for every replica when Redis
	// does not (Config.Streams).
	streamlog.Backend
	// ReplyPartial is the partial flag of the agent's stored reply id;
	// domain.ErrNotFound (resource "message") when there is none.
	ReplyPartial(ctx context.Context, accountID, agentID, id string) (bool, error)

	CreateAgent(ctx context.Context, a domain.Agent, quota int) (domain.Agent, error)
	GetAgent(ctx context.Context, accountID, id string) (domain.Agent, error)
	// CharacterFile renders a as the character file Export Agent answers:
	// its members without any secret.
	CharacterFile(a domain.Agent) (json.RawMessage, error)
	// GetAgentDocument returns what Get Agent answers, as stored.
	GetAgentDocument(ctx context.Context, accountID, id string) (domain.AgentDocument, error)
	ListAgents(ctx context.Context, accountID string, q domain.ListQuery) ([]domain.Agent, int64, error)
	UpdateAgent(ctx context.Context, accountID, id string, fields map[string]json.RawMessage, status *domain.Status, ifVersion int64) (domain.Agent, []string, error)
	DeleteAgent(ctx context.Context, accountID, id string, ifVersion int64) (domain.Agent, error)

	ListConversations(ctx context.Context, accountID, agentID string, q domain.ConversationQuery) ([]domain.Conversation, int64, error)
	// GetConversation, ListMessages and DeleteConversation return
	// domain.ErrConversationNotFound for a conversation the agent lacks.
	GetConversation(ctx context.Context, accountID, agentID, id string) (domain.Conversation, error)
	ListMessages(ctx context.Context, accountID, agentID, id string, q domain.MessageQuery) ([]domain.Message, int64, error)
	DeleteConversation(ctx context.Context, accountID, agentID, id string) (int64, error)
	AgentAnalytics(ctx context.Context, accountID, agentID string, q domain.AnalyticsQuery) (domain.Analytics, error)
	// Memories and knowledge: DeleteMemory returns domain.ErrMemoryNotFound
	// and DeleteKnowledge domain.ErrKnowledgeNotFound for one the agent
	// lacks.
	ListMemories(ctx context.Context, accountID, agentID string, q domain.MemoryQuery) ([]domain.Memory, int64, error)
	DeleteMemory(ctx context.Context, accountID, agentID, id string) error
	DeleteUserMemories(ctx context.Context, accountID, agentID, userID string) (int64, error)
	ListKnowledge(ctx context.Context, accountID, agentID string, page, limit int) ([]domain.KnowledgeDoc, int64, error)
	DeleteKnowledge(ctx context.Context, accountID, agentID, id string) error
	// KnowledgeText returns a document's text as its chunks hold it.
	KnowledgeText(ctx context.Context, accountID, agentID, docID string) (string, error)
	// ImportConversation stores a conversation's messages moved from
	// elsewhere; domain.ErrInvalid for an unnamed conversation.
	ImportConversation(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, msgs []domain.Message) error
	// ListConnections returns the stored platform connections of an agent.
	ListConnections(ctx context.Context, accountID, agentID string) ([]domain.Connection, error)
	// Webhooks: the Webhook ones return domain.ErrWebhookNotFound for a
	// webhook the account lacks, RetryDelivery domain.ErrDeliveryNotFound for
	// a delivery the webhook lacks; CreateWebhook a domain.ErrQuotaExceeded past
	// domain.WebhookQuota.
	CreateWebhook(ctx context.Context, w domain.Webhook) (domain.Webhook, error)
	GetWebhook(ctx context.Context, accountID, id string) (domain.Webhook, error)
	ListWebhooks(ctx context.Context, accountID string, page, limit int) ([]domain.Webhook, int64, error)
	UpdateWebhook(ctx context.Context, accountID, id string, c domain.WebhookChanges, ifVersion int64) (domain.Webhook, []string, error)
	DeleteWebhook(ctx context.Context, accountID, id string, ifVersion int64) error
	RotateWebhookSecret(ctx context.Context, accountID, id string) (domain.Webhook, error)
	TestWebhook(ctx context.Context, accountID, id string) error
	ListDeliveries(ctx context.Context, accountID, webhookID string, q domain.DeliveryQuery) ([]domain.Delivery, int64, error)
	RetryDelivery(ctx context.Context, accountID, webhookID, deliveryID string) error
	// A2A tasks (see a2a.Tasks).
	a2a.Tasks
}
