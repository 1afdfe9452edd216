package recall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/recall"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
)

// embedder embeds with llmtest's bag of words under a model a test can
// change, or fails.
type embedder struct {
	model string
	fail  bool
	calls int
}

func (e *embedder) EmbeddingModel(string) (string, bool) { return e.model, true }

func (e *embedder) Embed(_ context.Context, _, _ string, texts []string) ([][]float32, string, error) {
	e.calls++
	if e.fail {
		return nil, "", errors.New("embeddings down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = llmtest.Embedding(t)
	}
	return out, e.model, nil
}

// newRecall is a Service over a fresh store of backend dsn with an agent.
func newRecall(t *testing.T, dsn string, e *embedder) (*recall.Service, *store.Store, recall.Agent) {
	st := storetest.Open(t, dsn)
	acct := storetest.Account(t, st, "acme")
	a, err := st.Agents().CreateAgent(context.Background(), domain.Agent{AccountID: acct.ID, Name: "Rem", Fields: map[string]json.RawMessage{"name": json.RawMessage(`"Rem"`)}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	return recall.New(st.Memories(), st.Knowledge(), e, nil), st, recall.Agent{AccountID: acct.ID, ID: a.ID, Provider: "openai"}
}

// TestReembedWhenTheModelChanges: memories embedded by an older model are
// embedded again by the current one when they are next recalled, and
// ranked by it.
func TestReembedWhenTheModelChanges(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		e := &embedder{model: "old-model"}
		svc, st, a := newRecall(t, dsn, e)
		ctx := context.Background()
		for _, text := range []string{"Ann is learning Rust", "Bob likes chess"} {
			if _, err := svc.SaveMemory(ctx, a, domain.Memory{UserID: "ann", Text: text, Source: domain.MemorySourceAPI}, false); err != nil {
				t.Fatal(err)
			}
		}
		e.model = "new-model"
		got, err := svc.Memories(ctx, a, []string{"ann"}, "what is Ann learning", 1)
		if err != nil || len(got) != 1 || got[0].Text != "Ann is learning Rust" {
			t.Fatalf("recalled %+v, %v", got, err)
		}
		vecs, err := st.Memories().MemoryVectors(ctx, a.AccountID, a.ID, []string{"ann"}, "new-model")
		if err != nil || len(vecs) != 2 {
			t.Errorf("%d memories embedded by the new model, %v", len(vecs), err)
		}
	})
}

// TestFallbackToFullText: when embedding fails, memories and knowledge are
// ranked by their terms; the memory is stored all the same.
func TestFallbackToFullText(t *testing.T) {
	e := &embedder{model: "m", fail: true}
	svc, _, a := newRecall(t, storetest.SQLiteDSN(t), e)
	ctx := context.Background()
	for _, text := range []string{"The office closes at six", "Ann is learning Rust"} {
		if _, err := svc.SaveMemory(ctx, a, domain.Memory{Text: text, Source: domain.MemorySourceAPI}, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.AddKnowledge(ctx, a, "lake.md", "The lake is cold in May.\n\nThe trail is steep."); err != nil {
		t.Fatal(err)
	}
	mems, err := svc.Memories(ctx, a, []string{""}, "Rust lessons", 5)
	if err != nil || len(mems) != 1 || mems[0].Text != "Ann is learning Rust" {
		t.Errorf("memories %+v, %v", mems, err)
	}
	chunks, err := svc.Knowledge(ctx, a, "how cold is the lake", 5)
	if err != nil || len(chunks) != 1 || !strings.Contains(chunks[0].Text, "cold") || chunks[0].DocumentName != "lake.md" {
		t.Errorf("chunks %+v, %v", chunks, err)
	}
}

// countingStore counts the loads of memory vectors.
type countingStore struct {
	store.Memories
	loads int
}

func (c *countingStore) MemoryVectors(ctx context.Context, accountID, agentID string, scope []string, model string) ([]domain.Memory, error) {
	c.loads++
	return c.Memories.MemoryVectors(ctx, accountID, agentID, scope, model)
}

// TestVectorsCachedUntilTheyChange: recalls reuse the vectors they loaded
// until a memory is added; a new one is then found at once.
func TestVectorsCachedUntilTheyChange(t *testing.T) {
	e := &embedder{model: "m"}
	_, st, a := newRecall(t, storetest.SQLiteDSN(t), e)
	cs := &countingStore{Memories: st.Memories()}
	svc := recall.New(cs, st.Knowledge(), e, nil)
	ctx := context.Background()
	save := func(text string) {
		if _, err := svc.SaveMemory(ctx, a, domain.Memory{Text: text, Source: domain.MemorySourceAPI}, false); err != nil {
			t.Fatal(err)
		}
	}
	recalled := func(q string) string {
		got, err := svc.Memories(ctx, a, []string{""}, q, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("recalled %+v, %v", got, err)
		}
		return got[0].Text
	}
	save("The lake is cold")
	save("The trail is steep")
	for range 3 {
		recalled("how cold is the lake")
	}
	if cs.loads != 1 {
		t.Errorf("%d loads for 3 recalls, want 1", cs.loads)
	}
	save("Ann brings hot cocoa")
	if got := recalled("who brings cocoa"); got != "Ann brings hot cocoa" || cs.loads != 2 {
		t.Errorf("after a save: %q, %d loads", got, cs.loads)
	}
}

// cancellingEmbedder is an embedder whose first call cancels the context
// of the save that called it, as a client that goes away does.
type cancellingEmbedder struct {
	embedder
	cancel context.CancelFunc
}

func (e *cancellingEmbedder) Embed(ctx context.Context, provider, key string, texts []string) ([][]float32, string, error) {
	e.cancel()
	return e.embedder.Embed(ctx, provider, key, texts)
}

// TestSaveMemoriesInBatches: many memories are embedded in few calls and
// all stored; a save whose context ends stops between batches, storing no
// more and embedding no more.
func TestSaveMemoriesInBatches(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		e := &embedder{model: "m"}
		svc, st, a := newRecall(t, dsn, e)
		many := func(n int) []domain.Memory {
			ms := make([]domain.Memory, n)
			for i := range ms {
				ms[i] = domain.Memory{Text: fmt.Sprint("fact ", i), Source: domain.MemorySourceAPI}
			}
			return ms
		}
		ctx := context.Background()
		if err := svc.SaveMemories(ctx, a, many(1200)); err != nil {
			t.Fatal(err)
		}
		_, total, err := st.Memories().ListMemories(ctx, a.AccountID, a.ID, domain.MemoryQuery{})
		if err != nil || total != 1200 || e.calls > 3 {
			t.Errorf("%d memories stored in %d embedding calls, %v", total, e.calls, err)
		}

		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ce := &cancellingEmbedder{embedder: embedder{model: "m"}, cancel: cancel}
		svc = recall.New(st.Memories(), st.Knowledge(), ce, nil)
		if err := svc.SaveMemories(cctx, a, many(1200)); !errors.Is(err, context.Canceled) {
			t.Errorf("save of a gone client: %v", err)
		}
		if _, after, _ := st.Memories().ListMemories(ctx, a.AccountID, a.ID, domain.MemoryQuery{}); after != total || ce.calls != 1 {
			t.Errorf("a cancelled save went on: %d memories, %d embedding calls", after-total, ce.calls)
		}
	})
}
