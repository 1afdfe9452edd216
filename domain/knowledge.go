package domain

import "time"

// KnowledgeDoc is a document given to an agent, stored as chunks.
type KnowledgeDoc struct {
	ID        string // "kn_" + lowercase ULID
	AgentID   string
	Name      string
	Chunks    int
	Bytes     int64 // the document's size, as its quota counts it
	CreatedAt time.Time
}

// KnowledgeChunk is a piece of a document (about 1,000 characters, cut by
// the caller), searched like memories.
type KnowledgeChunk struct {
	ID             string // "kc_" + lowercase ULID
	DocumentID     string
	DocumentName   string
	Text           string
	Seq            int       // its place in the document, from 0
	Embedding      []float32 // nil when none, and as searched
	EmbeddingModel string
}

// The knowledge quota of each agent.
const (
	MaxKnowledgeDocs  = 100
	MaxKnowledgeBytes = 50 << 20 // the documents' bytes, summed
)
