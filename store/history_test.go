package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

func TestConversationsAreListedAndFiltered(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "host")
		say := func(conv domain.ConversationRef, user string) string {
			t.Helper()
			clock.add(time.Second)
			_, id, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, conv, domain.Message{UserID: user, Text: "q"}, domain.Message{Text: "r"})
			mustOK(t, err)
			return id
		}
		lobby := say(domain.ConversationRef{RoomID: "lobby"}, "ann")
		direct := say(domain.ConversationRef{UserID: "bob"}, "bob")
		tg := say(domain.ConversationRef{RoomID: "telegram:42", Platform: "telegram"}, "telegram:7")
		if again := say(domain.ConversationRef{RoomID: "lobby"}, "bob"); again != lobby {
			t.Fatalf("second message in the room made conversation %s, want %s", again, lobby)
		}

		list := func(q domain.ConversationQuery) string {
			t.Helper()
			convs, total, err := s.Conversations().ListConversations(ctx, acct.ID, a.ID, q)
			mustOK(t, err)
			ids := make([]string, len(convs))
			for i, c := range convs {
				ids[i] = c.ID
			}
			return fmt.Sprintf("%d %s", total, strings.Join(ids, ","))
		}
		for name, tc := range map[string]struct {
			q    domain.ConversationQuery
			want string
		}{
			"most recently active first": {domain.ConversationQuery{}, fmt.Sprintf("3 %s,%s,%s", lobby, tg, direct)},
			"user spoke in a room too":   {domain.ConversationQuery{UserID: "bob"}, fmt.Sprintf("2 %s,%s", lobby, direct)},
			"room":                       {domain.ConversationQuery{RoomID: "lobby"}, "1 " + lobby},
			"platform":                   {domain.ConversationQuery{Platform: "telegram"}, "1 " + tg},
			"api platform":               {domain.ConversationQuery{Platform: domain.PlatformAPI}, fmt.Sprintf("2 %s,%s", lobby, direct)},
			"page 2 of 2":                {domain.ConversationQuery{Page: 2, Limit: 2}, "3 " + direct},
			"page past the end":          {domain.ConversationQuery{Page: 9, Limit: 2}, "3 "},
			"nobody":                     {domain.ConversationQuery{UserID: "zed"}, "0 "},
		} {
			if got := list(tc.q); got != tc.want {
				t.Errorf("%s: got %s, want %s", name, got, tc.want)
			}
		}

		c, err := s.Conversations().GetConversation(ctx, acct.ID, a.ID, lobby)
		mustOK(t, err)
		if c.Kind != domain.KindRoom || c.RoomID != "lobby" || c.UserID != "" || c.Platform != domain.PlatformAPI ||
			c.MessageCount != 4 || !c.LastMessageAt.After(c.StartedAt) {
			t.Errorf("room conversation = %+v", c)
		}
		c, err = s.Conversations().GetConversation(ctx, acct.ID, a.ID, direct)
		mustOK(t, err)
		if c.Kind != domain.KindDirect || c.UserID != "bob" || c.RoomID != "" || c.MessageCount != 2 {
			t.Errorf("direct conversation = %+v", c)
		}

		other := mustAccount(t, s, "other")
		_, err = s.Conversations().GetConversation(ctx, other.ID, a.ID, lobby)
		wantErr(t, err, domain.ErrNotFound)
		if err != nil && strings.Contains(err.Error(), domain.ErrConversationNotFound.Error()) {
			t.Errorf("another account's agent reported as a missing conversation: %v", err)
		}
		_, _, err = s.Conversations().ListConversations(ctx, other.ID, a.ID, domain.ConversationQuery{})
		wantErr(t, err, domain.ErrNotFound)
		_, err = s.Conversations().GetConversation(ctx, acct.ID, a.ID, "conv_missing")
		wantErr(t, err, domain.ErrConversationNotFound)
	})
}

