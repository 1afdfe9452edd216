package domain

import (
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

// Metrics are an agent's counters, kept on the agent row (no message scans).
type Metrics struct {
	TotalMessages      int64   // messages the agent has answered
	TotalConversations int64   // distinct conversations
	Uptime             float64 // percent (0..100) of the agent's lifetime not spent in error
}
