package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// saveMemory creates a memory through the API path.
func saveMemory(t *testing.T, s *Store, accountID, agentID, userID, text, terms string) domain.Memory {
	t.Helper()
	m, err := s.Memories().CreateMemory(context.Background(), accountID,
		domain.Memory{AgentID: agentID, UserID: userID, Text: text, Source: domain.MemorySourceAPI}, terms, false)
	mustOK(t, err)
	return m
}

// memoryTexts lists the texts of ms, in order.
func memoryTexts(ms []domain.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

// wantTexts fails unless ms has exactly the texts want, in order.
func wantTexts(t *testing.T, what string, ms []domain.Memory, want ...string) {
	t.Helper()
	if got := memoryTexts(ms); !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func TestMemoriesCreateListDelete(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct, other := mustAccount(t, s, "acme"), mustAccount(t, s, "other")
		a := mustAgent(t, s, acct.ID, "keeper")
		var made []domain.Memory
		for i, user := range []string{"u1", "", "u2", "u1", ""} {
			clock.add(time.Second)
			made = append(made, saveMemory(t, s, acct.ID, a.ID, user, fmt.Sprint("fact ", i), "fact"))
		}
		m, err := s.Memories().CreateMemory(ctx, acct.ID, domain.Memory{AgentID: a.ID, UserID: "u1", Text: "likes tea", Source: domain.MemorySourceAgent,
			ConversationID: "conv_x", Embedding: []float32{1, 2}, EmbeddingModel: "e1"}, "likes tea", true)
		mustOK(t, err)
		if !strings.HasPrefix(m.ID, "mem_") || !m.CreatedAt.Equal(clock.now()) || m.Source != domain.MemorySourceAgent {
			t.Errorf("created %+v", m)
		}

		all, total, err := s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{})
		mustOK(t, err)
		wantTexts(t, "all memories", all, "likes tea", "fact 4", "fact 3", "fact 2", "fact 1", "fact 0")
		if total != 6 || all[0].ConversationID != "conv_x" || all[0].UserID != "u1" || all[0].EmbeddingModel != "e1" ||
			all[0].Embedding != nil || all[5].ID != made[0].ID || !all[5].CreatedAt.Equal(made[0].CreatedAt) {
			t.Errorf("listed %+v (total %d)", all, total)
		}
		page, total, err := s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{Page: 2, Limit: 4})
		mustOK(t, err)
		wantTexts(t, "page 2", page, "fact 1", "fact 0")
		past, _, err := s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{Page: 3, Limit: 4})
		mustOK(t, err)
		if total != 6 || past == nil || len(past) != 0 {
			t.Errorf("total %d, page past the end %v", total, past)
		}
		u1, none := "u1", ""
		mine, total, err := s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{UserID: &u1})
		mustOK(t, err)
		wantTexts(t, "u1's", mine, "likes tea", "fact 3", "fact 0")
		wide, _, err := s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{UserID: &none})
		mustOK(t, err)
		wantTexts(t, "agent-wide", wide, "fact 4", "fact 1")
		if total != 3 {
			t.Errorf("u1 total = %d", total)
		}

		mustOK(t, s.Memories().DeleteMemory(ctx, acct.ID, a.ID, made[2].ID))
		wantErr(t, s.Memories().DeleteMemory(ctx, acct.ID, a.ID, made[2].ID), domain.ErrMemoryNotFound)
		wantErr(t, s.Memories().DeleteMemory(ctx, other.ID, a.ID, made[1].ID), domain.ErrNotFound)
		if err := s.Memories().DeleteMemory(ctx, other.ID, a.ID, made[1].ID); errors.Is(err, domain.ErrMemoryNotFound) {
			t.Errorf("another account's agent reads as a missing memory: %v", err)
		}
		n, err := s.Memories().DeleteUserMemories(ctx, acct.ID, a.ID, "u1")
		mustOK(t, err)
		all, _, err = s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{})
		mustOK(t, err)
		wantTexts(t, "after forgetting u1", all, "fact 4", "fact 1")
		if n != 3 {
			t.Errorf("forgot %d memories of u1, want 3", n)
		}
		_, err = s.Memories().DeleteUserMemories(ctx, acct.ID, a.ID, "")
		wantErr(t, err, domain.ErrInvalid)
		_, err = s.Memories().DeleteUserMemories(ctx, other.ID, a.ID, "u2")
		wantErr(t, err, domain.ErrNotFound)
		_, _, err = s.Memories().ListMemories(ctx, other.ID, a.ID, domain.MemoryQuery{})
		wantErr(t, err, domain.ErrNotFound)
	})
}

