package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

func TestAccounts(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		withClock(s)
		a, err := s.Accounts().CreateAccount(ctx, domain.Account{Name: " zeta "})
		mustOK(t, err)
		if !strings.HasPrefix(a.ID, "acct_") || a.ID != strings.ToLower(a.ID) {
			t.Errorf("id = %q", a.ID)
		}
		if a.Name != "zeta" || a.Tier != domain.TierStandard || a.AgentQuota != 100 || !a.CreatedAt.Equal(t0) {
			t.Errorf("defaults not applied: %+v", a)
		}
		got, err := s.Accounts().AccountByName(ctx, "zeta")
		mustOK(t, err)
		if got != a {
			t.Errorf("read %+v, wrote %+v", got, a)
		}

		_, err = s.Accounts().CreateAccount(ctx, domain.Account{Name: "zeta", Tier: domain.TierPro})
		wantErr(t, err, domain.ErrConflict)
		_, err = s.Accounts().CreateAccount(ctx, domain.Account{Name: ""})
		wantErr(t, err, domain.ErrInvalid)
		_, err = s.Accounts().CreateAccount(ctx, domain.Account{Name: "x", Tier: "gold"})
		wantErr(t, err, domain.ErrInvalid)
		_, err = s.Accounts().AccountByName(ctx, "nobody")
		wantErr(t, err, domain.ErrNotFound)

		b, err := s.Accounts().CreateAccount(ctx, domain.Account{Name: "alpha", Tier: domain.TierEnterprise, RPM: 1000, EndpointMultiplier: 3, AgentQuota: 7})
		mustOK(t, err)
		if b.RPM != 1000 || b.EndpointMultiplier != 3 || b.AgentQuota != 7 {
			t.Errorf("explicit values lost: %+v", b)
		}
		list, err := s.Accounts().ListAccounts(ctx)
		mustOK(t, err)
		if len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "zeta" {
			t.Errorf("list = %+v", list)
		}
		n, err := s.Accounts().CountAccounts(ctx)
		mustOK(t, err)
		if n != 2 {
			t.Errorf("count = %d", n)
		}
	})
}

func TestUpdateAccount(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a := mustAccount(t, s, "acme")
		tier, rpm, quota := domain.TierEnterprise, 900, 3
		u, err := s.Accounts().UpdateAccount(ctx, "acme", domain.AccountChanges{Tier: &tier, RPM: &rpm, AgentQuota: &quota})
		mustOK(t, err)
		want := a
		want.Tier, want.RPM, want.AgentQuota = tier, rpm, quota
		if u != want {
			t.Errorf("updated = %+v, want %+v", u, want)
		}
		got, err := s.Accounts().AccountByName(ctx, "acme")
		mustOK(t, err)
		if got != want {
			t.Errorf("stored = %+v, want %+v", got, want)
		}
		mult := 4
		u, err = s.Accounts().UpdateAccount(ctx, "acme", domain.AccountChanges{EndpointMultiplier: &mult})
		mustOK(t, err)
		if u.EndpointMultiplier != 4 || u.RPM != 900 || u.Tier != domain.TierEnterprise {
			t.Errorf("nil changes did not keep values: %+v", u)
		}
		_, err = s.Accounts().UpdateAccount(ctx, "nobody", domain.AccountChanges{RPM: &rpm})
		wantErr(t, err, domain.ErrNotFound)
		bad := domain.Tier("gold")
		_, err = s.Accounts().UpdateAccount(ctx, "acme", domain.AccountChanges{Tier: &bad})
		wantErr(t, err, domain.ErrInvalid)
	})
}

func TestAccountTimesAreUTCMillis(t *testing.T) {
	s := newSQLite(t)
	a := mustAccount(t, s, "acme")
	if a.CreatedAt.Location() != time.UTC || a.CreatedAt.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("created at %v is not UTC milliseconds", a.CreatedAt)
	}
	got, err := s.Accounts().AccountByName(context.Background(), "acme")
	mustOK(t, err)
	if !got.CreatedAt.Equal(a.CreatedAt) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("read %v, wrote %v", got.CreatedAt, a.CreatedAt)
	}
}
