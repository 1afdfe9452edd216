package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestRevocationElsewhereRefusedWithinBound revokes a key through a second
// Store on the same database, as the agentd CLI does from its own process:
// the serving Store may answer from its cache until AuthCacheTTL has passed
// since it read the key, and must refuse the key from then on.
func TestRevocationElsewhereRefusedWithinBound(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentd.db")
	serving, cli := openSQLiteAt(t, path), openSQLiteAt(t, path)
	clock := withClock(serving)
	mustAccount(t, serving, "acme")
	plain, key, err := serving.Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, nil)
	mustOK(t, err)
	_, err = serving.Accounts().Authenticate(ctx, plain)
	mustOK(t, err)

	_, err = cli.Accounts().RevokeKey(ctx, key.Prefix)
	mustOK(t, err)
	clock.add(AuthCacheTTL - time.Millisecond)
	if _, err := serving.Accounts().Authenticate(ctx, plain); err != nil {
		t.Logf("refused before the bound (allowed): %v", err)
	}
	clock.add(time.Millisecond)
	_, err = serving.Accounts().Authenticate(ctx, plain)
	wantErr(t, err, domain.ErrUnauthorized)
}

// TestRevocationHereRefusedAtOnce revokes through the Store that cached the key.
func TestRevocationHereRefusedAtOnce(t *testing.T) {
	ctx := context.Background()
	s := newSQLite(t)
	withClock(s)
	mustAccount(t, s, "acme")
	plain, key, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, nil)
	mustOK(t, err)
	_, err = s.Accounts().Authenticate(ctx, plain)
	mustOK(t, err)
	_, err = s.Accounts().RevokeKey(ctx, key.Prefix)
	mustOK(t, err)
	_, err = s.Accounts().Authenticate(ctx, plain)
	wantErr(t, err, domain.ErrUnauthorized)
}

// TestAccountChangeHereAppliesAtOnce changes an account's quota through the
// Store that cached its key: the next authentication carries the new quota.
func TestAccountChangeHereAppliesAtOnce(t *testing.T) {
	ctx := context.Background()
	s := newSQLite(t)
	withClock(s)
	mustAccount(t, s, "acme")
	plain, _, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, nil)
	mustOK(t, err)
	_, err = s.Accounts().Authenticate(ctx, plain)
	mustOK(t, err)
	quota := 7
	_, err = s.Accounts().UpdateAccount(ctx, "acme", domain.AccountChanges{AgentQuota: &quota})
	mustOK(t, err)
	p, err := s.Accounts().Authenticate(ctx, plain)
	mustOK(t, err)
	if p.Account.AgentQuota != quota {
		t.Errorf("quota after update = %d, want %d", p.Account.AgentQuota, quota)
	}
}

// TestCachedKeyStillExpires checks expiry on every call, cached or not.
func TestCachedKeyStillExpires(t *testing.T) {
	ctx := context.Background()
	s := newSQLite(t)
	clock := withClock(s)
	mustAccount(t, s, "acme")
	exp := clock.now().Add(time.Second)
	plain, _, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeRead, &exp)
	mustOK(t, err)
	_, err = s.Accounts().Authenticate(ctx, plain)
	mustOK(t, err)
	clock.add(time.Second)
	_, err = s.Accounts().Authenticate(ctx, plain)
	wantErr(t, err, domain.ErrUnauthorized)
}

func TestAuthCacheStaysBounded(t *testing.T) {
	c := newAuthCache()
	for i := range authCacheMax + 10 {
		c.put(string(rune(i)), keyRow{}, accountRow{}, t0, c.epoch())
	}
	if n := len(c.entries); n > authCacheMax {
		t.Errorf("cache holds %d entries, bound %d", n, authCacheMax)
	}
}

func TestAuthCacheRefusesReadsOlderThanADrop(t *testing.T) {
	c := newAuthCache()
	epoch := c.epoch()
	c.dropKey("other")
	c.put("h", keyRow{}, accountRow{}, t0, epoch)
	if _, ok := c.get("h", t0); ok {
		t.Error("an entry read before an invalidation was cached")
	}
}
