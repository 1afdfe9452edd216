package recall

import (
	"context"
	"slices"

	"github.com/agentd/agentd/domain"
)

// SaveMemory stores m for agent a, with its embedding when the agent's
// provider has one (a memory that could not be embedded is still stored,
// and ranked by full text). At the limit, dropOldest makes room by
// dropping the oldest of its scope; otherwise the store refuses it.
func (s *Service) SaveMemory(ctx context.Context, a Agent, m domain.Memory, dropOldest bool) (domain.Memory, error) {
	m.AgentID = a.ID
	if vecs, model := s.vectors(ctx, a, []string{m.Text}); vecs != nil {
		m.Embedding, m.EmbeddingModel = vecs[0], model
	}
	return s.memories.CreateMemory(ctx, a.AccountID, m, indexTerms(m.Text), dropOldest)
}

// saveBatch bounds the memories SaveMemories embeds in one Embed call
// (which sends them in requests of as many texts as the provider takes)
// and writes in one transaction.
const saveBatch = 500

// SaveMemories stores ms for agent a, as SaveMemory stores each, in
// batches of saveBatch: one Embed call and one transaction each, so many
// memories cost few provider requests and writes. It makes no room: past
// the limit the store refuses the batch. It stops at the first error, and
// before a batch when ctx is done (a client that went away), returning
// ctx's error; the batches stored before stay.
func (s *Service) SaveMemories(ctx context.Context, a Agent, ms []domain.Memory) error {
	for batch := range slices.Chunk(ms, saveBatch) {
		if err := ctx.Err(); err != nil {
			return err
		}
		texts, terms := make([]string, len(batch)), make([]string, len(batch))
		for i, m := range batch {
			texts[i], terms[i] = m.Text, indexTerms(m.Text)
		}
		vecs, model := s.vectors(ctx, a, texts)
		batch = slices.Clone(batch)
		for i := range batch {
			batch[i].AgentID = a.ID
			if vecs != nil {
				batch[i].Embedding, batch[i].EmbeddingModel = vecs[i], model
			}
		}
		if _, err := s.memories.CreateMemories(ctx, a.AccountID, batch, terms); err != nil {
			return err
		}
	}
	return nil
}

// Memories returns at most k of a's memories of scope (user ids, "" for
// agent-wide ones; nil for all) most relevant to query, best first. With
// embeddings every memory of the scope is ranked by cosine; otherwise only
// those sharing a term with the query, by BM25.
func (s *Service) Memories(ctx context.Context, a Agent, scope []string, query string, k int) ([]domain.Memory, error) {
	if model, ok := s.model(a); ok {
		in := inScope(scope)
		found, ok, err := byVectors(ctx, s, a, s.memorySource(a, model), query, func(m domain.Memory) bool { return in(m.UserID) }, k)
		if err != nil || ok {
			return found, err
		}
	}
	terms := queryTerms(query)
	found, total, err := s.memories.SearchMemories(ctx, a.AccountID, a.ID, scope, terms, candidates)
	if err != nil || total == 0 {
		return nil, err
	}
	texts := make([]string, len(found))
	for i, m := range found {
		texts[i] = m.Text
	}
	return pick(found, top(bm25(terms, texts, total), k, true)), nil
}

// memorySource is where the vectors model made of a's memories come from
// (all of them: a recall keeps those of its scope).
func (s *Service) memorySource(a Agent, model string) vectorSource[domain.Memory] {
	return vectorSource[domain.Memory]{
		key: "memories|" + a.ID + "|" + model,
		state: func(ctx context.Context) (domain.VectorState, error) {
			return s.memories.VectorState(ctx, a.AccountID, a.ID, model)
		},
		refresh: func(ctx context.Context) { s.refreshMemories(ctx, a, nil, model) },
		load: func(ctx context.Context) ([]domain.Memory, error) {
			return s.memories.MemoryVectors(ctx, a.AccountID, a.ID, nil, model)
		},
		take: func(m *domain.Memory) []float32 { v := m.Embedding; m.Embedding = nil; return v },
	}
}

// inScope reports whether a memory of userID is in scope; a nil scope
// holds every memory.
func inScope(scope []string) func(userID string) bool {
	return func(userID string) bool { return scope == nil || slices.Contains(scope, userID) }
}

// pick returns items at idx, in idx's order.
func pick[T any](items []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = items[j]
	}
	return out
}

// refreshMemories embeds again the scope's memories that model has not
// embedded.
func (s *Service) refreshMemories(ctx context.Context, a Agent, scope []string, model string) {
	stale, err := s.memories.StaleMemories(ctx, a.AccountID, a.ID, scope, model, maxReembed)
	if err != nil {
		s.logger.WarnContext(ctx, "stale memories not read", "agent", a.ID, "error", err)
		return
	}
	reembed(ctx, s, a, model, stale, func(m domain.Memory) string { return m.Text }, func(m domain.Memory) string { return m.ID },
		func(v map[string][]float32) error { return s.memories.SetMemoryEmbeddings(ctx, a.ID, model, v) })
}
