package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// addDocument stores a document of the given chunk texts, each its own
// terms, of bytes bytes.
func addDocument(t *testing.T, s *Store, accountID, agentID, name string, bytes int64, texts ...string) (domain.KnowledgeDoc, error) {
	t.Helper()
	chunks := make([]domain.KnowledgeChunk, len(texts))
	for i, text := range texts {
		chunks[i] = domain.KnowledgeChunk{Text: text}
	}
	return s.Knowledge().CreateKnowledge(context.Background(), accountID, agentID, name, bytes, chunks, texts)
}

// chunkTexts lists "document name/seq: text" of each chunk, in order.
func chunkTexts(cs []domain.KnowledgeChunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s/%d: %s", c.DocumentName, c.Seq, c.Text)
	}
	return out
}

func TestKnowledgeCreateListDelete(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct, other := mustAccount(t, s, "acme"), mustAccount(t, s, "other")
		a := mustAgent(t, s, acct.ID, "reader")
		before, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		var docs []domain.KnowledgeDoc
		for i := range 3 {
			clock.add(time.Second)
			d, err := addDocument(t, s, acct.ID, a.ID, fmt.Sprint("doc", i), int64(100+i), "alpha one", "beta two")
			mustOK(t, err)
			docs = append(docs, d)
		}
		if d := docs[0]; !strings.HasPrefix(d.ID, "kn_") || d.Name != "doc0" || d.Chunks != 2 || d.Bytes != 100 ||
			d.AgentID != a.ID || !d.CreatedAt.Equal(t0.Add(time.Second)) {
			t.Errorf("created %+v", d)
		}
		list, total, err := s.Knowledge().ListKnowledge(ctx, acct.ID, a.ID, 1, 2)
		mustOK(t, err)
		if total != 3 || len(list) != 2 || !reflect.DeepEqual(list[0], docs[2]) || list[1].ID != docs[1].ID {
			t.Errorf("page 1 = %+v (total %d)", list, total)
		}
		list, _, err = s.Knowledge().ListKnowledge(ctx, acct.ID, a.ID, 2, 2)
		mustOK(t, err)
		if len(list) != 1 || list[0].ID != docs[0].ID {
			t.Errorf("page 2 = %+v", list)
		}

		mustOK(t, s.Knowledge().DeleteKnowledge(ctx, acct.ID, a.ID, docs[1].ID))
		wantErr(t, s.Knowledge().DeleteKnowledge(ctx, acct.ID, a.ID, docs[1].ID), domain.ErrKnowledgeNotFound)
		wantErr(t, s.Knowledge().DeleteKnowledge(ctx, other.ID, a.ID, docs[0].ID), domain.ErrNotFound)
		found, chunks, err := s.Knowledge().SearchKnowledge(ctx, acct.ID, a.ID, []string{"alpha"}, 10)
		mustOK(t, err)
		if want := []string{"doc2/0: alpha one", "doc0/0: alpha one"}; !slices.Equal(chunkTexts(found), want) || chunks != 4 {
			t.Errorf("search after delete = %q of %d chunks, want %q of 4", chunkTexts(found), chunks, want)
		}
		_, _, err = s.Knowledge().ListKnowledge(ctx, other.ID, a.ID, 1, 10)
		wantErr(t, err, domain.ErrNotFound)

		_, err = addDocument(t, s, acct.ID, a.ID, "", 1, "x")
		wantErr(t, err, domain.ErrInvalid)
		_, err = s.Knowledge().CreateKnowledge(ctx, acct.ID, a.ID, "doc", 1, []domain.KnowledgeChunk{{Text: "x"}}, nil)
		wantErr(t, err, domain.ErrInvalid)
		_, err = addDocument(t, s, other.ID, a.ID, "doc", 1, "x")
		wantErr(t, err, domain.ErrNotFound)
		empty, err := addDocument(t, s, acct.ID, a.ID, "empty.txt", 0)
		mustOK(t, err)
		if empty.Chunks != 0 {
			t.Errorf("empty document %+v", empty)
		}
		// The agent counts what it holds (three made, one deleted, the
		// empty one; the refused ones not), and the count is not a change
		// Get shows: the version stays.
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		if got.KnowledgeDocs != 3 || got.Version != before.Version || before.KnowledgeDocs != 0 {
			t.Errorf("agent counts %d documents at version %d (%d at %d before), want 3 at the same version",
				got.KnowledgeDocs, got.Version, before.KnowledgeDocs, before.Version)
		}
	})
}

