package recall

import (
	"context"

	"github.com/agentd/agentd/store"
)

// SaveMemory stores m for agent a, with its embedding when the agent's
// provider has one (a memory that could not be embedded is still stored,
// and ranked by full text). At the limit, dropOldest makes room by
// dropping the oldest of its scope; otherwise the store refuses it.
func (s *Service) SaveMemory(ctx context.Context, a Agent, m store.Memory, dropOldest bool) (store.Memory, error) {
	m.AgentID = a.ID
	if vecs, model := s.vectors(ctx, a, []string{m.Text}); vecs != nil {
		m.Embedding, m.EmbeddingModel = vecs[0], model
	}
	return s.store.CreateMemory(ctx, a.AccountID, m, indexTerms(m.Text), dropOldest)
}

// Memories returns at most k of a's memories of scope (user ids, "" for
// agent-wide ones) most relevant to query, best first. With embeddings
// every memory of the scope is ranked by cosine; otherwise only those
// sharing a term with the query, by BM25.
func (s *Service) Memories(ctx context.Context, a Agent, scope []string, query string, k int) ([]store.Memory, error) {
	terms := queryTerms(query)
	found, total, err := s.store.SearchMemories(ctx, a.AccountID, a.ID, scope, terms, candidates)
	if err != nil || total == 0 {
		return nil, err
	}
	if model, ok := s.model(a); ok {
		if q, _ := s.vectors(ctx, a, []string{query}); q != nil {
			s.refreshMemories(ctx, a, scope, model)
			vecs, err := s.store.MemoryVectors(ctx, a.AccountID, a.ID, scope, model)
			if err != nil {
				return nil, err
			}
			if len(vecs) > 0 {
				return rankByVector(q[0], vecs, func(m store.Memory) []float32 { return m.Embedding }, k), nil
			}
		}
	}
	texts := make([]string, len(found))
	for i, m := range found {
		texts[i] = m.Text
	}
	return pick(found, top(bm25(terms, texts, total), k, true)), nil
}

// rankByVector returns the k items closest to q by cosine, best first.
func rankByVector[T any](q []float32, items []T, vec func(T) []float32, k int) []T {
	scores := make([]float64, len(items))
	for i, it := range items {
		scores[i] = cosine(q, vec(it))
	}
	return pick(items, top(scores, k, false))
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
	stale, err := s.store.StaleMemories(ctx, a.AccountID, a.ID, scope, model, maxReembed)
	if err != nil {
		s.logger.Warn("stale memories not read", "agent", a.ID, "error", err)
		return
	}
	reembed(ctx, s, a, model, stale, func(m store.Memory) string { return m.Text }, func(m store.Memory) string { return m.ID },
		func(v map[string][]float32) error { return s.store.SetMemoryEmbeddings(ctx, a.ID, model, v) })
}
