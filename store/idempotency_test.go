package store

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

func TestIdempotencyKeys(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		at, req, first := claimAtStoppedClock(t, s, "POST /v1/agents abc")
		if first.Token == "" || first.Replay != nil {
			t.Fatalf("first claim = %+v; want a token", first)
		}
		// While it runs, whatever the body: in use.
		_, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		wantErr(t, err, domain.ErrIdempotencyKeyInUse)
		other := req
		other.Fingerprint = "POST /v1/agents def"
		_, err = s.Idempotency().ClaimIdempotencyKey(ctx, other)
		wantErr(t, err, domain.ErrIdempotencyKeyInUse)
		// Another account's same key is its own.
		elsewhere := req
		elsewhere.AccountID = "acct_b"
		claimed, err := s.Idempotency().ClaimIdempotencyKey(ctx, elsewhere)
		mustOK(t, err)
		if claimed.Token == "" {
			t.Fatal("another account's key was not claimed")
		}

		answer := domain.IdempotentAnswer{Status: 201, Header: map[string]string{"Location": "/v1/agents/x"}, Body: []byte(`{"success":true}`)}
		mustOK(t, s.Idempotency().CompleteIdempotencyKey(ctx, req.AccountID, req.Key, first.Token, answer))
		replay, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		if replay.Replay == nil || replay.Replay.Status != 201 || string(replay.Replay.Body) != `{"success":true}` ||
			replay.Replay.Header["Location"] != "/v1/agents/x" {
			t.Fatalf("replay = %+v; want the stored answer", replay.Replay)
		}
		_, err = s.Idempotency().ClaimIdempotencyKey(ctx, other)
		wantErr(t, err, domain.ErrIdempotencyKeyReused)

		// Past the retention the key is free again (and pruned).
		*at = at.Add(IdempotencyRetention + time.Second)
		again, err := s.Idempotency().ClaimIdempotencyKey(ctx, other)
		mustOK(t, err)
		if again.Token == "" || again.Replay != nil {
			t.Fatalf("claim after retention = %+v; want a token", again)
		}
	})
}

// claimAtStoppedClock stops s's clock at a fixed time, which the test
// moves on through at, and claims key k1 of acct_a for the request
// fingerprint with a lease of two minutes.
func claimAtStoppedClock(t *testing.T, s *Store, fingerprint string) (at *time.Time, req domain.IdempotencyRequest, claim domain.IdempotencyClaim) {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.now = func() time.Time { return now }
	req = domain.IdempotencyRequest{AccountID: "acct_a", Key: "k1", Fingerprint: fingerprint, Lease: 2 * time.Minute}
	claim, err := s.Idempotency().ClaimIdempotencyKey(context.Background(), req)
	mustOK(t, err)
	return &now, req, claim
}

func TestIdempotencyKeyTakeover(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		at, req, dead := claimAtStoppedClock(t, s, "f")
		*at = at.Add(time.Minute)
		_, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		wantErr(t, err, domain.ErrIdempotencyKeyInUse)

		// The owner died: past its lease another request takes the key.
		*at = at.Add(2 * time.Minute)
		live, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		if live.Token == "" || live.Token == dead.Token {
			t.Fatalf("takeover = %+v; want a new token", live)
		}
		// The dead owner can neither complete nor release it any more.
		if err := s.Idempotency().CompleteIdempotencyKey(ctx, req.AccountID, req.Key, dead.Token, domain.IdempotentAnswer{Status: 200}); err == nil {
			t.Error("the dead owner completed a key taken over")
		}
		mustOK(t, s.Idempotency().ReleaseIdempotencyKey(ctx, req.AccountID, req.Key, dead.Token))
		_, err = s.Idempotency().ClaimIdempotencyKey(ctx, req)
		wantErr(t, err, domain.ErrIdempotencyKeyInUse)

		// A released key runs afresh.
		mustOK(t, s.Idempotency().ReleaseIdempotencyKey(ctx, req.AccountID, req.Key, live.Token))
		fresh, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		if fresh.Token == "" {
			t.Fatal("a released key was not claimed again")
		}
	})
}