// wantQuota fails unless err is a quota error of resource with quota and
// used.
func wantQuota(t *testing.T, err error, resource string, quota, used int) {
	t.Helper()
	wantErr(t, err, domain.ErrQuotaExceeded)
	var se *domain.Error
	if errors.As(err, &se); se.Resource != resource || se.Quota != quota || se.Used != used {
		t.Errorf("quota error %+v, want %s %d of %d", se, resource, used, quota)
	}
}

func TestKnowledgeQuota(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		acct := mustAccount(t, s, "acme")
		many, big := mustAgent(t, s, acct.ID, "many"), mustAgent(t, s, acct.ID, "big")
		for i := range domain.MaxKnowledgeDocs {
			_, err := addDocument(t, s, acct.ID, many.ID, fmt.Sprint("doc", i), 10, "x")
			mustOK(t, err)
		}
		_, err := addDocument(t, s, acct.ID, many.ID, "one more", 10, "x")
		wantQuota(t, err, "knowledge", domain.MaxKnowledgeDocs, domain.MaxKnowledgeDocs)

		_, err = addDocument(t, s, acct.ID, big.ID, "forty", 40<<20, "x")
		mustOK(t, err)
		_, err = addDocument(t, s, acct.ID, big.ID, "twenty", 20<<20, "x")
		wantQuota(t, err, "knowledge_bytes", domain.MaxKnowledgeBytes, 40<<20)
		_, err = addDocument(t, s, acct.ID, big.ID, "ten", 10<<20, "x")
		mustOK(t, err) // exactly 50 MB
		_, err = addDocument(t, s, acct.ID, big.ID, "a byte", 1, "x")
		wantQuota(t, err, "knowledge_bytes", domain.MaxKnowledgeBytes, domain.MaxKnowledgeBytes)
		docs, _, err := s.Knowledge().ListKnowledge(context.Background(), acct.ID, big.ID, 1, 10)
		mustOK(t, err)
		if len(docs) != 2 {
			t.Errorf("refused documents were stored: %+v", docs)
		}
	})
}

// TestSearchKnowledgeAndVectors: chunks are found by any term, newest
// document first and in document order, with their document's name; a
// large document is stored whole; embeddings round-trip and are replaced
// by id for the agent's chunks only.
func TestSearchKnowledgeAndVectors(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a, b := mustAgent(t, s, acct.ID, "reader"), mustAgent(t, s, acct.ID, "other")
		_, err := s.Knowledge().CreateKnowledge(ctx, acct.ID, a.ID, "manual.md", 300, []domain.KnowledgeChunk{
			{Text: "Install the pump", Embedding: []float32{1, 0}, EmbeddingModel: "e1"},
			{Text: "Clean the filter", Embedding: []float32{0, 1}, EmbeddingModel: "e1"},
			{Text: "Pump noise: check the filter"},
		}, []string{"install the pump", "clean the filter", "pump noise check the filter"})
		mustOK(t, err)
		clock.add(time.Second)
		texts := make([]string, 1500) // more rows than one INSERT may bind
		for i := range texts {
			texts[i] = fmt.Sprint("part ", i)
		}
		texts[1234] = "filter spare parts"
		_, err = addDocument(t, s, acct.ID, a.ID, "catalog.txt", 20000, texts...)
		mustOK(t, err)
		_, err = addDocument(t, s, acct.ID, b.ID, "theirs.txt", 10, "pump filter")
		mustOK(t, err)

		found, total, err := s.Knowledge().SearchKnowledge(ctx, acct.ID, a.ID, []string{"filter", "pump"}, 10)
		mustOK(t, err)
		want := []string{"catalog.txt/1234: filter spare parts", "manual.md/0: Install the pump", "manual.md/1: Clean the filter",
			"manual.md/2: Pump noise: check the filter"}
		if !slices.Equal(chunkTexts(found), want) || total != 1503 {
			t.Errorf("search = %q of %d chunks, want %q of 1503", chunkTexts(found), total, want)
		}
		if c := found[1]; !strings.HasPrefix(c.ID, "kc_") || !strings.HasPrefix(c.DocumentID, "kn_") || c.EmbeddingModel != "e1" || c.Embedding != nil {
			t.Errorf("found chunk %+v", c)
		}
		found, _, err = s.Knowledge().SearchKnowledge(ctx, acct.ID, a.ID, []string{"filter", "pump"}, 2)
		mustOK(t, err)
		if !slices.Equal(chunkTexts(found), want[:2]) {
			t.Errorf("search limited to 2 = %q", chunkTexts(found))
		}

		vecs, err := s.Knowledge().KnowledgeVectors(ctx, acct.ID, a.ID, "e1")
		mustOK(t, err)
		slices.SortFunc(vecs, func(x, y domain.KnowledgeChunk) int { return x.Seq - y.Seq })
		if len(vecs) != 2 || !reflect.DeepEqual(vecs[0].Embedding, []float32{1, 0}) || vecs[1].Text != "Clean the filter" ||
			vecs[1].DocumentName != "manual.md" {
			t.Fatalf("vectors of e1 = %+v", vecs)
		}
		theirs, _, err := s.Knowledge().SearchKnowledge(ctx, acct.ID, b.ID, []string{"pump"}, 1)
		mustOK(t, err)
		mustOK(t, s.Knowledge().SetChunkEmbeddings(ctx, a.ID, "e2", map[string][]float32{vecs[0].ID: {0.5}, theirs[0].ID: {9}}))
		vecs, err = s.Knowledge().KnowledgeVectors(ctx, acct.ID, a.ID, "e2")
		mustOK(t, err)
		if len(vecs) != 1 || !reflect.DeepEqual(vecs[0].Embedding, []float32{0.5}) || vecs[0].Seq != 0 {
			t.Errorf("vectors of e2 = %+v", vecs)
		}
		if vecs, _ := s.Knowledge().KnowledgeVectors(ctx, acct.ID, b.ID, "e2"); len(vecs) != 0 {
			t.Errorf("another agent's chunk took a vector: %+v", vecs)
		}
		_, _, err = s.Knowledge().SearchKnowledge(ctx, "acct_other", a.ID, []string{"pump"}, 1)
		wantErr(t, err, domain.ErrNotFound)
		_, err = s.Knowledge().KnowledgeVectors(ctx, "acct_other", a.ID, "e1")
		wantErr(t, err, domain.ErrNotFound)
	})
}

