package main

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store"
)

// keyPattern is an API key as the README documents it.
var keyPattern = regexp.MustCompile(`^agk_[0-9A-Za-z]{32,}$`)

// newAccountDB returns a database holding the account acme.
func newAccountDB(t testing.TB) string {
	t.Helper()
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "acme")
	return db
}

// authenticate checks key against the database.
func authenticate(t testing.TB, db, key string) (domain.Principal, error) {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return st.Accounts().Authenticate(context.Background(), key)
}

func TestKeysCreatePrintsOnlyTheKey(t *testing.T) {
	t.Parallel()
	db := newAccountDB(t)
	r := mustAgentd(t, db, "keys", "create", "--account", "acme")
	key := strings.TrimSuffix(r.stdout, "\n")
	if !keyPattern.MatchString(key) || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout %q is not one key line", r.stdout)
	}
	if !strings.Contains(r.stderr, "shown only once") || strings.Contains(r.stderr, key) {
		t.Errorf("stderr %q: want the note, never the key", r.stderr)
	}
	p, err := authenticate(t, db, key)
	if err != nil {
		t.Fatalf("the printed key does not authenticate: %v", err)
	}
	if p.Account.Name != "acme" || p.Key.Scope != domain.ScopeWrite || p.Key.ExpiresAt != nil {
		t.Errorf("principal %+v: want acme, write, no expiry", p)
	}
}

func TestKeysCreateScopeAndExpiry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		scope  domain.Scope
		expiry time.Duration // 0 = never
	}{
		{args: []string{"--scope", "read"}, scope: domain.ScopeRead},
		{args: []string{"--scope", "write", "--expires", "90d"}, scope: domain.ScopeWrite, expiry: 90 * 24 * time.Hour},
		{args: []string{"--expires", "12h"}, scope: domain.ScopeWrite, expiry: 12 * time.Hour},
		{args: []string{"--expires=1h30m", "--scope=read"}, scope: domain.ScopeRead, expiry: 90 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			db := newAccountDB(t)
			start := time.Now()
			r := mustAgentd(t, db, append([]string{"keys", "create", "--account", "acme"}, tt.args...)...)
			p, err := authenticate(t, db, strings.TrimSpace(r.stdout))
			if err != nil {
				t.Fatal(err)
			}
			if p.Key.Scope != tt.scope {
				t.Errorf("scope %s, want %s", p.Key.Scope, tt.scope)
			}
			switch {
			case tt.expiry == 0 && p.Key.ExpiresAt != nil:
				t.Errorf("expires at %s, want never", p.Key.ExpiresAt)
			case tt.expiry != 0 && p.Key.ExpiresAt == nil:
				t.Errorf("never expires, want in %s", tt.expiry)
			case tt.expiry != 0:
				if d := p.Key.ExpiresAt.Sub(start); d < tt.expiry-time.Second || d > tt.expiry+5*time.Second {
					t.Errorf("expires in %s, want %s", d, tt.expiry)
				}
			}
		})
	}
}

func TestKeysCreateErrors(t *testing.T) {
	t.Parallel()
	db := newAccountDB(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{args: nil, code: exitUsage, want: "needs --account"},
		{args: []string{"--account", "nope"}, code: exitError, want: `account "nope" not found`},
		{args: []string{"--account", "acme", "--scope", "admin"}, code: exitUsage, want: "must be one of read, write"},
		{args: []string{"--account", "acme", "--expires", "0d"}, code: exitUsage, want: "must be positive"},
		{args: []string{"--account", "acme", "--expires", "-1h"}, code: exitUsage, want: "must be positive"},
		{args: []string{"--account", "acme", "--expires", "soon"}, code: exitUsage, want: "not a lifetime"},
		{args: []string{"--account", "acme", "--expires", "3w"}, code: exitUsage, want: "not a lifetime"},
		{args: []string{"--account", "acme", "extra"}, code: exitUsage, want: "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := agentd(t, nil, append(append([]string{"keys", "create"}, tt.args...), "--db", db)...)
			if r.code() != tt.code || r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
				t.Fatalf("exit %d, err %v; want %d and %q", r.code(), r.err, tt.code, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q on failure", r.stdout)
			}
		})
	}
}

