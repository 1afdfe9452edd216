package store

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestImportConversation: imported messages keep their roles, users, texts,
// times and order, in a conversation found by its key like any other, and
// count on no metric of the agent but its conversations.
func TestImportConversation(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "mover")
		t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		msgs := []domain.Message{
			{Role: domain.RoleUser, UserID: "ann", Text: "hi", CreatedAt: t0},
			{Role: domain.RoleAssistant, UserID: "ann", Text: "hello", CreatedAt: t0.Add(time.Second)},
			{Role: domain.RoleUser, UserID: "bob", Text: "me too", CreatedAt: t0.Add(2 * time.Second)},
			{Role: domain.RoleAssistant, UserID: "bob", Text: "half", Partial: true, CreatedAt: t0.Add(3 * time.Second)},
		}
		mustOK(t, s.Conversations().ImportConversation(ctx, acct.ID, a.ID, domain.ConversationRef{RoomID: "lobby", Platform: "discord"}, msgs))

		convs, total, err := s.Conversations().ListConversations(ctx, acct.ID, a.ID, domain.ConversationQuery{RoomID: "lobby"})
		mustOK(t, err)
		if total != 1 || convs[0].MessageCount != 4 || convs[0].Platform != "discord" || convs[0].Title != "hi" || !convs[0].LastMessageAt.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("conversation %+v (of %d)", convs, total)
		}
		got, _, err := s.Conversations().ListMessages(ctx, acct.ID, a.ID, convs[0].ID, domain.MessageQuery{Limit: 10})
		mustOK(t, err)
		for i, m := range got {
			w := msgs[i]
			if m.Role != w.Role || m.UserID != w.UserID || m.Text != w.Text || m.Partial != w.Partial || !m.CreatedAt.Equal(w.CreatedAt) {
				t.Errorf("message %d = %+v, want %+v", i, m, w)
			}
		}
		if bob, _, _ := s.Conversations().ListConversations(ctx, acct.ID, a.ID, domain.ConversationQuery{UserID: "bob"}); len(bob) != 1 {
			t.Errorf("bob spoke in %d conversations, want 1", len(bob))
		}
		agent, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		if agent.Metrics.TotalMessages != 0 || agent.Metrics.TotalConversations != 1 {
			t.Errorf("metrics %+v", agent.Metrics)
		}

		wantErr(t, s.Conversations().ImportConversation(ctx, acct.ID, a.ID, domain.ConversationRef{}, msgs), domain.ErrInvalid)
		wantErr(t, s.Conversations().ImportConversation(ctx, acct.ID, a.ID, domain.ConversationRef{UserID: "x"}, nil), domain.ErrInvalid)
		other := mustAccount(t, s, "other")
		wantErr(t, s.Conversations().ImportConversation(ctx, other.ID, a.ID, domain.ConversationRef{UserID: "x"}, msgs), domain.ErrNotFound)
	})
}

// TestKnowledgeText: a document's chunks come back joined in order.
func TestKnowledgeText(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "reader")
		chunks := []domain.KnowledgeChunk{{Text: "one"}, {Text: "two"}, {Text: "three"}}
		doc, err := s.Knowledge().CreateKnowledge(ctx, acct.ID, a.ID, "doc", 13, chunks, []string{"one", "two", "three"})
		mustOK(t, err)
		text, err := s.Knowledge().KnowledgeText(ctx, acct.ID, a.ID, doc.ID)
		mustOK(t, err)
		if text != "one\n\ntwo\n\nthree" {
			t.Errorf("text %q", text)
		}
		other := mustAccount(t, s, "other")
		_, err = s.Knowledge().KnowledgeText(ctx, other.ID, a.ID, doc.ID)
		wantErr(t, err, domain.ErrNotFound)
	})
}
