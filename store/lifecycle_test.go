package store

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

func TestErrorPeriodsAndUptime(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "flaky")

		clock.add(10 * time.Second)
		retry := clock.now().Add(30 * time.Second)
		mustOK(t, s.MarkAgentError(ctx, a.ID, "rate limited", retry))
		clock.add(2 * time.Second)
		got := mustGet(t, s, acct.ID, a.ID)
		if got.Status != StatusError || got.StatusReason != "rate limited" || !got.RetryAt.Equal(retry) {
			t.Errorf("in error: %+v", got)
		}
		wantUptime(t, got, 100*10.0/12)
		if !got.UpdatedAt.Equal(a.UpdatedAt) {
			t.Errorf("MarkAgentError moved updatedAt")
		}

		clock.add(time.Second) // a second failure keeps the period open
		mustOK(t, s.MarkAgentError(ctx, a.ID, "timeout", retry.Add(time.Minute)))
		clock.add(2 * time.Second)
		mustOK(t, s.MarkAgentRecovered(ctx, a.ID))
		got = mustGet(t, s, acct.ID, a.ID)
		if got.Status != StatusActive || got.StatusReason != "" || !got.RetryAt.IsZero() {
			t.Errorf("recovered: %+v", got)
		}
		wantUptime(t, got, 100*10.0/15)

		clock.add(5 * time.Second)
		mustOK(t, s.MarkAgentRecovered(ctx, a.ID)) // not in error: no-op
		got = mustGet(t, s, acct.ID, a.ID)
		wantUptime(t, got, 100*15.0/20)
		if got.Metrics.Uptime >= 100 {
			t.Error("uptime is 100 after an error period")
		}

		wantErr(t, s.MarkAgentError(ctx, "agent_missing", "x", retry), ErrNotFound)
		wantErr(t, s.MarkAgentRecovered(ctx, "agent_missing"), ErrNotFound)
	})
}

func TestUpdateStatusLeavesError(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		for _, to := range []Status{StatusActive, StatusInactive} {
			a := mustAgent(t, s, acct.ID, "flaky-"+string(to))
			clock.add(4 * time.Second)
			mustOK(t, s.MarkAgentError(ctx, a.ID, "bad key", clock.now().Add(time.Minute)))
			clock.add(4 * time.Second)
			u, changes, err := s.UpdateAgent(ctx, acct.ID, a.ID, nil, &to)
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

func mustGet(t *testing.T, s *Store, accountID, id string) Agent {
	t.Helper()
	a, err := s.GetAgent(context.Background(), accountID, id)
	mustOK(t, err)
	return a
}

func wantUptime(t *testing.T, a Agent, want float64) {
	t.Helper()
	if math.Abs(a.Metrics.Uptime-want) > 1e-9 {
		t.Errorf("uptime = %v, want %v", a.Metrics.Uptime, want)
	}
}
