package server

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/a2a"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/streamlog"
)

// Stores is what the HTTP layer needs of persistence: one small interface
// per resource, each declared here in package domain's types, so a reader
// sees what a handler may touch. cmd/agentd passes the store's face of the
// same name for each of them.
//
// Every method that touches an agent's data takes the account, so tenancy
// is enforced by the store's queries rather than trusted to the caller.
// Errors are the store's *domain.Error, mapped to the contract by code in
// one table (storeErrors).
type Stores struct {
	Accounts      Accounts
	Idempotency   Idempotency
	Agents        Agents
	Conversations Conversations
	Analytics     Analytics
	Memories      Memories
	Knowledge     Knowledge
	Connections   Connections
	Webhooks      Webhooks
	// Tasks keeps the A2A tasks (see a2a.Tasks).
	Tasks a2a.Tasks
	// Runs are the runs the run endpoints read.
	Runs Runs
	// Schedules are the agents' schedules.
	Schedules Schedules
	// Responses are the responses of the OpenAI Responses API.
	Responses Responses
	// Streams is the database's copy of streamed replies, which every
	// replica reads when Config.Streams (Redis) is nil.
	Streams streamlog.Backend
}

// check names the faces left nil.
func (s Stores) check() error {
	faces := []struct {
		name string
		face any
	}{
		{"Accounts", s.Accounts}, {"Idempotency", s.Idempotency}, {"Agents", s.Agents},
		{"Conversations", s.Conversations}, {"Analytics", s.Analytics}, {"Memories", s.Memories},
		{"Knowledge", s.Knowledge}, {"Connections", s.Connections}, {"Webhooks", s.Webhooks},
		{"Tasks", s.Tasks}, {"Streams", s.Streams}, {"Runs", s.Runs}, {"Schedules", s.Schedules},
		{"Responses", s.Responses},
	}
	var missing []error
	for _, f := range faces {
		if f.face == nil {
			missing = append(missing, errors.New("server: Store."+f.name+" is required"))
		}
	}
	return errors.Join(missing...)
}

// Accounts is what the gate and the readiness check need: API keys and
// the database that holds them.
type Accounts interface {
	// Authenticate resolves an API key; domain.ErrUnauthorized when it is unusable.
	Authenticate(ctx context.Context, plaintext string) (domain.Principal, error)
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
}

// Idempotency keeps the answers of requests made with an Idempotency-Key:
// the gate claims a key, renews it while the request runs, and completes it
// with the answer or releases it.
type Idempotency interface {
	ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRequest) (domain.IdempotencyClaim, error)
	RenewIdempotencyKey(ctx context.Context, accountID, key, token string, lease time.Duration) error
	CompleteIdempotencyKey(ctx context.Context, accountID, key, token string, a domain.IdempotentAnswer) error
	ReleaseIdempotencyKey(ctx context.Context, accountID, key, token string) error
}

// Agents is the agents' CRUD, export and import (agents.go, export.go,
// bundle.go); the other handlers use GetAgent to find an agent first.
type Agents interface {
	CreateAgent(ctx context.Context, a domain.Agent, quota int) (domain.Agent, error)
	GetAgent(ctx context.Context, accountID, id string) (domain.Agent, error)
	// CharacterFile renders a as the character file Export Agent answers:
	// its members without any secret.
	CharacterFile(a domain.Agent) (json.RawMessage, error)
	// GetAgentDocument returns what Get Agent answers, as stored.
	GetAgentDocument(ctx context.Context, accountID, id string) (domain.AgentDocument, error)
	ListAgents(ctx context.Context, accountID string, q domain.ListQuery) ([]domain.AgentSummary, int64, error)
	UpdateAgent(ctx context.Context, accountID, id string, fields map[string]json.RawMessage, status *domain.Status, ifVersion int64) (domain.Agent, []string, error)
	DeleteAgent(ctx context.Context, accountID, id string, ifVersion int64) (domain.Agent, error)
}

// Conversations is an agent's stored history as its endpoints read it
// (conversations.go, bundle.go, streams.go); the turns write it through
// turn.Conversations.
type Conversations interface {
	ListConversations(ctx context.Context, accountID, agentID string, q domain.ConversationQuery) ([]domain.Conversation, int64, error)
	// GetConversation, ListMessages and DeleteConversation return
	// domain.ErrConversationNotFound for a conversation the agent lacks.
	GetConversation(ctx context.Context, accountID, agentID, id string) (domain.Conversation, error)
	ListMessages(ctx context.Context, accountID, agentID, id string, q domain.MessageQuery) ([]domain.Message, int64, error)
	DeleteConversation(ctx context.Context, accountID, agentID, id string) (int64, error)
	// ImportConversation stores a conversation's messages moved from
	// elsewhere; domain.ErrInvalid for an unnamed conversation.
	ImportConversation(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, msgs []domain.Message) error
	// ReplyPartial is the partial flag of the agent's stored reply id;
	// domain.ErrNotFound (resource "message") when there is none.
	ReplyPartial(ctx context.Context, accountID, agentID, id string) (bool, error)
}

