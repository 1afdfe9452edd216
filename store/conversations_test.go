package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

func TestSaveExchangeAndHistory(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "chatty")
		var want []string
		for i := 1; i <= 3; i++ {
			clock.add(time.Second)
			reply, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref("user:u1"),
				domain.Message{UserID: "u1", Text: fmt.Sprint("q", i)},
				domain.Message{UserID: "u1", Text: fmt.Sprint("r", i), Model: "gpt-4o-mini", PromptTokens: 10, CompletionTokens: i})
			mustOK(t, err)
			if !strings.HasPrefix(reply.ID, "msg_") || reply.Role != domain.RoleAssistant || reply.Text != fmt.Sprint("r", i) ||
				!reply.CreatedAt.After(clock.now()) {
				t.Errorf("reply = %+v", reply)
			}
			want = append(want, fmt.Sprint("q", i), fmt.Sprint("r", i))
		}
		h, err := s.Conversations().History(ctx, acct.ID, a.ID, ref("user:u1"), 10)
		mustOK(t, err)
		if got := texts(h); got != fmt.Sprint(want) {
			t.Errorf("history = %s, want %v", got, want)
		}
		if h[0].Role != domain.RoleUser || h[0].UserID != "u1" || h[5].Model != "gpt-4o-mini" || h[5].CompletionTokens != 3 ||
			h[5].PromptTokens != 10 || h[0].CreatedAt.Location() != time.UTC {
			t.Errorf("stored messages = %+v", h)
		}
		h, err = s.Conversations().History(ctx, acct.ID, a.ID, ref("user:u1"), 4)
		mustOK(t, err)
		if got := texts(h); got != fmt.Sprint(want[2:]) {
			t.Errorf("last 4 = %s, want %v", got, want[2:])
		}
		for _, tc := range []struct {
			key   string
			limit int
		}{{"user:u2", 10}, {"room:user:u1", 10}, {"user:u1", 0}} {
			h, err = s.Conversations().History(ctx, acct.ID, a.ID, ref(tc.key), tc.limit)
			mustOK(t, err)
			if h == nil || len(h) != 0 {
				t.Errorf("history(%s, %d) = %v, want empty", tc.key, tc.limit, h)
			}
		}
	})
}

func TestSaveExchangeKeepsCallerValues(t *testing.T) {
	s := newSQLite(t)
	ctx := context.Background()
	acct := mustAccount(t, s, "acme")
	a := mustAgent(t, s, acct.ID, "chatty")
	at := t0.Add(123456789 * time.Nanosecond)
	reply, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref("room:r1"),
		domain.Message{ID: "msg_zzz", UserID: "u1", Text: "hi", CreatedAt: at},
		domain.Message{ID: "msg_aaa", Text: "hello", CreatedAt: at})
	mustOK(t, err)
	if reply.ID != "msg_aaa" || !reply.CreatedAt.Equal(t0.Add(124*time.Millisecond)) {
		t.Errorf("reply = %+v, want id msg_aaa one millisecond after the question", reply)
	}
	h, err := s.Conversations().History(ctx, acct.ID, a.ID, ref("room:r1"), 5)
	mustOK(t, err)
	if texts(h) != "[hi hello]" || h[0].ID != "msg_zzz" || !h[0].CreatedAt.Equal(t0.Add(123*time.Millisecond)) {
		t.Errorf("history = %+v", h)
	}
}

func TestMetricsCounters(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "chatty")
		for _, key := range []string{"user:u1", "user:u1", "room:r1", "", "user:u2", ""} {
			clock.add(time.Second)
			_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref(key), domain.Message{Text: "q"}, domain.Message{Text: "r"})
			mustOK(t, err)
		}
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		if got.Metrics != (domain.Metrics{TotalMessages: 6, TotalConversations: 3, Uptime: 100}) {
			t.Errorf("metrics = %+v", got.Metrics)
		}
		if !got.UpdatedAt.Equal(a.UpdatedAt) {
			t.Errorf("messages moved updatedAt to %v", got.UpdatedAt)
		}
		h, err := s.Conversations().History(ctx, acct.ID, a.ID, ref(""), 10)
		mustOK(t, err)
		if len(h) != 0 {
			t.Errorf("keyless exchanges were stored: %v", h)
		}
		_, _, err = s.Conversations().SaveExchange(ctx, acct.ID, "agent_missing", ref(""), domain.Message{Text: "q"}, domain.Message{Text: "r"})
		wantErr(t, err, domain.ErrNotFound)
	})
}

func texts(ms []domain.Message) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return fmt.Sprint(out)
}