// TestIdempotencyKeyRenewal: a renewed claim outlives its first lease; a
// claim taken over or settled can no longer be renewed.
func TestIdempotencyKeyRenewal(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		at, req, held := claimAtStoppedClock(t, s, "f")
		*at = at.Add(time.Minute)
		mustOK(t, s.Idempotency().RenewIdempotencyKey(ctx, req.AccountID, req.Key, held.Token, 2*time.Minute))
		*at = at.Add(90 * time.Second) // past the first lease, within the renewed one
		_, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		wantErr(t, err, domain.ErrIdempotencyKeyInUse)

		*at = at.Add(time.Minute) // past the renewed lease: taken over
		live, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		wantErr(t, s.Idempotency().RenewIdempotencyKey(ctx, req.AccountID, req.Key, held.Token, 2*time.Minute), domain.ErrLeaseLost)
		mustOK(t, s.Idempotency().CompleteIdempotencyKey(ctx, req.AccountID, req.Key, live.Token, domain.IdempotentAnswer{Status: 200}))
		wantErr(t, s.Idempotency().RenewIdempotencyKey(ctx, req.AccountID, req.Key, live.Token, 2*time.Minute), domain.ErrLeaseLost)
	})
}

// TestIdempotentAnswerSealed: a stored answer may hold a secret shown once
// (a webhook's), so with a secret key it is sealed at rest.
func TestIdempotentAnswerSealed(t *testing.T) {
	s := newSQLite(t)
	s.box = newBox(t)
	ctx := context.Background()
	req := domain.IdempotencyRequest{AccountID: "acct_a", Key: "hook", Fingerprint: "f", Lease: time.Minute}
	c, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
	mustOK(t, err)
	body := `{"data":{"secret":"whsec_abc"}}`
	mustOK(t, s.Idempotency().CompleteIdempotencyKey(ctx, req.AccountID, req.Key, c.Token, domain.IdempotentAnswer{Status: 201, Body: []byte(body)}))
	var raw []byte
	mustOK(t, s.w.Raw("SELECT body FROM idempotency_keys").Row().Scan(&raw))
	if bytes.Contains(raw, []byte("whsec_")) {
		t.Fatalf("the stored answer holds the secret in clear: %s", raw)
	}
	replay, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
	mustOK(t, err)
	if replay.Replay == nil || string(replay.Replay.Body) != body {
		t.Fatalf("replay = %+v; want %s", replay.Replay, body)
	}
}

// TestIdempotentAnswerAfterKeyRotation: the documented rotation (k1 →
// k2,k1 → rotate → k2) re-seals stored answers, so a replay after the old
// key is dropped answers as before instead of failing (security review N6).
func TestIdempotentAnswerAfterKeyRotation(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		k1, k2 := newKey(), newKey()
		s.box = boxOf(t, k1)
		req := domain.IdempotencyRequest{AccountID: "acct_a", Key: "rot-webhook-1", Fingerprint: "f", Lease: time.Minute}
		c, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		body := `{"data":{"secret":"whsec_abc"}}`
		mustOK(t, s.Idempotency().CompleteIdempotencyKey(ctx, req.AccountID, req.Key, c.Token, domain.IdempotentAnswer{Status: 201, Body: []byte(body)}))

		s.box = boxOf(t, k2, k1)
		_, err = s.Agents().RotateSecrets(ctx, nil)
		mustOK(t, err)
		s.box = boxOf(t, k2)
		replay, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		if replay.Replay == nil || replay.Replay.Status != 201 || string(replay.Replay.Body) != body {
			t.Fatalf("replay after rotation = %+v; want the stored answer", replay)
		}
	})
}

// TestIdempotentAnswerUnreadable: a stored answer that opens under no
// configured key (a key dropped without a rotation) is taken for expired:
// the key is taken over and the request runs afresh, rather than failing
// every retry until the answer expires.
func TestIdempotentAnswerUnreadable(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.box = newBox(t)
		req := domain.IdempotencyRequest{AccountID: "acct_a", Key: "lost", Fingerprint: "f", Lease: time.Minute}
		c, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		mustOK(t, s.Idempotency().CompleteIdempotencyKey(ctx, req.AccountID, req.Key, c.Token, domain.IdempotentAnswer{Status: 201, Body: []byte("{}")}))

		s.box = newBox(t)
		again, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		if again.Token == "" || again.Token == c.Token || again.Replay != nil {
			t.Fatalf("claim of an unreadable answer = %+v; want the key taken over", again)
		}
		mustOK(t, s.Idempotency().CompleteIdempotencyKey(ctx, req.AccountID, req.Key, again.Token, domain.IdempotentAnswer{Status: 200, Body: []byte("{}")}))
		replay, err := s.Idempotency().ClaimIdempotencyKey(ctx, req)
		mustOK(t, err)
		if replay.Replay == nil || replay.Replay.Status != 200 {
			t.Fatalf("replay of the fresh answer = %+v", replay)
		}
	})
}