func TestMessagesPagesAndDelete(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "host")
		room := domain.ConversationRef{RoomID: "r"}
		var convID string
		for i := 0; i < 3; i++ {
			clock.add(time.Second)
			var err error
			_, convID, err = s.Conversations().SaveExchange(ctx, acct.ID, a.ID, room, domain.Message{UserID: "u", Text: fmt.Sprint("q", i)},
				domain.Message{Text: fmt.Sprint("r", i), TokensUsed: 7, ResponseMillis: 12.5, Model: "m", Partial: i == 2})
			mustOK(t, err)
		}
		texts := func(q domain.MessageQuery) string {
			t.Helper()
			msgs, total, err := s.Conversations().ListMessages(ctx, acct.ID, a.ID, convID, q)
			mustOK(t, err)
			out := []string{fmt.Sprint(total)}
			for _, m := range msgs {
				out = append(out, m.Text)
			}
			return strings.Join(out, " ")
		}
		if got := texts(domain.MessageQuery{}); got != "6 q0 r0 q1 r1 q2 r2" {
			t.Errorf("asc: %s", got)
		}
		if got := texts(domain.MessageQuery{Desc: true, Limit: 4}); got != "6 r2 q2 r1 q1" {
			t.Errorf("desc: %s", got)
		}
		if got := texts(domain.MessageQuery{Page: 2, Limit: 4}); got != "6 q2 r2" {
			t.Errorf("page 2: %s", got)
		}
		msgs, _, _ := s.Conversations().ListMessages(ctx, acct.ID, a.ID, convID, domain.MessageQuery{Desc: true, Limit: 2})
		if r := msgs[0]; !r.Partial || r.Role != domain.RoleAssistant || r.TokensUsed != 7 || r.ResponseMillis != 12.5 || r.Model != "m" ||
			!strings.HasPrefix(r.ID, "msg_") || !strings.HasPrefix(msgs[1].ID, "msg_") || msgs[1].Role != domain.RoleUser || msgs[1].UserID != "u" {
			t.Errorf("newest messages = %+v", msgs)
		}

		n, err := s.Conversations().DeleteConversation(ctx, acct.ID, a.ID, convID)
		mustOK(t, err)
		if n != 6 {
			t.Errorf("deleted %d messages, want 6", n)
		}
		_, _, err = s.Conversations().ListMessages(ctx, acct.ID, a.ID, convID, domain.MessageQuery{})
		wantErr(t, err, domain.ErrConversationNotFound)
		_, err = s.Conversations().DeleteConversation(ctx, acct.ID, a.ID, convID)
		wantErr(t, err, domain.ErrConversationNotFound)
		got := mustGet(t, s, acct.ID, a.ID)
		if got.Metrics.TotalMessages != 3 || got.Metrics.TotalConversations != 1 {
			t.Errorf("lifetime counters went down: %+v", got.Metrics)
		}
		_, again, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, room, domain.Message{UserID: "u", Text: "back"}, domain.Message{Text: "hi"})
		mustOK(t, err)
		if again == convID || again == "" {
			t.Errorf("the room's next message joined conversation %q, want a new one", again)
		}
		if h, _ := s.Conversations().History(ctx, acct.ID, a.ID, room, 10); len(h) != 2 {
			t.Errorf("history after delete holds %d messages, want 2", len(h))
		}
		if got := mustGet(t, s, acct.ID, a.ID); got.Metrics.TotalConversations != 2 {
			t.Errorf("totalConversations = %d, want 2", got.Metrics.TotalConversations)
		}
	})
}

