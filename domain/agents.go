package domain

import (
	"encoding/json"
	"time"

	"github.com/agentd/agentd/agent"
)

// Status is an agent's state.
type Status string

// The agent states.
const (
	StatusActive   Status = "active"
	StatusInactive Status = "inactive"
	StatusError    Status = "error"
)

// Valid reports whether st is a known status.
func (st Status) Valid() bool {
	return st == StatusActive || st == StatusInactive || st == StatusError
}

// Agent is one stored agent.
//
// Fields holds every user-settable top-level member of the agent document
// except status (name, bio, personality, ..., modelProvider, model, plugins,
// deleteProtection, character-file members, unknown extra members), each as
// canonical JSON (see store.Canonical). Name, ModelProvider, Model and
// DeleteProtection are derived from Fields on every write, so they can be
// indexed and sorted on; Fields must hold "name" as a non-empty string.
// Read from the store, the values under settings.secrets are in their
// stored form, encrypted when a key is configured: the store's Secrets
// decrypts them.
type Agent struct {
	ID               string // "agent_" + lowercase ULID
	AccountID        string
	Name             string
	ModelProvider    string
	Model            string
	DeleteProtection bool
	Status           Status
	StatusReason     string    // why it is in error
	RetryAt          time.Time // end of the error cool-down; zero when not in error
	Fields           agent.Document
	CreatedAt        time.Time // UTC, millisecond precision
	UpdatedAt        time.Time // UTC, millisecond precision
	Version          int64     // grows with every change Get shows, metrics aside
	KnowledgeDocs    int64     // knowledge documents the agent has
	Metrics          Metrics   // filled by the store's GetAgent only
}

// AgentSummary is what a listing of agents holds of each (List Agents'
// entries): the store reads these columns alone.
type AgentSummary struct {
	ID            string
	Name          string
	ModelProvider string
	Model         string
	Status        Status
	// Clients is the agent's "clients" member as stored (canonical JSON,
	// an array of platform names); nil when the agent has none.
	Clients   json.RawMessage
	CreatedAt time.Time // UTC, millisecond precision
	UpdatedAt time.Time // UTC, millisecond precision
}

// Metrics are an agent's counters, kept on the agent row (no message scans).
type Metrics struct {
	TotalMessages      int64   // messages the agent has answered
	TotalConversations int64   // distinct conversations
	Uptime             float64 // percent (0..100) of the agent's lifetime not spent in error
}

// SortField is what the store's ListAgents orders by.
type SortField string

// The sort fields of the store's ListAgents.
const (
	SortCreatedAt SortField = "createdAt"
	SortName      SortField = "name"
	SortStatus    SortField = "status"
)

// DefaultPageLimit is the page size of a ListQuery without a Limit.
const DefaultPageLimit = 20

// ListQuery selects a page of agents.
type ListQuery struct {
	Page   int       // 1-based; < 1 means 1
	Limit  int       // page size; < 1 means DefaultPageLimit
	Status Status    // "" = every status
	SortBy SortField // "" = SortCreatedAt
	Desc   bool      // descending, ties broken by id descending too
}

// AgentDocument is what Get Agent answers of an agent: Body is the whole
// agent document but its metrics (a JSON object), and Metrics are counted
// at the read, so they are never stale.
type AgentDocument struct {
	Body    json.RawMessage
	Version int64
	Metrics Metrics
}

// Budget is an agent's settings.budget, USD; a nil member sets no budget.
type Budget struct {
	Daily        *float64 `json:"daily"`
	Monthly      *float64 `json:"monthly"`
	PerUserDaily *float64 `json:"perUserDaily"`
}

// Budget is a's settings.budget; the contract checked its shape when it
// was stored, so one that does not decode sets none.
func (a Agent) Budget() Budget {
	var settings struct {
		Budget Budget `json:"budget"`
	}
	if ok, err := a.Fields.Decode("settings", &settings); !ok || err != nil {
		return Budget{}
	}
	return settings.Budget
}
