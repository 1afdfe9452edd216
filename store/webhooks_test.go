package store

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// claimSecrets queues a test delivery to w and returns the secrets its
// claimed job would sign with.
func claimSecrets(t *testing.T, s *Store, w domain.Webhook) []string {
	t.Helper()
	ctx := context.Background()
	mustOK(t, s.Webhooks().TestWebhook(ctx, w.AccountID, w.ID))
	jobs, err := s.Webhooks().ClaimDeliveries(ctx, 10, time.Minute)
	mustOK(t, err)
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(jobs))
	}
	return jobs[0].Secrets
}

// TestWebhookSecretsAtRest: secrets are sealed under the key, open for the
// workers, move to a new key with RotateSecrets, and a secret that does not
// open yields a job without secrets instead of failing every claim.
func TestWebhookSecretsAtRest(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		old := newBox(t)
		s.box = old
		w, err := s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		mustOK(t, err)
		var stored []string
		mustOK(t, s.w.Model(&webhookRow{}).Pluck("secret", &stored).Error)
		if len(stored) != 1 || strings.Contains(stored[0], strings.TrimPrefix(w.Secret, SecretPrefix)) {
			t.Fatalf("stored secret %q is not sealed", stored)
		}
		if got := claimSecrets(t, s, w); len(got) != 1 || got[0] != w.Secret {
			t.Fatalf("job secrets %q, want the created one", got)
		}

		s.box = newBox(t)
		if got := claimSecrets(t, s, w); len(got) != 0 {
			t.Fatalf("job secrets %q under another key, want none", got)
		}
		res, err := s.Agents().RotateSecrets(ctx, old)
		mustOK(t, err)
		if res.Webhooks != 1 || len(res.Unreadable) != 0 {
			t.Fatalf("rotate = %+v, want 1 webhook", res)
		}
		if got := claimSecrets(t, s, w); len(got) != 1 || got[0] != w.Secret {
			t.Fatalf("job secrets after rotation %q, want the created one", got)
		}
	})
}