func TestAnalyticsBuckets(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "host")
		day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		at := func(h, m, sec, ms int) time.Time {
			return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute +
				time.Duration(sec)*time.Second + time.Duration(ms)*time.Millisecond)
		}
		say := func(user, room string, sent time.Time, ms float64, tokens int) {
			t.Helper()
			_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, domain.ConversationRef{RoomID: room, UserID: user},
				domain.Message{UserID: user, Text: "q", CreatedAt: sent},
				domain.Message{Text: "r", CreatedAt: sent.Add(time.Duration(ms) * time.Millisecond), ResponseMillis: ms, TokensUsed: tokens})
			mustOK(t, err)
		}
		// The user message at 10:59:59.999 and its reply at 11:00:00.000
		// fall in two buckets; the next one is wholly in 11:00.
		say("ann", "", at(10, 59, 59, 999), 1, 10)
		say("bob", "lobby", at(11, 0, 0, 0), 100, 20)
		say("ann", "lobby", at(11, 30, 0, 0), 200, 30)
		mustOK(t, s.Analytics().RecordTurnError(ctx, acct.ID, a.ID, "rate_limited", at(11, 45, 0, 0)))
		say("cy", "", at(13, 5, 0, 0), 1000, 40)

		rep, err := s.Analytics().AgentAnalytics(ctx, acct.ID, a.ID, domain.AnalyticsQuery{From: at(10, 15, 0, 0), To: at(13, 0, 0, 0), Interval: domain.IntervalHour})
		mustOK(t, err)
		var got []string
		for _, b := range rep.Series {
			got = append(got, fmt.Sprintf("%s:%d/%d/%d/%g", b.Start.Format("15"), b.Messages, b.TokensUsed, b.Errors, b.P50ResponseTime))
		}
		want := "10:1/0/0/0 11:5/60/1/104.5 12:0/0/0/0 13:2/40/0/931.74" // percentiles within 10%
		if strings.Join(got, " ") != want {
			t.Errorf("series = %s\nwant       %s", strings.Join(got, " "), want)
		}
		tot := rep.Totals
		if tot.Messages != 8 || tot.TokensUsed != 100 || tot.Errors != 1 || tot.Users != 3 || tot.Conversations != 3 {
			t.Errorf("totals = %+v", tot)
		}
		if avg := tot.ResponseTime.Avg; avg < 325 || avg > 325.5 {
			t.Errorf("avg response time = %v, want 325.25", avg)
		}
		if p95 := tot.ResponseTime.P95; p95 < 900 || p95 > 1100 {
			t.Errorf("p95 = %v, want about 1000", p95)
		}

		rep, err = s.Analytics().AgentAnalytics(ctx, acct.ID, a.ID, domain.AnalyticsQuery{From: at(12, 0, 0, 0), To: at(12, 59, 0, 0), Interval: domain.IntervalHour})
		mustOK(t, err)
		if len(rep.Series) != 1 || rep.Series[0].Messages != 0 || rep.Totals.Users != 0 || rep.Totals.ResponseTime.P50 != 0 {
			t.Errorf("empty hour = %+v", rep)
		}
		rep, err = s.Analytics().AgentAnalytics(ctx, acct.ID, a.ID, domain.AnalyticsQuery{From: day.Add(-time.Hour), To: at(13, 0, 0, 0), Interval: domain.IntervalDay})
		mustOK(t, err)
		if len(rep.Series) != 2 || rep.Series[0].Messages != 0 || rep.Series[1].Messages != 8 || !rep.Series[1].Start.Equal(day) {
			t.Errorf("days = %+v", rep.Series)
		}

		_, err = s.Analytics().AgentAnalytics(ctx, acct.ID, a.ID, domain.AnalyticsQuery{From: day, To: day.Add(-time.Hour), Interval: domain.IntervalHour})
		wantErr(t, err, domain.ErrInvalid)
		other := mustAccount(t, s, "other")
		_, err = s.Analytics().AgentAnalytics(ctx, other.ID, a.ID, domain.AnalyticsQuery{From: day, To: day, Interval: domain.IntervalHour})
		wantErr(t, err, domain.ErrNotFound)
		wantErr(t, s.Analytics().RecordTurnError(ctx, other.ID, a.ID, "x", day), domain.ErrNotFound)

		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		mustOK(t, err)
		for _, model := range analyticsModels() {
			var n int64
			mustOK(t, s.r.Model(model).Where("agent_id = ?", a.ID).Count(&n).Error)
			if n != 0 {
				t.Errorf("%T: %d rows left after the agent was deleted", model, n)
			}
		}
	})
}

func TestLatencyBuckets(t *testing.T) {
	for _, ms := range []float64{0.5, 1, 1.3, 10, 99, 1000, 60000} {
		v := bucketValue(latencyBucket(ms))
		if ms > 1 && (v < ms/1.1 || v > ms*1.1) {
			t.Errorf("%v ms reports as %v: more than 10%% off", ms, v)
		}
	}
}