func TestMemoryIsChecked(t *testing.T) {
	s := newSQLite(t)
	ctx := context.Background()
	acct, other := mustAccount(t, s, "acme"), mustAccount(t, s, "other")
	a := mustAgent(t, s, acct.ID, "keeper")
	for _, tc := range []struct {
		m     domain.Memory
		field string
	}{
		{domain.Memory{AgentID: a.ID, Source: domain.MemorySourceAPI}, "text"},
		{domain.Memory{AgentID: a.ID, Text: strings.Repeat("é", domain.MaxMemoryText+1), Source: domain.MemorySourceAPI}, "text"},
		{domain.Memory{AgentID: a.ID, Text: "fact", Source: "user"}, "source"},
	} {
		_, err := s.Memories().CreateMemory(ctx, acct.ID, tc.m, "", false)
		wantErr(t, err, domain.ErrInvalid)
		var se *domain.Error
		if errors.As(err, &se); se.Field != tc.field {
			t.Errorf("error %v names %q, want %q", err, se.Field, tc.field)
		}
	}
	_, err := s.Memories().CreateMemory(ctx, acct.ID, domain.Memory{AgentID: a.ID, Text: strings.Repeat("é", domain.MaxMemoryText), Source: domain.MemorySourceAPI}, "", false)
	mustOK(t, err)
	_, err = s.Memories().CreateMemory(ctx, other.ID, domain.Memory{AgentID: a.ID, Text: "fact", Source: domain.MemorySourceAPI}, "", false)
	wantErr(t, err, domain.ErrNotFound)
	_, err = s.Memories().CreateMemory(ctx, acct.ID, domain.Memory{AgentID: "agent_missing", Text: "fact", Source: domain.MemorySourceAPI}, "", true)
	wantErr(t, err, domain.ErrNotFound)
}

// fillMemories stores n memories of agentID at once, behind the store's
// back (a create each would take minutes): memory i says "fact i", with
// terms "fact n<i>", belongs to user(i), and was made n-i ms before t0.
func fillMemories(t *testing.T, s *Store, agentID string, n int, user func(i int) string) {
	t.Helper()
	rows := make([]memoryRow, n)
	for i := range rows {
		at := t0.Add(-time.Duration(n-i) * time.Millisecond)
		rows[i] = fromMemory(domain.Memory{ID: newID("mem_", at), AgentID: agentID, UserID: user(i), Text: fmt.Sprint("fact ", i),
			Source: domain.MemorySourceAPI, CreatedAt: at}, fmt.Sprint("fact n", i))
	}
	mustOK(t, s.w.CreateInBatches(&rows, 500).Error)
}

// TestMemoryQuota: at MaxMemories an API create fails with the quota and
// how many are used, even when several race for the last places; a save
// by the model drops the oldest memory of its user, or the agent's oldest
// when that user has none, and search no longer finds what was dropped.
func TestMemoryQuota(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "keeper")
		fillMemories(t, s, a.ID, domain.MaxMemories-2, func(i int) string { return []string{"u1", "u2"}[i%2] })

		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = s.Memories().CreateMemory(ctx, acct.ID, domain.Memory{AgentID: a.ID, UserID: "u2", Text: "late", Source: domain.MemorySourceAPI}, "late", false)
			})
		}
		wg.Wait()
		var created int
		for _, err := range errs {
			var se *domain.Error
			switch {
			case err == nil:
				created++
			case errors.As(err, &se) && se.Code == domain.CodeQuotaExceeded:
				if se.Resource != "memory" || se.Quota != domain.MaxMemories || se.Used != domain.MaxMemories {
					t.Errorf("quota error %+v", se)
				}
			default:
				t.Errorf("racing create: %v", err)
			}
		}
		if created != 2 {
			t.Fatalf("%d of 4 racing creates succeeded with 2 places left", created)
		}

		has := func(text string) bool {
			t.Helper()
			var n int64
			mustOK(t, s.w.Model(&memoryRow{}).Where("agent_id = ? AND text = ?", a.ID, text).Count(&n).Error)
			return n == 1
		}
		save := func(user string) {
			t.Helper()
			clock.add(time.Millisecond)
			_, err := s.Memories().CreateMemory(ctx, acct.ID, domain.Memory{AgentID: a.ID, UserID: user, Text: "new of " + user, Source: domain.MemorySourceAgent}, "", true)
			mustOK(t, err)
		}
		save("u2") // drops u2's oldest, fact 1, though fact 0 is older
		if has("fact 1") || !has("fact 0") || !has("new of u2") {
			t.Errorf("a save for u2 did not drop u2's oldest memory alone")
		}
		save("u9") // u9 has none: drops the agent's oldest, fact 0
		if has("fact 0") || !has("fact 2") || !has("new of u9") {
			t.Errorf("a save for a user without memories did not drop the agent's oldest")
		}
		_, total, err := s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{})
		mustOK(t, err)
		if total != domain.MaxMemories {
			t.Errorf("%d memories after dropping saves, want %d", total, domain.MaxMemories)
		}
		found, _, err := s.Memories().SearchMemories(ctx, acct.ID, a.ID, []string{"u1", "u2"}, []string{"n0", "n1", "n2"}, 10)
		mustOK(t, err)
		wantTexts(t, "search for dropped and kept memories", found, "fact 2")
	})
}

