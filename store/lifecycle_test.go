package store

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

func TestErrorPeriodsAndUptime(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "flaky")

		clock.add(10 * time.Second)
		retry := clock.now().Add(30 * time.Second)
		mustEnterError(t)(s.Agents().MarkAgentError(ctx, acct.ID, a.ID, "rate limited", retry))
		clock.add(2 * time.Second)
		got := mustGet(t, s, acct.ID, a.ID)
		if got.Status != domain.StatusError || got.StatusReason != "rate limited" || !got.RetryAt.Equal(retry) {
			t.Errorf("in error: %+v", got)
		}
		wantUptime(t, got, 100*10.0/12)
		if !got.UpdatedAt.Equal(a.UpdatedAt) {
			t.Errorf("MarkAgentError moved updatedAt")
		}

		clock.add(time.Second) // a second failure keeps the period open
		mustEnterError(t)(s.Agents().MarkAgentError(ctx, acct.ID, a.ID, "timeout", retry.Add(time.Minute)))
		clock.add(2 * time.Second)
		mustOK(t, s.Agents().MarkAgentRecovered(ctx, acct.ID, a.ID))
		got = mustGet(t, s, acct.ID, a.ID)
		if got.Status != domain.StatusActive || got.StatusReason != "" || !got.RetryAt.IsZero() {
			t.Errorf("recovered: %+v", got)
		}
		wantUptime(t, got, 100*10.0/15)

		clock.add(5 * time.Second)
		mustOK(t, s.Agents().MarkAgentRecovered(ctx, acct.ID, a.ID)) // not in error: no-op
		got = mustGet(t, s, acct.ID, a.ID)
		wantUptime(t, got, 100*15.0/20)
		if got.Metrics.Uptime >= 100 {
			t.Error("uptime is 100 after an error period")
		}

		_, err := s.Agents().MarkAgentError(ctx, acct.ID, "agent_missing", "x", retry)
		wantErr(t, err, domain.ErrNotFound)
		wantErr(t, s.Agents().MarkAgentRecovered(ctx, acct.ID, "agent_missing"), domain.ErrNotFound)
	})
}

// A provider failure that ends after the agent was made inactive must not
// turn it into error; and no account can touch another's agent.
func TestMarkAgentErrorOnlyFromActiveOrError(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		other := mustAccount(t, s, "other")
		a := mustAgent(t, s, acct.ID, "resting")
		inactive := domain.StatusInactive
		_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, nil, &inactive, domain.AnyVersion)
		mustOK(t, err)

		got, err := s.Agents().MarkAgentError(ctx, acct.ID, a.ID, "timeout", time.Now().Add(time.Minute))
		mustOK(t, err)
		if got != domain.StatusInactive {
			t.Errorf("MarkAgentError on an inactive agent reports %q, want inactive", got)
		}
		if stored := mustGet(t, s, acct.ID, a.ID); stored.Status != domain.StatusInactive || stored.StatusReason != "" || stored.Metrics.Uptime != 100 {
			t.Errorf("inactive agent changed by a provider failure: %+v", stored)
		}

		b := mustAgent(t, s, acct.ID, "busy")
		_, err = s.Agents().MarkAgentError(ctx, other.ID, b.ID, "timeout", time.Now().Add(time.Minute))
		wantErr(t, err, domain.ErrNotFound)
		mustEnterError(t)(s.Agents().MarkAgentError(ctx, acct.ID, b.ID, "timeout", time.Now().Add(time.Minute)))
		wantErr(t, s.Agents().MarkAgentRecovered(ctx, other.ID, b.ID), domain.ErrNotFound)
		if stored := mustGet(t, s, acct.ID, b.ID); stored.Status != domain.StatusError {
			t.Errorf("another account recovered the agent: %+v", stored)
		}
	})
}

// mustEnterError returns a check that MarkAgentError succeeded and left the
// agent in error; it takes MarkAgentError's results directly.
func mustEnterError(t *testing.T) func(domain.Status, error) {
	return func(st domain.Status, err error) {
		t.Helper()
		mustOK(t, err)
		if st != domain.StatusError {
			t.Fatalf("status after MarkAgentError = %q, want error", st)
		}
	}
}

func TestUpdateStatusLeavesError(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		for _, to := range []domain.Status{domain.StatusActive, domain.StatusInactive} {
			a := mustAgent(t, s, acct.ID, "flaky-"+string(to))
			clock.add(4 * time.Second)
			mustEnterError(t)(s.Agents().MarkAgentError(ctx, acct.ID, a.ID, "bad key", clock.now().Add(time.Minute)))
			clock.add(4 * time.Second)
			u, changes, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, nil, &to, domain.AnyVersion)
			mustOK(t, err)
			if fmt.Sprint(changes) != "[status]" || u.Status != to || u.StatusReason != "" || !u.RetryAt.IsZero() ||
				!u.UpdatedAt.Equal(clock.now()) {
				t.Errorf("leaving error for %s: %+v, changes %v", to, u, changes)
			}
			clock.add(8 * time.Second)
			wantUptime(t, mustGet(t, s, acct.ID, a.ID), 75)
			clock.add(-16 * time.Second)
		}
	})
}

func mustGet(t *testing.T, s *Store, accountID, id string) domain.Agent {
	t.Helper()
	a, err := s.Agents().GetAgent(context.Background(), accountID, id)
	mustOK(t, err)
	return a
}

func wantUptime(t *testing.T, a domain.Agent, want float64) {
	t.Helper()
	if math.Abs(a.Metrics.Uptime-want) > 1e-9 {
		t.Errorf("uptime = %v, want %v", a.Metrics.Uptime, want)
	}
}
