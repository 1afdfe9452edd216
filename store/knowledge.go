package store

import (
	"context"
	"slices"
	"strings"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// chunkInsertBatch is how many chunks one INSERT writes: a large document
// has thousands, beyond the bind parameters one statement may have.
const chunkInsertBatch = 200

// CreateKnowledge stores document name of bytes bytes for agent agentID of
// account accountID, with its chunks (each with its search terms: terms[i]
// for chunks[i]; their ids, documents and places are filled in), in one
// transaction that checks the quota: beyond MaxKnowledgeDocs documents it
// fails with a "knowledge" ErrQuotaExceeded (Quota and Used in documents),
// beyond MaxKnowledgeBytes with a "knowledge_bytes" one (in bytes). An
// empty name is ErrInvalid naming it, as negative bytes or terms not one
// for each chunk are ErrInvalid; ErrNotFound for a missing agent or one of
// another account.
func (s Knowledge) CreateKnowledge(ctx context.Context, accountID, agentID, name string, bytes int64,
	chunks []domain.KnowledgeChunk, terms []string) (domain.KnowledgeDoc, error) {
	switch {
	case name == "":
		return domain.KnowledgeDoc{}, wrap("create knowledge", fieldError("name", "must not be empty"))
	case bytes < 0 || len(terms) != len(chunks):
		return domain.KnowledgeDoc{}, wrap("create knowledge", invalidf("%d bytes, %d chunks, %d terms", bytes, len(chunks), len(terms)))
	}
	t := s.now()
	doc := knowledgeDocRow{ID: ctext(newID("kn_", t)), AgentID: ctext(agentID), Name: name,
		ChunkCount: len(chunks), Bytes: bytes, CreatedAt: t}
	rows := make([]knowledgeChunkRow, len(chunks))
	for i, c := range chunks {
		rows[i] = knowledgeChunkRow{ID: ctext(newID("kc_", t)), DocumentID: doc.ID, AgentID: doc.AgentID, Seq: i,
			Text: c.Text, Terms: storedTerms(terms[i]), Embedding: encodeVector(c.Embedding), EmbeddingModel: c.EmbeddingModel}
	}
	err := s.write(ctx, "create knowledge", func(tx *gorm.DB) error {
		if err := lockOwned(tx, accountID, agentID); err != nil {
			return err
		}
		if err := checkKnowledgeQuota(tx, agentID, bytes); err != nil {
			return err
		}
		if err := tx.Create(&doc).Error; err != nil {
			return err
		}
		if err := countKnowledgeDocs(tx, agentID, 1); err != nil || len(rows) == 0 {
			return err
		}
		return tx.CreateInBatches(&rows, chunkInsertBatch).Error
	})
	if err != nil {
		return domain.KnowledgeDoc{}, err
	}
	return toKnowledgeDoc(doc), nil
}

// checkKnowledgeQuota fails when a document of bytes more would take the
// agent past either quota. The caller holds the agent's row.
func checkKnowledgeQuota(tx *gorm.DB, agentID string, bytes int64) error {
	var used struct{ Docs, Bytes int64 }
	err := tx.Model(&knowledgeDocRow{}).Select("COUNT(*) AS docs, CAST(COALESCE(SUM(bytes), 0) AS bigint) AS bytes").
		Where("agent_id = ?", agentID).Scan(&used).Error
	switch {
	case err != nil:
		return err
	case used.Docs >= domain.MaxKnowledgeDocs:
		return quotaError("knowledge", domain.MaxKnowledgeDocs, int(used.Docs))
	case used.Bytes+bytes > domain.MaxKnowledgeBytes:
		return quotaError("knowledge_bytes", domain.MaxKnowledgeBytes, int(used.Bytes))
	}
	return nil
}

// ListKnowledge returns a page of the documents of agent agentID of
// account accountID, newest first, and how many it has. ErrNotFound for a
// missing agent or one of another account.
func (s Knowledge) ListKnowledge(ctx context.Context, accountID, agentID string, page, limit int) ([]domain.KnowledgeDoc, int64, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, 0, wrap("list knowledge", err)
	}
	sel := db.Model(&knowledgeDocRow{}).Where("agent_id = ?", agentID)
	rows, total, err := newestPage[knowledgeDocRow](sel, page, limit, []string{"*"})
	if err != nil {
		return nil, 0, wrap("list knowledge", err)
	}
	out := make([]domain.KnowledgeDoc, len(rows))
	for i, r := range rows {
		out[i] = toKnowledgeDoc(r)
	}
	return out, total, nil
}

// DeleteKnowledge deletes document id of agent agentID of account
// accountID with its chunks: ErrNotFound when the agent is not the
// account's, ErrKnowledgeNotFound when the document is not the agent's.
func (s Knowledge) DeleteKnowledge(ctx context.Context, accountID, agentID, id string) error {
	return s.write(ctx, "delete knowledge", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		// The foreign key cascades too; deleting explicitly does not
		// depend on SQLite's foreign_keys setting.
		if err := tx.Where("document_id = ? AND agent_id = ?", id, agentID).Delete(&knowledgeChunkRow{}).Error; err != nil {
			return err
		}
		if err := deleteRow(tx, &knowledgeDocRow{}, agentID, id, domain.ErrKnowledgeNotFound); err != nil {
			return err
		}
		return countKnowledgeDocs(tx, agentID, -1)
	})
}

