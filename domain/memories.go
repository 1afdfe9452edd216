package domain

import "time"

// Memory is a fact an agent keeps about one user, or about everyone.
type Memory struct {
	ID             string // "mem_" + lowercase ULID
	AgentID        string
	UserID         string // whom it is about; "" for agent-wide
	Text           string // 1 to MaxMemoryText characters
	Source         string // MemorySourceAgent or MemorySourceAPI
	ConversationID string // where the model saved it; "" for none
	CreatedAt      time.Time
	Embedding      []float32 // nil when none, and as listed or searched
	EmbeddingModel string
}

// The limits of memories.
const (
	MaxMemories   = 10000 // per agent
	MaxMemoryText = 2000  // characters
)

// The sources of a memory: saved by the model during a turn, or through
// the API.
const (
	MemorySourceAgent = "agent"
	MemorySourceAPI   = "api"
)

// MemoryQuery selects a page of an agent's memories, newest first.
type MemoryQuery struct {
	Page, Limit int     // as in ConversationQuery
	UserID      *string // that user's memories only ("" the agent-wide ones); nil for all
}

// VectorState is where the vectors of an agent's memories or chunks
// stand for an embedding model.
type VectorState struct {
	// Total counts the items, Embedded those model embedded.
	Total, Embedded int64
	// Version changes whenever an item is added, removed or embedded again
	// by model, so a copy of the vectors kept in memory can be checked.
	Version string
}