// searchFixture stores the memories the search tests read, in order one
// second apart: agent-wide, u1's and u2's, and one of another agent.
func searchFixture(t *testing.T, s *Store) (accountID, agentID string) {
	t.Helper()
	clock := withClock(s)
	acct := mustAccount(t, s, "acme")
	a, b := mustAgent(t, s, acct.ID, "keeper"), mustAgent(t, s, acct.ID, "other")
	for _, m := range []struct{ agent, user, text, terms string }{
		{a.ID, "", "the office is in Lyon", "the office is in lyon"},
		{a.ID, "u1", "u1 likes pizza", "u1 likes pizza"},
		{a.ID, "u2", "u2 hates pizza", "u2 hates pizza"},
		{a.ID, "u1", "u1 has a cat or two", "u1 has a cat or two"},
		{a.ID, "u1", "u1 works near Lyon", "u1 works near lyon"},
		{a.ID, "u1", "u1 plays Go, not chess", "u1 plays go not chess"},
		{a.ID, "u2", "u2 aime le café crème", "u2 aime le café crème"},
		{b.ID, "u1", "other agent: u1 likes pizza", "u1 likes pizza"},
	} {
		clock.add(time.Second)
		saveMemory(t, s, acct.ID, m.agent, m.user, m.text, m.terms)
	}
	return acct.ID, a.ID
}

// TestSearchMemories runs the same searches on both dialects, with the
// same expected results: any term matches, newest first, only the scope's
// memories, query syntax in terms read as plain words.
func TestSearchMemories(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct, a := searchFixture(t, s)
		both := []string{"", "u1"}
		for _, tc := range []struct {
			scope, terms []string
			limit        int
			want         []string
		}{
			{both, []string{"pizza"}, 10, []string{"u1 likes pizza"}},
			{[]string{"u2"}, []string{"pizza"}, 10, []string{"u2 hates pizza"}},
			{both, []string{"lyon", "cat"}, 10, []string{"u1 works near Lyon", "u1 has a cat or two", "the office is in Lyon"}},
			{both, []string{"lyon", "cat"}, 2, []string{"u1 works near Lyon", "u1 has a cat or two"}},
			{[]string{""}, []string{"lyon"}, 10, []string{"the office is in Lyon"}},
			{both, []string{"or", "near"}, 10, []string{"u1 works near Lyon", "u1 has a cat or two"}},
			{both, []string{"not"}, 10, []string{"u1 plays Go, not chess"}},
			{both, []string{"PIZZA*", `"cat`, "-chess", "l'yon"}, 10,
				[]string{"u1 plays Go, not chess", "u1 works near Lyon", "u1 has a cat or two", "u1 likes pizza", "the office is in Lyon"}},
			{both, []string{"OR", "AND"}, 10, []string{"u1 has a cat or two"}},
			{[]string{"u2"}, []string{"CRÈME", "thé"}, 10, []string{"u2 aime le café crème"}},
			{both, []string{"piz"}, 10, []string{}},
			{both, []string{"*", "-", ""}, 10, []string{}},
			{both, nil, 10, []string{}},
			{both, []string{"pizza"}, 0, []string{}},
			{nil, []string{"pizza"}, 10, []string{"u2 hates pizza", "u1 likes pizza"}},
		} {
			got, total, err := s.Memories().SearchMemories(ctx, acct, a, tc.scope, tc.terms, tc.limit)
			mustOK(t, err)
			wantTexts(t, fmt.Sprintf("search %q in %q", tc.terms, tc.scope), got, tc.want...)
			want := int64(7) // a nil scope is every memory of the agent
			if tc.scope != nil {
				want = 0
			}
			for _, u := range tc.scope {
				want += map[string]int64{"": 1, "u1": 4, "u2": 2}[u]
			}
			if total != want {
				t.Errorf("search in %q counts %d memories, want %d", tc.scope, total, want)
			}
		}
		_, _, err := s.Memories().SearchMemories(ctx, "acct_other", a, []string{""}, []string{"lyon"}, 10)
		wantErr(t, err, domain.ErrNotFound)
	})
}

