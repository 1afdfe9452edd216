package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// claimSecrets queues a test delivery to w and returns the secrets its
// claimed job would sign with.
func claimSecrets(t *testing.T, s *Store, w Webhook) []string {
	t.Helper()
	ctx := context.Background()
	mustOK(t, s.TestWebhook(ctx, w.AccountID, w.ID))
	jobs, err := s.ClaimDeliveries(ctx, 10, time.Minute)
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
		w, err := s.CreateWebhook(ctx, Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
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
		res, err := s.RotateSecrets(ctx, old)
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
		w, err := s.CreateWebhook(ctx, Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		mustOK(t, err)
		for range DisableAfter {
			mustOK(t, s.TestWebhook(ctx, acct.ID, w.ID))
		}
		jobs, err := s.ClaimDeliveries(ctx, DisableAfter, time.Minute)
		mustOK(t, err)
		if len(jobs) != DisableAfter {
			t.Fatalf("claimed %d jobs, want %d", len(jobs), DisableAfter)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, job := range jobs {
			wg.Go(func() {
				<-start
				if err := s.FinishAttempt(ctx, job, Attempt{At: time.Now(), StatusCode: 500, Error: "HTTP 500"}); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		got, err := s.GetWebhook(ctx, acct.ID, w.ID)
		mustOK(t, err)
		if got.Enabled {
			t.Fatalf("webhook enabled after %d failures in a row", DisableAfter)
		}
	})
}
