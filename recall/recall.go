package recall

import (
	"context"
	"log/slog"

	"github.com/agentd/agentd/domain"
)

// The bounds of a recall.
const (
	// candidates bounds what a full-text search reads to rank.
	candidates = 200
	// maxReembed bounds the memories or chunks embedded again in one
	// recall when the embedding model changed; the rest follow at later
	// recalls.
	maxReembed = 64
)

// Memories is what recall reads and writes of an agent's memories; the
// store's Memories face implements it.
type Memories interface {
	CreateMemory(ctx context.Context, accountID string, m domain.Memory, terms string, dropOldest bool) (domain.Memory, error)
	CreateMemories(ctx context.Context, accountID string, ms []domain.Memory, terms []string) ([]domain.Memory, error)
	SearchMemories(ctx context.Context, accountID, agentID string, scope []string, terms []string, limit int) ([]domain.Memory, int64, error)
	MemoryVectors(ctx context.Context, accountID, agentID string, scope []string, model string) ([]domain.Memory, error)
	StaleMemories(ctx context.Context, accountID, agentID string, scope []string, model string, limit int) ([]domain.Memory, error)
	SetMemoryEmbeddings(ctx context.Context, agentID, model string, vectors map[string][]float32) error
	// VectorState says how many of the agent's memories model embedded,
	// with a version that changes with them.
	VectorState(ctx context.Context, accountID, agentID, model string) (domain.VectorState, error)
}

// Knowledge is what recall reads and writes of an agent's knowledge; the
// store's Knowledge face implements it.
type Knowledge interface {
	CreateKnowledge(ctx context.Context, accountID, agentID, name string, bytes int64, chunks []domain.KnowledgeChunk, terms []string) (domain.KnowledgeDoc, error)
	SearchKnowledge(ctx context.Context, accountID, agentID string, terms []string, limit int) ([]domain.KnowledgeChunk, int64, error)
	KnowledgeVectors(ctx context.Context, accountID, agentID, model string) ([]domain.KnowledgeChunk, error)
	// VectorState says how many of the agent's chunks model embedded, with
	// a version that changes with them.
	VectorState(ctx context.Context, accountID, agentID, model string) (domain.VectorState, error)
	StaleChunks(ctx context.Context, accountID, agentID, model string, limit int) ([]domain.KnowledgeChunk, error)
	SetChunkEmbeddings(ctx context.Context, agentID, model string, vectors map[string][]float32) error
}

// Embedder embeds texts with an agent's provider; *llm.Client implements
// it.
type Embedder interface {
	// EmbeddingModel is provider's embedding model; false when the
	// provider has no embeddings API.
	EmbeddingModel(provider string) (string, bool)
	Embed(ctx context.Context, provider, apiKey string, texts []string) ([][]float32, string, error)
}

// Agent is whose memories and knowledge a call reads: its account, id and
// provider, with the agent's own key for that provider ("" for the
// server's).
type Agent struct {
	AccountID, ID, Provider, APIKey string
}

// Service finds and stores memories and knowledge. It is safe for
// concurrent use.
type Service struct {
	memories  Memories
	knowledge Knowledge
	embed     Embedder
	logger    *slog.Logger
	cache     *vectorCache
}

// New returns a Service; embed may be nil (full-text ranking only).
func New(memories Memories, knowledge Knowledge, embed Embedder, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.Default()
	}
	return &Service{memories: memories, knowledge: knowledge, embed: embed, logger: logger, cache: newVectorCache(DefaultCacheFloats)}
}

// model is the agent's embedding model; false when it has none.
func (s *Service) model(a Agent) (string, bool) {
	if s.embed == nil {
		return "", false
	}
	return s.embed.EmbeddingModel(a.Provider)
}

// vectors embeds texts for a, best effort: nil when the agent's provider
// has no embeddings or the call failed (logged), so callers fall back to
// full-text ranking.
func (s *Service) vectors(ctx context.Context, a Agent, texts []string) ([][]float32, string) {
	if _, ok := s.model(a); !ok || len(texts) == 0 {
		return nil, ""
	}
	vecs, model, err := s.embed.Embed(ctx, a.Provider, a.APIKey, texts)
	if err != nil || len(vecs) != len(texts) {
		s.logger.WarnContext(ctx, "embedding failed; ranking by full text", "agent", a.ID, "provider", a.Provider, "error", err)
		return nil, ""
	}
	return vecs, model
}

// reembed embeds again, best effort, items the agent's current embedding
// model has not embedded (written before it changed, or when embedding
// failed), at most maxReembed a call, and stores their vectors with set.
func reembed[T any](ctx context.Context, s *Service, a Agent, model string, stale []T, text, id func(T) string,
	set func(map[string][]float32) error) {
	if len(stale) == 0 {
		return
	}
	texts := make([]string, len(stale))
	for i, it := range stale {
		texts[i] = text(it)
	}
	vecs, made := s.vectors(ctx, a, texts)
	if vecs == nil || made != model {
		return
	}
	byID := make(map[string][]float32, len(stale))
	for i, it := range stale {
		byID[id(it)] = vecs[i]
	}
	if err := set(byID); err != nil {
		s.logger.WarnContext(ctx, "embeddings not stored", "agent", a.ID, "error", err)
	}
}