// TestSearchUsesFullTextIndex: the search condition is served by the
// full-text index on each dialect (on PostgreSQL, only if the query's
// expression is the index's).
func TestSearchUsesFullTextIndex(t *testing.T) {
	for _, table := range []string{"memories", "knowledge_chunks"} {
		sql := func(s *Store) string {
			return s.r.ToSQL(func(tx *gorm.DB) *gorm.DB {
				return s.matchAny(tx.Table(table), table, []string{"alpha", "beta"}).Find(&[]map[string]any{})
			})
		}
		t.Run("sqlite/"+table, func(t *testing.T) {
			s := newSQLite(t)
			var plan []struct {
				ID, Parent, Notused int
				Detail              string
			}
			mustOK(t, s.r.Raw("EXPLAIN QUERY PLAN "+sql(s)).Scan(&plan).Error)
			if text := fmt.Sprint(plan); !strings.Contains(text, "VIRTUAL TABLE INDEX") || !strings.Contains(text, "INTEGER PRIMARY KEY") {
				t.Errorf("search of %s does not go through fts_%s by rowid: %s", table, table, text)
			}
		})
		t.Run("postgres/"+table, func(t *testing.T) {
			s := newPostgres(t)
			var plan []string
			mustOK(t, s.w.Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
					return err
				}
				return tx.Raw("EXPLAIN " + sql(s)).Scan(&plan).Error
			}))
			if text := strings.Join(plan, "\n"); !strings.Contains(text, "Index Scan on fts_"+table) {
				t.Errorf("search of %s does not use fts_%s:\n%s", table, table, text)
			}
		})
	}
}

// TestMemoryVectors: embeddings come back bit for bit, only those of the
// model asked and of the scope; later ones replace them by id, for the
// agent's memories only.
func TestMemoryVectors(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a, b := mustAgent(t, s, acct.ID, "keeper"), mustAgent(t, s, acct.ID, "other")
		vec := []float32{0.5, -0.25, 1e-7, float32(math.Inf(1)), -0, 3.4e38}
		create := func(agentID, user, text string, v []float32, model string) domain.Memory {
			m, err := s.Memories().CreateMemory(ctx, acct.ID, domain.Memory{AgentID: agentID, UserID: user, Text: text, Source: domain.MemorySourceAPI,
				Embedding: v, EmbeddingModel: model}, text, false)
			mustOK(t, err)
			return m
		}
		m1 := create(a.ID, "u1", "one", vec, "e1")
		m2 := create(a.ID, "", "two", nil, "")
		create(a.ID, "u2", "three", []float32{1}, "e1")
		theirs := create(b.ID, "u1", "theirs", []float32{9}, "e1")

		got, err := s.Memories().MemoryVectors(ctx, acct.ID, a.ID, []string{"", "u1"}, "e1")
		mustOK(t, err)
		if len(got) != 1 || got[0].ID != m1.ID || got[0].UserID != "u1" || got[0].Text != "one" || !reflect.DeepEqual(got[0].Embedding, vec) {
			t.Fatalf("vectors of e1 = %+v", got)
		}
		if got, err := s.Memories().MemoryVectors(ctx, acct.ID, a.ID, []string{"", "u1"}, ""); err != nil || len(got) != 0 {
			t.Errorf("vectors of no model = %+v, %v", got, err)
		}
		mustOK(t, s.Memories().SetMemoryEmbeddings(ctx, a.ID, "e2", map[string][]float32{
			m1.ID: {1, 2}, m2.ID: {3, 4}, theirs.ID: {5, 6}, "mem_gone": {7},
		}))
		got, err = s.Memories().MemoryVectors(ctx, acct.ID, a.ID, []string{"", "u1"}, "e2")
		mustOK(t, err)
		slices.SortFunc(got, func(x, y domain.Memory) int { return strings.Compare(x.Text, y.Text) })
		if len(got) != 2 || !reflect.DeepEqual(got[0].Embedding, []float32{1, 2}) || !reflect.DeepEqual(got[1].Embedding, []float32{3, 4}) {
			t.Errorf("vectors of e2 = %+v", got)
		}
		if got, _ := s.Memories().MemoryVectors(ctx, acct.ID, b.ID, []string{"u1"}, "e1"); len(got) != 1 || got[0].Embedding[0] != 9 {
			t.Errorf("another agent's vector was replaced: %+v", got)
		}
		_, err = s.Memories().MemoryVectors(ctx, "acct_other", a.ID, []string{""}, "e1")
		wantErr(t, err, domain.ErrNotFound)
	})
}

