package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentd/agentd/domain"
)

func TestQuotaHoldsUnderConcurrency(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		const quota, tries = 5, 20
		var wg sync.WaitGroup
		errs := make([]error, tries)
		for i := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", fmt.Sprint("a", i))}, quota)
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			var qe *domain.Error
			switch {
			case err == nil:
				ok++
			case errors.As(err, &qe):
				if qe.Quota != quota || qe.Used != quota || !errors.Is(err, domain.ErrQuotaExceeded) {
					t.Errorf("quota error = %+v (%v)", qe, err)
				}
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		if ok != quota {
			t.Errorf("%d creates succeeded, want %d", ok, quota)
		}
		_, total, err := s.Agents().ListAgents(ctx, acct.ID, domain.ListQuery{})
		mustOK(t, err)
		if total != quota {
			t.Errorf("account has %d agents, want %d", total, quota)
		}
	})
}

func TestQuotaBounds(t *testing.T) {
	s := newSQLite(t)
	ctx := context.Background()
	acct := mustAccount(t, s, "acme")
	_, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", "a")}, 0)
	var qe *domain.Error
	if !errors.As(err, &qe) || qe.Quota != 0 || qe.Used != 0 {
		t.Fatalf("quota 0: %v", err)
	}
	if qe.Error() != "agent quota exceeded: 0 of 0 used" {
		t.Errorf("message %q", qe.Error())
	}
	for i := range 3 {
		mustAgent(t, s, acct.ID, fmt.Sprint("a", i)) // quota -1: unlimited
	}
	other := mustAccount(t, s, "other")
	if _, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: other.ID, Fields: fields(t, "name", "b")}, 1); err != nil {
		t.Fatalf("quota counted another account's agents: %v", err)
	}
}