// TestConcurrentFailuresDisableWebhook: DisableAfter deliveries that fail
// for good at the same moment, on as many workers, disable their webhook.
// Each finish used to count the failures it could see; on PostgreSQL two
// finishing together each missed the other's uncommitted row, so the last
// ones all counted DisableAfter-1 and the webhook stayed enabled for good.
func TestConcurrentFailuresDisableWebhook(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		w, err := s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		mustOK(t, err)
		for range DisableAfter {
			mustOK(t, s.Webhooks().TestWebhook(ctx, acct.ID, w.ID))
		}
		jobs, err := s.Webhooks().ClaimDeliveries(ctx, DisableAfter, time.Minute)
		mustOK(t, err)
		if len(jobs) != DisableAfter {
			t.Fatalf("claimed %d jobs, want %d", len(jobs), DisableAfter)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, job := range jobs {
			wg.Go(func() {
				<-start
				if err := s.Webhooks().FinishAttempt(ctx, job, domain.Attempt{At: time.Now(), StatusCode: 500, Error: "HTTP 500"}); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		got, err := s.Webhooks().GetWebhook(ctx, acct.ID, w.ID)
		mustOK(t, err)
		if got.Enabled {
			t.Fatalf("webhook enabled after %d failures in a row", DisableAfter)
		}
	})
}

// TestDeletingMessagesDeletesTheirEvents: the text of a message lives in
// its message.completed event too; deleting the conversation or the agent
// deletes those events with their deliveries and attempts, so no retry
// can send the text again. Other events stay.
func TestDeletingMessagesDeletesTheirEvents(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		_, err := s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		mustOK(t, err)
		agent := mustAgent(t, s, acct.ID, "talker")
		exchange := func(user string) string {
			_, convID, err := s.Conversations().SaveExchange(ctx, acct.ID, agent.ID, domain.ConversationRef{UserID: user, Platform: domain.PlatformAPI},
				domain.Message{Role: domain.RoleUser, UserID: user, Text: "secret of " + user, CreatedAt: time.Now()},
				domain.Message{Role: domain.RoleAssistant, UserID: user, Text: "noted"})
			mustOK(t, err)
			return convID
		}
		count := func(what string) (n int64) {
			t.Helper()
			q := s.w.Model(&eventRow{}).Where("body LIKE ?", "%"+what+"%")
			mustOK(t, q.Count(&n).Error)
			return n
		}
		jobs, err := s.Webhooks().ClaimDeliveries(ctx, 100, time.Minute)
		mustOK(t, err)
		for _, j := range jobs { // attempts recorded, so they must go too
			mustOK(t, s.Webhooks().FinishAttempt(ctx, j, domain.Attempt{At: time.Now(), StatusCode: 500, Error: "HTTP 500", RetryAt: time.Now().Add(time.Hour)}))
		}
		ann := exchange("ann")
		exchange("bob")
		jobs, err = s.Webhooks().ClaimDeliveries(ctx, 100, time.Minute)
		mustOK(t, err)
		for _, j := range jobs {
			mustOK(t, s.Webhooks().FinishAttempt(ctx, j, domain.Attempt{At: time.Now(), StatusCode: 500, Error: "HTTP 500", RetryAt: time.Now().Add(time.Hour)}))
		}
		_, err = s.Conversations().DeleteConversation(ctx, acct.ID, agent.ID, ann)
		mustOK(t, err)
		if n := count("secret of ann"); n != 0 {
			t.Errorf("%d events still quote the deleted conversation", n)
		}
		if n := count("secret of bob"); n != 1 {
			t.Errorf("%d events quote the other conversation, want 1", n)
		}
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, agent.ID, domain.AnyVersion)
		mustOK(t, err)
		var deliveries, attempts, events int64
		mustOK(t, s.w.Model(&eventRow{}).Where("type = ?", string(domain.EventMessageCompleted)).Count(&events).Error)
		mustOK(t, s.w.Model(&deliveryRow{}).Where("type = ?", string(domain.EventMessageCompleted)).Count(&deliveries).Error)
		mustOK(t, s.w.Model(&attemptRow{}).Count(&attempts).Error)
		if events != 0 || deliveries != 0 || attempts != 1 {
			t.Errorf("after deleting the agent: %d message events, %d of their deliveries, %d attempts (want 0, 0, and the agent.created one)",
				events, deliveries, attempts)
		}
		if n := count(`"agent.deleted"`); n != 1 {
			t.Errorf("%d agent.deleted events, want 1", n)
		}
	})
}

// TestToolCallsInReplyAndEvent: a reply's tool calls are stored with it,
// counted in the hour's rollup (failed ones apart), and carried by its
// message.completed event.
func TestToolCallsInReplyAndEvent(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		_, err := s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		mustOK(t, err)
		agent := mustAgent(t, s, acct.ID, "actor")
		calls := []domain.ToolCall{
			{ID: "call_1", Name: "get_price", Arguments: json.RawMessage(`{"symbol":"SOL"}`), OK: true, Result: `{"price":142}`, DurationMs: 3.5},
			{ID: "call_2", Name: "nope", Arguments: json.RawMessage(`{}`), Result: `{"error":"unknown tool"}`},
		}
		conv := domain.ConversationRef{UserID: "u1", Platform: domain.PlatformAPI}
		_, _, err = s.Conversations().SaveExchange(ctx, acct.ID, agent.ID, conv, domain.Message{Role: domain.RoleUser, UserID: "u1", Text: "price?", CreatedAt: time.Now()},
			domain.Message{Role: domain.RoleAssistant, UserID: "u1", Text: "142", ToolCalls: calls})
		mustOK(t, err)
		history, err := s.Conversations().History(ctx, acct.ID, agent.ID, conv, 2)
		mustOK(t, err)
		if len(history) != 2 || !reflect.DeepEqual(history[1].ToolCalls, calls) || history[0].ToolCalls != nil {
			t.Errorf("stored tool calls = %+v / %+v", history[1].ToolCalls, history[0].ToolCalls)
		}
		rep, err := s.Analytics().AgentAnalytics(ctx, acct.ID, agent.ID, domain.AnalyticsQuery{From: time.Now().Add(-time.Hour), To: time.Now(), Interval: domain.IntervalHour})
		mustOK(t, err)
		if rep.Totals.ToolCalls != 2 || rep.Totals.ToolErrors != 1 || rep.Series[len(rep.Series)-1].ToolCalls != 2 {
			t.Errorf("analytics totals %+v", rep.Totals)
		}
		var ev eventRow
		mustOK(t, s.w.Where("type = ?", string(domain.EventMessageCompleted)).Take(&ev).Error)
		var body struct {
			Data struct {
				Reply struct {
					Metadata struct {
						ToolCalls []domain.ToolCall `json:"toolCalls"`
					} `json:"metadata"`
				} `json:"reply"`
			} `json:"data"`
		}
		mustOK(t, json.Unmarshal([]byte(ev.Body), &body))
		if !reflect.DeepEqual(body.Data.Reply.Metadata.ToolCalls, calls) {
			t.Errorf("event tool calls = %+v", body.Data.Reply.Metadata.ToolCalls)
		}
	})
}