func TestVectorEncoding(t *testing.T) {
	for _, v := range [][]float32{nil, {0}, {1.5, -2, float32(math.NaN())}} {
		raw := encodeVector(v)
		if raw == nil || len(raw) != 4*len(v) {
			t.Errorf("encodeVector(%v) = %v", v, raw)
		}
		got := decodeVector(raw)
		if len(got) != len(v) || (len(v) > 0 && (got[0] != v[0] || math.Float32bits(got[len(v)-1]) != math.Float32bits(v[len(v)-1]))) {
			t.Errorf("decodeVector(encodeVector(%v)) = %v", v, got)
		}
	}
	if got := encodeVector([]float32{1}); !slices.Equal(got, []byte{0, 0, 0x80, 0x3f}) {
		t.Errorf("1.0 encodes as %x, want little-endian float32", got)
	}
	if decodeVector([]byte{1, 2, 3}) != nil {
		t.Error("a truncated vector decodes")
	}
}

func TestCleanTerms(t *testing.T) {
	got := queryTerms([]string{"Pizza*", `"or"`, "pizza", "l'été", "", "-", "NEAR", "x_y", "42"})
	if want := []string{"42", "lété", "near", "or", "pizza", "xy"}; !slices.Equal(got, want) {
		t.Errorf("queryTerms = %q, want %q", got, want)
	}
	if got := storedTerms("  Likes  PIZZA, pizza!\n"); got != "likes pizza pizza" {
		t.Errorf("storedTerms = %q", got)
	}
}

// TestDeletingAConversationKeepsItsMemories: memories outlive the
// conversation they were saved in; its summary, a column of it, does not.
func TestDeletingAConversationKeepsItsMemories(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "keeper")
		conv := ref("user:u1")
		_, convID, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, conv, domain.Message{UserID: "u1", Text: "I like tea"}, domain.Message{Text: "noted"})
		mustOK(t, err)
		_, err = s.Memories().CreateMemory(ctx, acct.ID, domain.Memory{AgentID: a.ID, UserID: "u1", Text: "likes tea", Source: domain.MemorySourceAgent,
			ConversationID: convID}, "likes tea", true)
		mustOK(t, err)
		mustOK(t, s.Conversations().SaveSummary(ctx, acct.ID, a.ID, conv, "tea talk", 2))
		_, err = s.Conversations().DeleteConversation(ctx, acct.ID, a.ID, convID)
		mustOK(t, err)
		found, _, err := s.Memories().SearchMemories(ctx, acct.ID, a.ID, []string{"u1"}, []string{"tea"}, 5)
		mustOK(t, err)
		if len(found) != 1 || found[0].ConversationID != convID {
			t.Errorf("memories after deleting their conversation: %+v", found)
		}
		summary, n, err := s.Conversations().ConversationSummary(ctx, acct.ID, a.ID, conv)
		if err != nil || summary != "" || n != 0 {
			t.Errorf("summary after deleting the conversation = %q, %d, %v", summary, n, err)
		}
	})
}

