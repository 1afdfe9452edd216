package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

var keyPattern = regexp.MustCompile(`^agk_[0-9A-Za-z]{40}$`)

func TestCreateKeyAndAuthenticate(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		plain, key, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeRead, nil)
		mustOK(t, err)
		if !keyPattern.MatchString(plain) {
			t.Fatalf("key %q has the wrong form", plain)
		}
		if key.Prefix != plain[:12] || key.AccountID != acct.ID || key.Scope != domain.ScopeRead || !strings.HasPrefix(key.ID, "key_") {
			t.Errorf("key = %+v", key)
		}
		var stored keyRow
		mustOK(t, s.r.Take(&stored, "id = ?", key.ID).Error)
		if string(stored.Hash) != hashKey(plain) || strings.Contains(string(stored.Hash), plain[4:]) {
			t.Errorf("stored hash %q is not the SHA-256 of the key", stored.Hash)
		}

		clock.add(time.Second)
		p, err := s.Accounts().Authenticate(ctx, plain)
		mustOK(t, err)
		if p.Account != acct || p.Key.ID != key.ID || p.Key.Scope != domain.ScopeRead {
			t.Errorf("principal = %+v", p)
		}
		s.uses.wg.Wait()
		clock.add(AuthCacheTTL) // the key is read again, with its last use
		p, err = s.Accounts().Authenticate(ctx, plain)
		mustOK(t, err)
		if p.Key.LastUsedAt == nil || !p.Key.LastUsedAt.Equal(t0.Add(time.Second)) {
			t.Errorf("last used = %v", p.Key.LastUsedAt)
		}
		clock.add(30 * time.Second)
		_, err = s.Accounts().Authenticate(ctx, plain)
		mustOK(t, err)
		s.uses.wg.Wait()
		if p, _ = s.Accounts().Authenticate(ctx, plain); !p.Key.LastUsedAt.Equal(t0.Add(time.Second)) {
			t.Errorf("last used rewritten within a minute: %v", p.Key.LastUsedAt)
		}
		clock.add(time.Minute)
		_, err = s.Accounts().Authenticate(ctx, plain)
		mustOK(t, err)
		s.uses.wg.Wait()
		keys, err := s.Accounts().ListKeys(ctx, "acme")
		mustOK(t, err)
		if keys[0].LastUsedAt == nil || !keys[0].LastUsedAt.Equal(clock.now()) {
			t.Errorf("listed last used = %v", keys[0].LastUsedAt)
		}
		_, _, err = s.Accounts().CreateKey(ctx, "nobody", domain.ScopeWrite, nil)
		wantErr(t, err, domain.ErrNotFound)
		_, _, err = s.Accounts().CreateKey(ctx, "acme", "admin", nil)
		wantErr(t, err, domain.ErrInvalid)
	})
}

// Authentication never waits for, nor fails with, the write of a key's last
// use: here another connection holds SQLite's write lock throughout.
func TestAuthenticateDoesNotNeedTheWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	s := openSQLiteAt(t, path)
	ctx := context.Background()
	mustAccount(t, s, "acme")
	plain, _, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeRead, nil)
	mustOK(t, err)

	blocker, err := sql.Open("sqlite3", path+"?_busy_timeout=100")
	mustOK(t, err)
	defer blocker.Close()
	conn, err := blocker.Conn(ctx)
	mustOK(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	mustOK(t, err)
	s.uses.timeout = 300 * time.Millisecond // the write gives up sooner than busy_timeout

	for i := 0; i < 3; i++ {
		if _, err := s.Accounts().Authenticate(ctx, plain); err != nil {
			t.Fatalf("authenticate while the writer is busy: %v", err)
		}
	}
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	mustOK(t, err)
}