func TestParseLifetime(t *testing.T) {
	t.Parallel()
	good := map[string]time.Duration{
		"90d": 90 * 24 * time.Hour, "1d": 24 * time.Hour, "12h": 12 * time.Hour,
		"1h30m": 90 * time.Minute, "45m": 45 * time.Minute, "30s": 30 * time.Second,
	}
	for in, want := range good {
		if got, err := parseLifetime(in); err != nil || got != want {
			t.Errorf("parseLifetime(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "0d", "0", "-3d", "1.5d", "d3", "90 d", "3w", "forever", "999999d"} {
		if got, err := parseLifetime(in); err == nil {
			t.Errorf("parseLifetime(%q) = %s, want an error", in, got)
		}
	}
}

func TestKeysList(t *testing.T) {
	t.Parallel()
	db := newAccountDB(t)
	first := strings.TrimSpace(mustAgentd(t, db, "keys", "create", "--account", "acme", "--scope", "read", "--expires", "90d").stdout)
	second := strings.TrimSpace(mustAgentd(t, db, "keys", "create", "--account", "acme").stdout)
	mustAgentd(t, db, "keys", "revoke", second[:store.KeyPrefixLen])
	r := mustAgentd(t, db, "keys", "list", "--account", "acme")
	if strings.Contains(r.stdout, first) || strings.Contains(r.stdout, second) {
		t.Fatalf("keys list shows a whole key: %s", r.stdout)
	}
	rows := tableRows(r.stdout)
	if len(rows) != 2 {
		t.Fatalf("rows %v, want 2", rows)
	}
	want := [][]string{
		{first[:store.KeyPrefixLen], "read", "active"},
		{second[:store.KeyPrefixLen], "write", "revoked"},
	}
	for i, row := range rows {
		if strings.Join(row[:3], " ") != strings.Join(want[i], " ") {
			t.Errorf("row %d = %v, want %v", i, row, want[i])
		}
	}
	if rows[0][5] != "never" || rows[1][4] != "never" {
		t.Errorf("LAST-USED of an unused key or EXPIRES of a key without expiry is not 'never': %v", rows)
	}
}

func TestKeysListErrors(t *testing.T) {
	t.Parallel()
	db := newAccountDB(t)
	if r := agentd(t, nil, "keys", "list", "--db", db); r.code() != exitUsage {
		t.Errorf("without --account: exit %d, want 2", r.code())
	}
	r := agentd(t, nil, "keys", "list", "--account", "ghost", "--db", db)
	if r.code() != exitError || !strings.Contains(r.err.Error(), `account "ghost" not found`) {
		t.Errorf("unknown account: exit %d, err %v", r.code(), r.err)
	}
}

func TestKeyState(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	tests := []struct {
		key  domain.APIKey
		want string
	}{
		{domain.APIKey{}, "active"},
		{domain.APIKey{ExpiresAt: &future}, "active"},
		{domain.APIKey{ExpiresAt: &past}, "expired"},
		{domain.APIKey{ExpiresAt: &now}, "expired"},
		{domain.APIKey{RevokedAt: &past, ExpiresAt: &past}, "revoked"},
	}
	for _, tt := range tests {
		if got := keyState(tt.key, now); got != tt.want {
			t.Errorf("keyState(%+v) = %s, want %s", tt.key, got, tt.want)
		}
	}
}

func TestKeysRevoke(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"prefix", "whole key"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			db := newAccountDB(t)
			key := strings.TrimSpace(mustAgentd(t, db, "keys", "create", "--account", "acme").stdout)
			arg := key[:store.KeyPrefixLen]
			if how == "whole key" {
				arg = key
			}
			r := mustAgentd(t, db, "keys", "revoke", arg)
			if !strings.Contains(r.stdout, "revoked write key "+key[:store.KeyPrefixLen]) {
				t.Errorf("stdout %q", r.stdout)
			}
			if _, err := authenticate(t, db, key); !errors.Is(err, domain.ErrUnauthorized) {
				t.Errorf("revoked key authenticates: %v", err)
			}
			// Revoking again is harmless.
			mustAgentd(t, db, "keys", "revoke", arg)
		})
	}
}

func TestKeysRevokeErrors(t *testing.T) {
	t.Parallel()
	db := newAccountDB(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{args: nil, code: exitUsage, want: "needs KEY_PREFIX"},
		{args: []string{"agk_short"}, code: exitUsage, want: "not a key prefix"},
		{args: []string{"sk-12345678"}, code: exitUsage, want: "not a key prefix"},
		{args: []string{"agk_AAAAAAAA"}, code: exitError, want: "no key has the prefix agk_AAAAAAAA"},
		{args: []string{"agk_AAAAAAAA", "agk_BBBBBBBB"}, code: exitUsage, want: "takes only KEY_PREFIX"},
	}
	for _, tt := range tests {
		r := agentd(t, nil, append(append([]string{"keys", "revoke"}, tt.args...), "--db", db)...)
		if r.code() != tt.code || r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
			t.Errorf("keys revoke %v: exit %d, err %v; want %d and %q", tt.args, r.code(), r.err, tt.code, tt.want)
		}
	}
}
