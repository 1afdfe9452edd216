package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// An agent's version moves with every change Get shows and only then; a
// write naming another version changes nothing.
func TestAgentVersionMovesWithEachChangeOnly(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "Ada")
		version := func() int64 {
			t.Helper()
			got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
			mustOK(t, err)
			return got.Version
		}
		v := version()
		bio := map[string]json.RawMessage{"bio": json.RawMessage(`["Curious"]`)}
		_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, bio, nil, v+1)
		wantErr(t, err, domain.ErrPreconditionFailed)
		if version() != v {
			t.Fatal("a refused update moved the version")
		}
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, bio, nil, v)
		mustOK(t, err)
		if version() != v+1 {
			t.Fatalf("version %d after a change; want %d", version(), v+1)
		}
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, bio, nil, domain.AnyVersion)
		mustOK(t, err)
		if version() != v+1 {
			t.Fatal("an update that changed nothing moved the version")
		}
		for range 2 { // the same error twice: one visible change
			_, err = s.Agents().MarkAgentError(ctx, acct.ID, a.ID, "provider down", time.Now().Add(time.Minute))
			mustOK(t, err)
		}
		if version() != v+2 {
			t.Fatalf("version %d after entering error; want %d", version(), v+2)
		}
		mustOK(t, s.Agents().MarkAgentRecovered(ctx, acct.ID, a.ID))
		if version() != v+3 {
			t.Fatalf("version %d after recovering; want %d", version(), v+3)
		}
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, v)
		wantErr(t, err, domain.ErrPreconditionFailed)
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, v+3)
		mustOK(t, err)
	})
}

// A webhook's version moves with each change, the service disabling it
// included; a write naming another version changes nothing.
func TestWebhookVersionMovesWithEachChangeOnly(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		w, err := s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		mustOK(t, err)
		desc := "billing"
		_, _, err = s.Webhooks().UpdateWebhook(ctx, acct.ID, w.ID, domain.WebhookChanges{Description: &desc}, w.Version+1)
		wantErr(t, err, domain.ErrPreconditionFailed)
		got, _, err := s.Webhooks().UpdateWebhook(ctx, acct.ID, w.ID, domain.WebhookChanges{Description: &desc}, w.Version)
		mustOK(t, err)
		if got.Version != w.Version+1 {
			t.Fatalf("version %d after a change; want %d", got.Version, w.Version+1)
		}
		again, _, err := s.Webhooks().UpdateWebhook(ctx, acct.ID, w.ID, domain.WebhookChanges{Description: &desc}, domain.AnyVersion)
		mustOK(t, err)
		if again.Version != got.Version {
			t.Fatal("an update that changed nothing moved the version")
		}
		wantErr(t, s.Webhooks().DeleteWebhook(ctx, acct.ID, w.ID, w.Version), domain.ErrPreconditionFailed)
		if _, err := s.Webhooks().GetWebhook(ctx, acct.ID, w.ID); err != nil {
			t.Fatalf("a refused delete deleted: %v", err)
		}
		mustOK(t, s.Webhooks().DeleteWebhook(ctx, acct.ID, w.ID, got.Version))
	})
}