func TestAuthenticateRejects(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		mustAccount(t, s, "acme")
		revoked, rk, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, nil)
		mustOK(t, err)
		_, err = s.Accounts().RevokeKey(ctx, rk.Prefix)
		mustOK(t, err)
		exp := t0.Add(time.Hour)
		expiring, _, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, &exp)
		mustOK(t, err)
		_, err = s.Accounts().Authenticate(ctx, expiring)
		mustOK(t, err)
		clock.add(time.Hour)

		for name, k := range map[string]string{
			"empty":       "",
			"no prefix":   strings.Repeat("a", 44),
			"wrong case":  "AGK_" + strings.Repeat("a", 40),
			"too short":   "agk_" + strings.Repeat("a", 31),
			"not base62":  "agk_" + strings.Repeat("a", 39) + "-",
			"space":       "agk_" + strings.Repeat("a", 39) + " ",
			"too long":    "agk_" + strings.Repeat("a", 300),
			"unknown":     "agk_" + strings.Repeat("a", 40),
			"revoked":     revoked,
			"expired":     expiring,
			"prefix only": revoked[:12],
		} {
			_, err := s.Accounts().Authenticate(ctx, k)
			if err == nil {
				t.Errorf("%s: authenticated", name)
				continue
			}
			wantErr(t, err, domain.ErrUnauthorized)
		}
		past := t0
		_, _, err = s.Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, &past)
		wantErr(t, err, domain.ErrInvalid)
	})
}

func TestListAndRevokeKeys(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		mustAccount(t, s, "acme")
		mustAccount(t, s, "other")
		var prefixes []string
		for i := 0; i < 3; i++ {
			_, k, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, nil)
			mustOK(t, err)
			prefixes = append(prefixes, k.Prefix)
			clock.add(time.Millisecond)
		}
		_, _, err := s.Accounts().CreateKey(ctx, "other", domain.ScopeRead, nil)
		mustOK(t, err)
		keys, err := s.Accounts().ListKeys(ctx, "acme")
		mustOK(t, err)
		if len(keys) != 3 {
			t.Fatalf("listed %d keys, want 3", len(keys))
		}
		for i, k := range keys {
			if k.Prefix != prefixes[i] {
				t.Errorf("key %d prefix %s, want %s (oldest first)", i, k.Prefix, prefixes[i])
			}
		}
		_, err = s.Accounts().ListKeys(ctx, "nobody")
		wantErr(t, err, domain.ErrNotFound)

		clock.add(time.Minute)
		r, err := s.Accounts().RevokeKey(ctx, prefixes[1])
		mustOK(t, err)
		if r.RevokedAt == nil || !r.RevokedAt.Equal(clock.now()) {
			t.Errorf("revoked at %v", r.RevokedAt)
		}
		clock.add(time.Minute)
		again, err := s.Accounts().RevokeKey(ctx, prefixes[1])
		mustOK(t, err)
		if !again.RevokedAt.Equal(*r.RevokedAt) {
			t.Errorf("second revoke moved revokedAt to %v", again.RevokedAt)
		}
		keys, err = s.Accounts().ListKeys(ctx, "acme")
		mustOK(t, err)
		if keys[1].RevokedAt == nil || keys[0].RevokedAt != nil {
			t.Errorf("list after revoke: %+v", keys)
		}
		_, err = s.Accounts().RevokeKey(ctx, "agk_nothere")
		wantErr(t, err, domain.ErrNotFound)

		// Two keys sharing a prefix (astronomically unlikely, but possible).
		dup := keyRow{ID: "key_dup", AccountID: ctext(keys[0].AccountID), Prefix: ctext(prefixes[0]),
			Hash: "dup", Scope: "read", CreatedAt: clock.now()}
		mustOK(t, s.w.Create(&dup).Error)
		_, err = s.Accounts().RevokeKey(ctx, prefixes[0])
		wantErr(t, err, domain.ErrConflict)
	})
}

func TestRandomBase62(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		k := randomBase62(40)
		if len(k) != 40 || !wellFormedKey("agk_"+k) || seen[k] {
			t.Fatalf("bad or repeated key %q", k)
		}
		seen[k] = true
	}
}