// TestDeletingAnAgentDeletesItsMemoryAndKnowledge: memories, documents,
// chunks and their full-text rows go with the agent, through the foreign
// keys' cascade (whose deletes fire SQLite's FTS triggers too): a new
// agent's rows, which may reuse the rowids, are not found by the old
// terms.
func TestDeletingAnAgentDeletesItsMemoryAndKnowledge(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		old := mustAgent(t, s, acct.ID, "old")
		saveMemory(t, s, acct.ID, old.ID, "u1", "old fact", "alpha")
		_, err := addDocument(t, s, acct.ID, old.ID, "old.txt", 10, "alpha one", "alpha two")
		mustOK(t, err)
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, old.ID, domain.AnyVersion)
		mustOK(t, err)
		for _, model := range searchModels() {
			var n int64
			mustOK(t, s.w.Model(model).Count(&n).Error)
			if n != 0 {
				t.Errorf("%d rows of %T left after deleting their agent", n, model)
			}
		}
		if !s.postgres {
			for _, fts := range []string{"fts_memories", "fts_knowledge_chunks"} {
				var n int64
				mustOK(t, s.w.Table(fts).Count(&n).Error)
				if n != 0 {
					t.Errorf("%d rows of %s left after deleting their agent", n, fts)
				}
			}
		}
		fresh := mustAgent(t, s, acct.ID, "fresh")
		saveMemory(t, s, acct.ID, fresh.ID, "u1", "new fact", "beta")
		_, err = addDocument(t, s, acct.ID, fresh.ID, "new.txt", 10, "beta one", "beta two")
		mustOK(t, err)
		mems, _, err := s.Memories().SearchMemories(ctx, acct.ID, fresh.ID, []string{"u1"}, []string{"alpha"}, 10)
		mustOK(t, err)
		chunks, _, err := s.Knowledge().SearchKnowledge(ctx, acct.ID, fresh.ID, []string{"alpha"}, 10)
		mustOK(t, err)
		if len(mems) != 0 || len(chunks) != 0 {
			t.Errorf("the deleted agent's terms find %+v and %+v", mems, chunks)
		}
		mems, _, err = s.Memories().SearchMemories(ctx, acct.ID, fresh.ID, []string{"u1"}, []string{"beta"}, 10)
		mustOK(t, err)
		chunks, _, err = s.Knowledge().SearchKnowledge(ctx, acct.ID, fresh.ID, []string{"beta"}, 10)
		mustOK(t, err)
		if len(mems) != 1 || len(chunks) != 2 {
			t.Errorf("the new agent's terms find %+v and %+v", mems, chunks)
		}
	})
}
