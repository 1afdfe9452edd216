package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// Memories and knowledge chunks are searched the same way, by the helpers
// of this file. Each row keeps `terms`: the caller's normalised tokens of
// its text (lowercase letters and digits, space-separated), indexed by
// migration 00005: on SQLite an FTS4 table fts_<table> whose docid is the
// row's rowid, kept by triggers; on PostgreSQL a GIN index on
// to_tsvector('simple', terms). Neither FTS4's simple tokenizer nor the
// 'simple' configuration stems or drops stop words, so a token matches the
// same rows on both. Each row may also carry an embedding, which the caller
// ranks by.

// searchModels are the tables of memories and knowledge.
func searchModels() []any { return []any{&memoryRow{}, &knowledgeDocRow{}, &knowledgeChunkRow{}} }

// cleanTerms lowercases tokens and keeps only their letters and digits,
// dropping those left empty. The caller normalises already; this keeps a
// token that slipped through from reading as query syntax (FTS4's OR and
// quotes, to_tsquery's operators) or breaking it.
func cleanTerms(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	for _, tok := range tokens {
		tok = strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return unicode.ToLower(r)
			}
			return -1
		}, tok)
		if tok != "" {
			out = append(out, tok)
		}
	}
	return out
}

// storedTerms is the terms column of a row: the cleaned tokens, repeats
// kept.
func storedTerms(terms string) string { return strings.Join(cleanTerms(strings.Fields(terms)), " ") }

// queryTerms is the distinct cleaned tokens of a search.
func queryTerms(terms []string) []string {
	clean := cleanTerms(terms)
	slices.Sort(clean)
	return slices.Compact(clean)
}

// matchAny restricts q to the rows of table whose terms hold any of terms
// (cleaned, at least one), through the full-text index.
func (s *core) matchAny(q *gorm.DB, table string, terms []string) *gorm.DB {
	if s.postgres {
		return q.Where(table+".fts_vector @@ to_tsquery('simple', ?)", strings.Join(terms, " | "))
	}
	fts := "fts_" + table
	return q.Where(table+".rowid IN (SELECT docid FROM "+fts+" WHERE "+fts+" MATCH ?)", strings.Join(terms, " OR "))
}

// search counts the rows scope selects and reads into out at most limit of
// those whose terms match any of terms, shaped (columns, joins, order) by
// shape. No term left after cleaning, or a limit below 1, reads nothing.
func (s *core) search(scope *gorm.DB, table string, terms []string, limit int, out any, shape func(*gorm.DB) *gorm.DB) (int64, error) {
	scope = scope.Session(&gorm.Session{})
	var total int64
	if err := scope.Count(&total).Error; err != nil {
		return 0, err
	}
	if terms = queryTerms(terms); total == 0 || len(terms) == 0 || limit < 1 {
		return total, nil
	}
	return total, shape(s.matchAny(scope, table, terms)).Limit(limit).Find(out).Error
}

// embeddedBy restricts q to rows whose embedding was made by model. Rows
// without one have model "", which no caller asks for.
func embeddedBy(q *gorm.DB, table, model string) *gorm.DB {
	return q.Where(table+".embedding_model = ? AND "+table+".embedding_model <> ''", model)
}

// VectorState returns the state of agent agentID's memories for model: how
// many there are, how many model embedded, and a version that moves with
// them. It returns domain.ErrNotFound for a missing agent or one of another
// account.
func (s Memories) VectorState(ctx context.Context, accountID, agentID, model string) (domain.VectorState, error) {
	return s.vectorState(ctx, accountID, agentID, "memories", model)
}

// VectorState returns the state of agent agentID's knowledge chunks for
// model, as Memories.VectorState does for memories.
func (s Knowledge) VectorState(ctx context.Context, accountID, agentID, model string) (domain.VectorState, error) {
	return s.vectorState(ctx, accountID, agentID, "knowledge_chunks", model)
}