// TestConversationSummary: a summary is read back by reference and with
// the conversation, replaced only by one covering more messages (also when
// saves race), never by one covering more messages than there are.
func TestConversationSummary(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "chatty")
		conv := ref("room:r1")
		summary := func() (string, int) {
			t.Helper()
			text, n, err := s.Conversations().ConversationSummary(ctx, acct.ID, a.ID, conv)
			mustOK(t, err)
			return text, n
		}
		if text, n := summary(); text != "" || n != 0 {
			t.Errorf("summary before the conversation = %q, %d", text, n)
		}
		wantErr(t, s.Conversations().SaveSummary(ctx, acct.ID, a.ID, conv, "early", 1), domain.ErrConversationNotFound)
		var convID string
		for i := range 4 {
			clock.add(time.Second)
			_, id, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, conv, domain.Message{UserID: "u1", Text: fmt.Sprint("q", i)}, domain.Message{Text: fmt.Sprint("r", i)})
			mustOK(t, err)
			convID = id
		}
		msgs, err := s.Conversations().MessagesRange(ctx, acct.ID, a.ID, conv, 2, 5)
		mustOK(t, err)
		if texts(msgs) != "[q1 r1 q2]" {
			t.Errorf("messages [2, 5) = %s", texts(msgs))
		}
		for _, r := range [][2]int{{6, 20}, {8, 9}, {3, 3}, {-2, 1}} {
			msgs, err := s.Conversations().MessagesRange(ctx, acct.ID, a.ID, conv, r[0], r[1])
			mustOK(t, err)
			if want := map[int]string{6: "[q3 r3]", 8: "[]", 3: "[]", -2: "[q0]"}[r[0]]; texts(msgs) != want {
				t.Errorf("messages %v = %s, want %s", r, texts(msgs), want)
			}
		}

		mustOK(t, s.Conversations().SaveSummary(ctx, acct.ID, a.ID, conv, "first four", 4))
		mustOK(t, s.Conversations().SaveSummary(ctx, acct.ID, a.ID, conv, "first two", 2))
		mustOK(t, s.Conversations().SaveSummary(ctx, acct.ID, a.ID, conv, "first four again", 4))
		mustOK(t, s.Conversations().SaveSummary(ctx, acct.ID, a.ID, conv, "more than there are", 9))
		if text, n := summary(); text != "first four" || n != 4 {
			t.Errorf("summary = %q, %d; want the first one covering 4", text, n)
		}
		var wg sync.WaitGroup
		for n := 5; n <= 8; n++ {
			wg.Go(func() {
				if err := s.Conversations().SaveSummary(ctx, acct.ID, a.ID, conv, fmt.Sprint("first ", n), n); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if text, n := summary(); text != "first 8" || n != 8 {
			t.Errorf("summary after racing saves = %q, %d; want the widest", text, n)
		}
		c, err := s.Conversations().GetConversation(ctx, acct.ID, a.ID, convID)
		mustOK(t, err)
		listed, _, err := s.Conversations().ListConversations(ctx, acct.ID, a.ID, domain.ConversationQuery{})
		mustOK(t, err)
		if c.Summary != "first 8" || c.Summarized != 8 || len(listed) != 1 || listed[0].Summary != "first 8" || listed[0].Summarized != 8 {
			t.Errorf("conversation %+v, listed %+v", c, listed)
		}

		wantErr(t, s.Conversations().SaveSummary(ctx, acct.ID, a.ID, conv, strings.Repeat("x", MaxSummaryText+1), 10), domain.ErrInvalid)
		wantErr(t, s.Conversations().SaveSummary(ctx, "acct_other", a.ID, conv, "x", 10), domain.ErrNotFound)
		_, _, err = s.Conversations().ConversationSummary(ctx, "acct_other", a.ID, conv)
		wantErr(t, err, domain.ErrNotFound)
		_, err = s.Conversations().MessagesRange(ctx, "acct_other", a.ID, conv, 0, 2)
		wantErr(t, err, domain.ErrNotFound)
	})
}

// TestMemoriesSavedAnalytics: every memory created counts in its hour,
// saved by the model or through the API, dropping an older one or not.
func TestMemoriesSavedAnalytics(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "keeper")
		saveMemory(t, s, acct.ID, a.ID, "u1", "one", "one")
		clock.add(time.Hour)
		saveMemory(t, s, acct.ID, a.ID, "", "two", "two")
		_, err := s.Memories().CreateMemory(ctx, acct.ID, domain.Memory{AgentID: a.ID, UserID: "u1", Text: "three", Source: domain.MemorySourceAgent}, "three", true)
		mustOK(t, err)
		rep, err := s.Analytics().AgentAnalytics(ctx, acct.ID, a.ID, domain.AnalyticsQuery{From: t0, To: clock.now(), Interval: domain.IntervalHour})
		mustOK(t, err)
		if rep.Totals.MemoriesSaved != 3 || rep.Totals.Messages != 0 {
			t.Errorf("totals %+v, want 3 memories saved", rep.Totals)
		}
		rep, err = s.Analytics().AgentAnalytics(ctx, acct.ID, a.ID, domain.AnalyticsQuery{From: clock.now(), To: clock.now(), Interval: domain.IntervalHour})
		mustOK(t, err)
		if rep.Totals.MemoriesSaved != 2 {
			t.Errorf("second hour totals %+v, want 2 memories saved", rep.Totals)
		}
	})
}