// countKnowledgeDocs moves the agent's count of knowledge documents by n,
// leaving its version (Get does not show the count) and updatedAt alone.
func countKnowledgeDocs(tx *gorm.DB, agentID string, n int) error {
	return tx.Model(&agentRow{}).Where("id = ?", agentID).
		UpdateColumn("knowledge_docs", gorm.Expr("knowledge_docs + ?", n)).Error
}

// SearchKnowledge returns the chunks of agent agentID of account accountID
// whose terms hold any of terms, through the full-text index, newest
// document first and in document order, at most limit; and how many chunks
// the agent holds, for the caller's ranking. Their Embedding is nil.
// ErrNotFound for a missing agent or one of another account.
func (s Knowledge) SearchKnowledge(ctx context.Context, accountID, agentID string, terms []string, limit int) ([]domain.KnowledgeChunk, int64, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, 0, wrap("search knowledge", err)
	}
	var hits []chunkHit
	total, err := s.search(chunksOf(db, agentID), "knowledge_chunks", terms, limit, &hits, func(q *gorm.DB) *gorm.DB {
		return withDocument(q).Order("knowledge_documents.created_at DESC, knowledge_documents.id DESC, knowledge_chunks.seq")
	})
	if err != nil {
		return nil, 0, wrap("search knowledge", err)
	}
	return toChunks(hits), total, nil
}

// KnowledgeVectors returns the chunks of agent agentID of account
// accountID embedded by model, with their Embedding, for the caller to
// rank by vector. ErrNotFound for a missing agent or one of another
// account.
func (s Knowledge) KnowledgeVectors(ctx context.Context, accountID, agentID, model string) ([]domain.KnowledgeChunk, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, wrap("knowledge vectors", err)
	}
	var hits []chunkHit
	err := withDocument(embeddedBy(chunksOf(db, agentID), "knowledge_chunks", model), "knowledge_chunks.embedding").
		Find(&hits).Error
	if err != nil {
		return nil, wrap("knowledge vectors", err)
	}
	return toChunks(hits), nil
}

// StaleChunks returns at most limit of agent agentID's chunks not embedded
// by model, so they can be embedded again when the agent's embedding model
// changed. It returns domain.ErrNotFound for a missing agent or one of
// another account.
func (s Knowledge) StaleChunks(ctx context.Context, accountID, agentID, model string, limit int) ([]domain.KnowledgeChunk, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, wrap("stale chunks", err)
	}
	var hits []chunkHit
	err := withDocument(staleFor(chunksOf(db, agentID), "knowledge_chunks", model)).
		Order("knowledge_chunks.id").Limit(limit).Find(&hits).Error
	if err != nil {
		return nil, wrap("stale chunks", err)
	}
	return toChunks(hits), nil
}

// SetChunkEmbeddings stores vectors made later by model on agent
// agentID's chunks, by id. Ids that are not the agent's are skipped.
func (s Knowledge) SetChunkEmbeddings(ctx context.Context, agentID, model string, vectors map[string][]float32) error {
	return s.setEmbeddings(ctx, "set chunk embeddings", "knowledge_chunks", agentID, model, vectors)
}

// chunkHit is a chunk read with its document's name. The row is a named
// field: GORM skips an embedded field of an unexported type.
type chunkHit struct {
	Row          knowledgeChunkRow `gorm:"embedded"`
	DocumentName string
}

// chunksOf selects the chunks of agentID.
func chunksOf(db *gorm.DB, agentID string) *gorm.DB {
	return db.Table("knowledge_chunks").Where("knowledge_chunks.agent_id = ?", agentID)
}

// chunkColumns are what a KnowledgeChunk shows but the embedding.
var chunkColumns = []string{"knowledge_chunks.id", "knowledge_chunks.document_id", "knowledge_chunks.seq",
	"knowledge_chunks.text", "knowledge_chunks.embedding_model", "knowledge_documents.name AS document_name"}

// withDocument joins q's chunks to their documents and reads chunkColumns
// and extra.
func withDocument(q *gorm.DB, extra ...string) *gorm.DB {
	return q.Joins("JOIN knowledge_documents ON knowledge_documents.id = knowledge_chunks.document_id").
		Select(strings.Join(append(slices.Clip(chunkColumns), extra...), ", "))
}

func toChunks(hits []chunkHit) []domain.KnowledgeChunk {
	out := make([]domain.KnowledgeChunk, len(hits))
	for i, h := range hits {
		r := h.Row
		out[i] = domain.KnowledgeChunk{ID: string(r.ID), DocumentID: string(r.DocumentID), DocumentName: h.DocumentName,
			Text: r.Text, Seq: r.Seq, Embedding: decodeVector(r.Embedding), EmbeddingModel: r.EmbeddingModel}
	}
	return out
}

func toKnowledgeDoc(r knowledgeDocRow) domain.KnowledgeDoc {
	return domain.KnowledgeDoc{ID: string(r.ID), AgentID: string(r.AgentID), Name: r.Name, Chunks: r.ChunkCount,
		Bytes: r.Bytes, CreatedAt: utc(r.CreatedAt)}
}