// TestCreateAgentEventsFollowWebhookCount: the account's webhook count
// follows creates and deletes, and Create Agent queues agent.created for a
// webhook created before it, and nothing once the account has none.
func TestCreateAgentEventsFollowWebhookCount(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		count := func() (hooks, events int64) {
			t.Helper()
			var a accountRow
			mustOK(t, s.w.Select("webhook_count").Take(&a, "id = ?", acct.ID).Error)
			mustOK(t, s.w.Model(&eventRow{}).Where("account_id = ? AND type = ?", acct.ID, domain.EventAgentCreated).Count(&events).Error)
			return a.WebhookCount, events
		}
		mustAgent(t, s, acct.ID, "quiet")
		if hooks, events := count(); hooks != 0 || events != 0 {
			t.Fatalf("no webhook: count %d, %d agent.created events", hooks, events)
		}
		w, err := s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		mustOK(t, err)
		mustAgent(t, s, acct.ID, "heard")
		if hooks, events := count(); hooks != 1 || events != 1 {
			t.Fatalf("one webhook: count %d, %d agent.created events", hooks, events)
		}
		mustOK(t, s.Webhooks().DeleteWebhook(ctx, acct.ID, w.ID, domain.AnyVersion))
		mustAgent(t, s, acct.ID, "quiet again")
		if hooks, events := count(); hooks != 0 || events != 1 {
			t.Fatalf("webhook deleted: count %d, %d agent.created events", hooks, events)
		}
	})
}

// TestExchangeEventsFollowWebhookCount: an exchange queues
// message.completed while the account has a webhook, and stores no event
// without one.
func TestExchangeEventsFollowWebhookCount(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "talker")
		exchange := func() (events int64) {
			t.Helper()
			_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref("user:ann"), domain.Message{Text: "hi", UserID: "ann"}, domain.Message{Text: "hello"})
			mustOK(t, err)
			mustOK(t, s.w.Model(&eventRow{}).Where("account_id = ? AND type = ?", acct.ID, domain.EventMessageCompleted).Count(&events).Error)
			return events
		}
		if n := exchange(); n != 0 {
			t.Fatalf("no webhook: %d message.completed events", n)
		}
		w, err := s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		mustOK(t, err)
		if n := exchange(); n != 1 {
			t.Fatalf("one webhook: %d message.completed events", n)
		}
		mustOK(t, s.Webhooks().DeleteWebhook(ctx, acct.ID, w.ID, domain.AnyVersion))
		if n := exchange(); n != 1 {
			t.Fatalf("webhook deleted: %d message.completed events", n)
		}
	})
}
