package recall

import (
	"context"

	"github.com/agentd/agentd/domain"
)

// AddKnowledge cuts a document into chunks (Chunk), embeds them when the
// agent's provider can, and stores them with the document.
func (s *Service) AddKnowledge(ctx context.Context, a Agent, name, text string) (domain.KnowledgeDoc, error) {
	parts := Chunk(text, ChunkSize)
	chunks := make([]domain.KnowledgeChunk, len(parts))
	terms := make([]string, len(parts))
	vecs, model := s.vectors(ctx, a, parts)
	for i, p := range parts {
		chunks[i] = domain.KnowledgeChunk{Text: p, Seq: i}
		if vecs != nil {
			chunks[i].Embedding, chunks[i].EmbeddingModel = vecs[i], model
		}
		terms[i] = indexTerms(p)
	}
	return s.knowledge.CreateKnowledge(ctx, a.AccountID, a.ID, name, int64(len(text)), chunks, terms)
}

// Knowledge returns at most k chunks of a's documents most relevant to
// query, best first, ranked as Memories ranks memories.
func (s *Service) Knowledge(ctx context.Context, a Agent, query string, k int) ([]domain.KnowledgeChunk, error) {
	if model, ok := s.model(a); ok {
		found, ok, err := byVectors(ctx, s, a, s.chunkSource(a, model), query, func(domain.KnowledgeChunk) bool { return true }, k)
		if err != nil || ok {
			return found, err
		}
	}
	terms := queryTerms(query)
	found, total, err := s.knowledge.SearchKnowledge(ctx, a.AccountID, a.ID, terms, candidates)
	if err != nil || total == 0 {
		return nil, err
	}
	texts := make([]string, len(found))
	for i, c := range found {
		texts[i] = c.Text
	}
	return pick(found, top(bm25(terms, texts, total), k, true)), nil
}

// refreshChunks embeds again the agent's chunks that model has not
// embedded.
func (s *Service) refreshChunks(ctx context.Context, a Agent, model string) {
	stale, err := s.knowledge.StaleChunks(ctx, a.AccountID, a.ID, model, maxReembed)
	if err != nil {
		s.logger.WarnContext(ctx, "stale chunks not read", "agent", a.ID, "error", err)
		return
	}
	reembed(ctx, s, a, model, stale, func(c domain.KnowledgeChunk) string { return c.Text },
		func(c domain.KnowledgeChunk) string { return c.ID },
		func(v map[string][]float32) error { return s.knowledge.SetChunkEmbeddings(ctx, a.ID, model, v) })
}

// chunkSource is where the vectors model made of a's chunks come from.
func (s *Service) chunkSource(a Agent, model string) vectorSource[domain.KnowledgeChunk] {
	return vectorSource[domain.KnowledgeChunk]{
		key: "chunks|" + a.ID + "|" + model,
		state: func(ctx context.Context) (domain.VectorState, error) {
			return s.knowledge.VectorState(ctx, a.AccountID, a.ID, model)
		},
		refresh: func(ctx context.Context) { s.refreshChunks(ctx, a, model) },
		load: func(ctx context.Context) ([]domain.KnowledgeChunk, error) {
			return s.knowledge.KnowledgeVectors(ctx, a.AccountID, a.ID, model)
		},
		take: func(c *domain.KnowledgeChunk) []float32 { v := c.Embedding; c.Embedding = nil; return v },
	}
}