// historyQueries are the shapes of the history and analytics reads, each of
// which an index must serve without sorting or scanning a table.
var historyQueries = map[string]string{
	"conversations":             "SELECT * FROM conversations WHERE agent_id = 'a' ORDER BY last_message_at DESC, id DESC LIMIT 20",
	"conversations by platform": "SELECT * FROM conversations WHERE agent_id = 'a' AND platform = 'api' ORDER BY last_message_at DESC, id DESC LIMIT 20",
	"conversations by room":     "SELECT * FROM conversations WHERE agent_id = 'a' AND key = 'room:r'",
	"conversations by user":     "SELECT conversation_id FROM conversation_users WHERE agent_id = 'a' AND user_id = 'u'",
	"messages":                  "SELECT * FROM messages WHERE conversation_id = 'c' ORDER BY created_at DESC, id DESC LIMIT 20",
	"hour stats":                "SELECT * FROM agent_hour_stats WHERE agent_id = 'a' AND hour >= '2026-01-01' AND hour < '2026-01-08'",
	"hour sketches":             "SELECT * FROM agent_hour_sketches WHERE agent_id = 'a' AND hour >= '2026-01-01' AND hour < '2026-01-08'",
	"hour latency":              "SELECT * FROM agent_hour_latency WHERE agent_id = 'a' AND hour >= '2026-01-01' AND hour < '2026-01-08'",
}

func TestHistoryQueriesUseIndexes(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		s := newSQLite(t)
		for name, q := range historyQueries {
			var plan []struct {
				ID, Parent, Notused int
				Detail              string
			}
			mustOK(t, s.r.Raw("EXPLAIN QUERY PLAN "+q).Scan(&plan).Error)
			text := fmt.Sprint(plan)
			t.Logf("%s: %s", name, text)
			if !strings.Contains(text, "USING") || strings.Contains(text, "TEMP B-TREE") {
				t.Errorf("%s is not served by an index: %s", name, text)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		s := newPostgres(t)
		for name, q := range historyQueries {
			var plan []string
			err := s.w.Transaction(func(tx *gorm.DB) error {
				// Tables this small are cheaper to scan: ask whether an index can serve.
				if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
					return err
				}
				return tx.Raw("EXPLAIN " + q).Scan(&plan).Error
			})
			mustOK(t, err)
			text := strings.Join(plan, "\n")
			t.Logf("%s:\n%s", name, text)
			if strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") {
				t.Errorf("%s is not served by an index:\n%s", name, text)
			}
		}
	})
}

func TestSketchCountsDistinctValues(t *testing.T) {
	for _, n := range []int{0, 1, 3, 100, sparseLimit, sparseLimit + 1, 5000, 50000} {
		s := decodeSketch(nil)
		for i := 0; i < n; i++ {
			s.add(fmt.Sprint("user-", i))
			s.add(fmt.Sprint("user-", i)) // a repeat changes nothing
		}
		got := decodeSketch(s.encode()).estimate()
		if n <= sparseLimit && got != int64(n) {
			t.Errorf("%d values estimated as %d: small counts must be exact", n, got)
		}
		if diff := float64(got-int64(n)) / float64(max(n, 1)); diff > 0.05 || diff < -0.05 {
			t.Errorf("%d values estimated as %d", n, got)
		}
	}
	a, b := &sketch{}, &sketch{}
	for i := 0; i < 300; i++ {
		a.add(fmt.Sprint(i))
		b.add(fmt.Sprint(i + 200))
	}
	a.merge(b)
	if got := a.estimate(); got != 500 {
		t.Errorf("merged 0..499 estimated as %d, want exactly 500", got)
	}
	for i := 0; i < 5000; i++ {
		b.add(fmt.Sprint("many-", i))
	}
	a.merge(b)
	if got := a.estimate(); got < 5500*0.95 || got > 5500*1.05 {
		t.Errorf("merged 5,500 estimated as %d", got)
	}
}