// TestCreateMemories: a batch of memories is stored whole with its terms,
// embeddings and times, counted in the analytics of their hours, and
// refused whole, storing none, where it would pass MaxMemories or one of
// its memories is not one.
func TestCreateMemories(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "keeper")
		when := time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC)
		ms := []domain.Memory{
			{AgentID: a.ID, UserID: "ann", Text: "likes tea", Source: domain.MemorySourceAPI, CreatedAt: when, Embedding: []float32{1, 0}, EmbeddingModel: "e1"},
			{AgentID: a.ID, Text: "speaks French", Source: domain.MemorySourceAPI, CreatedAt: when.Add(time.Hour)},
			{AgentID: a.ID, Text: "now", Source: domain.MemorySourceAPI},
		}
		made, err := s.Memories().CreateMemories(ctx, acct.ID, ms, []string{"likes tea", "speaks french", "now"})
		mustOK(t, err)
		if len(made) != 3 || !strings.HasPrefix(made[0].ID, "mem_") || !made[0].CreatedAt.Equal(when) || made[2].CreatedAt.IsZero() {
			t.Errorf("created %+v", made)
		}
		all, total, err := s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{})
		mustOK(t, err)
		if total != 3 || !all[1].CreatedAt.Equal(when.Add(time.Hour)) || all[2].UserID != "ann" {
			t.Errorf("listed %+v", all)
		}
		if found, n, err := s.Memories().SearchMemories(ctx, acct.ID, a.ID, nil, []string{"french"}, 5); err != nil || n != 3 || len(found) != 1 || found[0].Text != "speaks French" {
			t.Errorf("searched %+v (%d), %v", found, n, err)
		}
		if vecs, err := s.Memories().MemoryVectors(ctx, acct.ID, a.ID, nil, "e1"); err != nil || len(vecs) != 1 {
			t.Errorf("vectors %+v, %v", vecs, err)
		}
		stats, err := s.Analytics().AgentAnalytics(ctx, acct.ID, a.ID, domain.AnalyticsQuery{From: when.Add(-time.Hour), To: when.Add(2 * time.Hour), Interval: domain.IntervalHour})
		mustOK(t, err)
		if stats.Totals.MemoriesSaved != 2 {
			t.Errorf("memories saved in their hours: %+v", stats.Totals)
		}

		bad := []domain.Memory{{AgentID: a.ID, Text: "fine", Source: domain.MemorySourceAPI}, {AgentID: a.ID, Text: "", Source: domain.MemorySourceAPI}}
		_, err = s.Memories().CreateMemories(ctx, acct.ID, bad, []string{"fine", ""})
		wantErr(t, err, domain.ErrInvalid)
		fillMemories(t, s, a.ID, domain.MaxMemories-4, func(int) string { return "" })
		_, err = s.Memories().CreateMemories(ctx, acct.ID, bad[:1:1], []string{"fine"})
		mustOK(t, err)
		_, err = s.Memories().CreateMemories(ctx, acct.ID, append(bad[:1:1], bad[0]), []string{"fine", "fine"})
		var se *domain.Error
		if !errors.As(err, &se) || se.Code != domain.CodeQuotaExceeded || se.Used != domain.MaxMemories {
			t.Errorf("past the quota: %v", err)
		}
		if _, total, _ := s.Memories().ListMemories(ctx, acct.ID, a.ID, domain.MemoryQuery{}); total != domain.MaxMemories {
			t.Errorf("%d memories after refused batches, want %d", total, domain.MaxMemories)
		}
		_, err = s.Memories().CreateMemories(ctx, mustAccount(t, s, "other").ID, bad[:1], []string{"fine"})
		wantErr(t, err, domain.ErrNotFound)
	})
}