// vectorState reads table's state for model from the (agent_id,
// embedding_model, id) indexes, without reading the rows.
func (s *core) vectorState(ctx context.Context, accountID, agentID, table, model string) (domain.VectorState, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return domain.VectorState{}, wrap("vector state", err)
	}
	var rows []struct {
		Model string
		N     int64
		Max   string
	}
	err := db.Table(table).Where("agent_id = ?", agentID).Group("embedding_model").
		Select("embedding_model AS model, count(*) AS n, max(id) AS max").Scan(&rows).Error
	if err != nil {
		return domain.VectorState{}, wrap("vector state", err)
	}
	var st domain.VectorState
	for _, r := range rows {
		st.Total += r.N
		if r.Model == model && model != "" {
			st.Embedded, st.Version = r.N, fmt.Sprintf("%d:%s", r.N, r.Max)
		}
	}
	return st, nil
}

// staleFor selects q's rows not embedded by model: none yet, or by another
// model.
func staleFor(q *gorm.DB, table, model string) *gorm.DB {
	return q.Where(table+".embedding_model <> ?", model)
}

// setEmbeddings stores vectors, made by model, on the rows of table (by
// id) that belong to agent agentID, in one transaction; ids of other
// agents, or gone since, are skipped. Rows are updated in id order so that
// two of these transactions lock them in the same order.
func (s *core) setEmbeddings(ctx context.Context, op, table, agentID, model string, vectors map[string][]float32) error {
	return s.write(ctx, op, func(tx *gorm.DB) error {
		for _, id := range slices.Sorted(maps.Keys(vectors)) {
			err := tx.Table(table).Where("id = ? AND agent_id = ?", id, agentID).
				Updates(map[string]any{"embedding": encodeVector(vectors[id]), "embedding_model": model}).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// encodeVector is the stored form of an embedding: little-endian float32s,
// empty (not NULL: the column is NOT NULL) for none.
func encodeVector(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return out
}

// decodeVector reads encodeVector's form; nil for none or a length that
// is not whole float32s.
func decodeVector(b []byte) []float32 {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// lockOwned checks that agent agentID belongs to account accountID
// (ErrNotFound otherwise) and, on PostgreSQL, locks its row until the
// transaction ends, so that quota checks of the agent's memories or
// knowledge run one at a time (SQLite's writer is exclusive already).
func lockOwned(tx *gorm.DB, accountID, agentID string) error {
	return forUpdate(tx).Model(&agentRow{}).Select("id").
		Where("id = ? AND account_id = ?", agentID, accountID).Take(&agentRow{}).Error
}

// validLength reports whether s has between lo and hi characters.
func validLength(s string, lo, hi int) bool {
	n := utf8.RuneCountInString(s)
	return n >= lo && n <= hi
}

// newestPage reads page pageNo of sel's rows (columns of them), newest
// first by created_at then id, as ListConversations pages, and counts sel.
func newestPage[R any](sel *gorm.DB, pageNo, limit int, columns []string) ([]R, int64, error) {
	sel = sel.Session(&gorm.Session{})
	var total int64
	if err := sel.Count(&total).Error; err != nil {
		return nil, 0, err
	}
	pageNo, limit, past := pageBounds(pageNo, limit, total)
	rows := []R{}
	if past {
		return rows, total, nil
	}
	err := sel.Select(columns).Order("created_at DESC").Order("id DESC").
		Offset((pageNo - 1) * limit).Limit(limit).Find(&rows).Error
	return rows, total, err
}

// deleteRow deletes row id of agent agentID from model's table, or fails
// with notFound when the agent has no such row.
func deleteRow(tx *gorm.DB, model any, agentID, id string, notFound error) error {
	res := tx.Where("id = ? AND agent_id = ?", id, agentID).Delete(model)
	if res.Error == nil && res.RowsAffected == 0 {
		return notFound
	}
	return res.Error
}