// Analytics answers Get Agent Analytics from the hourly rollups.
type Analytics interface {
	AgentAnalytics(ctx context.Context, accountID, agentID string, q domain.AnalyticsQuery) (domain.Analytics, error)
	// AgentSpend and AccountSpend are what was spent this UTC day and
	// month, read from the database at each call.
	AgentSpend(ctx context.Context, accountID, agentID string) (domain.Spend, error)
	AccountSpend(ctx context.Context, accountID string) (domain.Spend, error)
}

// Memories is an agent's long-term memory as its endpoints list and
// forget it; DeleteMemory returns domain.ErrMemoryNotFound for one the
// agent lacks.
type Memories interface {
	ListMemories(ctx context.Context, accountID, agentID string, q domain.MemoryQuery) ([]domain.Memory, int64, error)
	DeleteMemory(ctx context.Context, accountID, agentID, id string) error
	DeleteUserMemories(ctx context.Context, accountID, agentID, userID string) (int64, error)
}

// Knowledge is an agent's knowledge documents as its endpoints list and
// delete them and the export bundles them; DeleteKnowledge returns
// domain.ErrKnowledgeNotFound for one the agent lacks.
type Knowledge interface {
	ListKnowledge(ctx context.Context, accountID, agentID string, page, limit int) ([]domain.KnowledgeDoc, int64, error)
	DeleteKnowledge(ctx context.Context, accountID, agentID, id string) error
	// KnowledgeText returns a document's text as its chunks hold it.
	KnowledgeText(ctx context.Context, accountID, agentID, docID string) (string, error)
}

// Connections is what List Connections reads of the platform connections.
type Connections interface {
	// ListConnections returns the stored platform connections of an agent.
	ListConnections(ctx context.Context, accountID, agentID string) ([]domain.Connection, error)
}

// Webhooks is an account's webhooks and their deliveries. The Webhook ones
// return domain.ErrWebhookNotFound for a webhook the account lacks,
// RetryDelivery domain.ErrDeliveryNotFound for a delivery the webhook
// lacks; CreateWebhook a domain.ErrQuotaExceeded past domain.WebhookQuota.
type Webhooks interface {
	CreateWebhook(ctx context.Context, w domain.Webhook) (domain.Webhook, error)
	GetWebhook(ctx context.Context, accountID, id string) (domain.Webhook, error)
	ListWebhooks(ctx context.Context, accountID string, page, limit int) ([]domain.Webhook, int64, error)
	UpdateWebhook(ctx context.Context, accountID, id string, c domain.WebhookChanges, ifVersion int64) (domain.Webhook, []string, error)
	DeleteWebhook(ctx context.Context, accountID, id string, ifVersion int64) error
	RotateWebhookSecret(ctx context.Context, accountID, id string) (domain.Webhook, error)
	TestWebhook(ctx context.Context, accountID, id string) error
	ListDeliveries(ctx context.Context, accountID, webhookID string, q domain.DeliveryQuery) ([]domain.Delivery, int64, error)
	RetryDelivery(ctx context.Context, accountID, webhookID, deliveryID string) error
}

// Runs are the runs as their endpoints read them; turns write them.
type Runs interface {
	// GetRun returns domain.ErrRunNotFound when the agent has no such run.
	GetRun(ctx context.Context, accountID, agentID, id string) (domain.Run, error)
	ListRuns(ctx context.Context, accountID string, q domain.RunQuery) ([]domain.Run, int64, error)
	// RunOfMessage is the run whose reply is messageID;
	// domain.ErrRunNotFound when none is.
	RunOfMessage(ctx context.Context, accountID, agentID, messageID string) (domain.Run, error)
	// ChildRuns are the runs run id asked with ask_agent, oldest first.
	ChildRuns(ctx context.Context, accountID, id string) ([]domain.Run, error)
}

// Responses keep what the OpenAI Responses API keeps of a response beside
// its run. Each returns domain.ErrResponseNotFound for a response the
// account does not have.
type Responses interface {
	CreateResponse(ctx context.Context, r domain.Response) error
	GetResponse(ctx context.Context, accountID, runID string) (domain.Response, error)
	DeleteResponse(ctx context.Context, accountID, runID string) error
}

// Schedules are an agent's schedules as their endpoints keep them. Each
// returns domain.ErrNotFound for an agent the account lacks, and those
// naming a schedule domain.ErrScheduleNotFound for one the agent lacks;
// CreateSchedule and UpdateSchedule an ErrInvalid naming the member at
// fault, and a domain.ErrQuotaExceeded past domain.ScheduleQuota.
type Schedules interface {
	CreateSchedule(ctx context.Context, sc domain.Schedule) (domain.Schedule, error)
	GetSchedule(ctx context.Context, accountID, agentID, id string) (domain.Schedule, error)
	ListSchedules(ctx context.Context, accountID, agentID string, page, limit int) ([]domain.Schedule, int64, error)
	UpdateSchedule(ctx context.Context, accountID, agentID, id string, c domain.ScheduleChanges) (domain.Schedule, error)
	DeleteSchedule(ctx context.Context, accountID, agentID, id string) error
}