// The store, not its caller, keeps accounts apart: another account can
// neither read an agent's history nor add to it.
func TestHistoryAndExchangeAreScopedToTheAccount(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		other := mustAccount(t, s, "other")
		a := mustAgent(t, s, acct.ID, "private")
		_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref("user:u1"), domain.Message{Text: "secret plan"}, domain.Message{Text: "noted"})
		mustOK(t, err)

		h, err := s.Conversations().History(ctx, other.ID, a.ID, ref("user:u1"), 10)
		mustOK(t, err)
		if len(h) != 0 {
			t.Errorf("another account read the history: %v", h)
		}
		_, _, err = s.Conversations().SaveExchange(ctx, other.ID, a.ID, ref("user:u1"), domain.Message{Text: "q"}, domain.Message{Text: "r"})
		wantErr(t, err, domain.ErrNotFound)
		if got := mustGet(t, s, acct.ID, a.ID); got.Metrics.TotalMessages != 1 {
			t.Errorf("another account's exchange counted: %d messages", got.Metrics.TotalMessages)
		}
		if h, _ := s.Conversations().History(ctx, acct.ID, a.ID, ref("user:u1"), 10); len(h) != 2 {
			t.Errorf("history = %d messages, want 2", len(h))
		}
	})
}

// TestConcurrentFirstMessagesOpenOneConversation: first messages sent at
// once to a conversation that does not exist yet open it once: the agent
// counts one conversation and every message, and the conversation holds
// them all, its last activity one of the replies'.
func TestConcurrentFirstMessagesOpenOneConversation(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "busy")
		const senders = 16
		replies := make([]domain.Message, senders)
		for _, err := range together(senders, func(i int) (err error) {
			replies[i], _, err = s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref("user:ann"), domain.Message{Text: "hi", UserID: "ann"}, domain.Message{Text: "hello"})
			return err
		}) {
			mustOK(t, err)
		}
		got := mustGet(t, s, acct.ID, a.ID)
		c, err := s.Conversations().FindConversation(ctx, acct.ID, a.ID, ref("user:ann"))
		mustOK(t, err)
		aReply := slices.ContainsFunc(replies, func(r domain.Message) bool { return r.CreatedAt.Equal(c.LastMessageAt) })
		if got.Metrics.TotalConversations != 1 || got.Metrics.TotalMessages != senders || c.MessageCount != 2*senders || !aReply {
			t.Errorf("agent counts %d conversations and %d messages; the conversation %d messages, last at %s (want 1, %d, %d, a reply's)",
				got.Metrics.TotalConversations, got.Metrics.TotalMessages, c.MessageCount, c.LastMessageAt, senders, 2*senders)
		}
	})
}

// TestOpenConversationBeforeTheExchange: a turn opens its conversation when
// it is accepted, before the reply exists; opening it again, at once from
// many turns too, finds the same one, and the exchange stored later goes in
// it. The agent counts it once; another account cannot open one.
func TestOpenConversationBeforeTheExchange(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		other := mustAccount(t, s, "other")
		a := mustAgent(t, s, acct.ID, "early")
		ids := make([]string, 8)
		for _, err := range together(len(ids), func(i int) (err error) {
			ids[i], err = s.Conversations().OpenConversation(ctx, acct.ID, a.ID, ref("user:ann"))
			return err
		}) {
			mustOK(t, err)
		}
		if ids[0] == "" || slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
			t.Fatalf("opened %v, want one conversation", ids)
		}
		_, convID, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref("user:ann"), domain.Message{Text: "hi", UserID: "ann"}, domain.Message{Text: "hello"})
		mustOK(t, err)
		c, err := s.Conversations().FindConversation(ctx, acct.ID, a.ID, ref("user:ann"))
		mustOK(t, err)
		got := mustGet(t, s, acct.ID, a.ID)
		if convID != ids[0] || c.ID != ids[0] || c.MessageCount != 2 || got.Metrics.TotalConversations != 1 || got.Metrics.TotalMessages != 1 {
			t.Errorf("exchange in %s; conversation %s holds %d messages; agent counts %d conversations, %d messages",
				convID, c.ID, c.MessageCount, got.Metrics.TotalConversations, got.Metrics.TotalMessages)
		}
		if id, err := s.Conversations().OpenConversation(ctx, acct.ID, a.ID, ref("")); id != "" || err != nil {
			t.Errorf("no conversation named: %q, %v", id, err)
		}
		_, err = s.Conversations().OpenConversation(ctx, other.ID, a.ID, ref("user:bob"))
		wantErr(t, err, domain.ErrNotFound)
	})
}
