package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/domain"
)

// TestConcurrentMixedLoad runs 50 goroutines mixing writes and reads on one
// SQLite file through two stores (as the server and the agentd CLI would)
// and expects no error at all, in particular no "database is locked".
func TestConcurrentMixedLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "load.db")
	stores := []*Store{openSQLiteAt(t, path), openSQLiteAt(t, path)}
	ctx := context.Background()
	acct := mustAccount(t, stores[0], "acme")
	plain, _, err := stores[0].Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, nil)
	mustOK(t, err)
	seed := mustAgent(t, stores[0], acct.ID, "seed")

	const workers, rounds = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*8)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%2]
			for r := range rounds {
				for _, err := range mixedRound(ctx, s, acct.ID, seed.ID, plain, w, r) {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Errorf("worker error: %v", err)
		}
		if strings.Contains(err.Error(), "locked") {
			t.Fatalf("database is locked under load: %v", err)
		}
	}
	got := mustGet(t, stores[1], acct.ID, seed.ID)
	if got.Metrics.TotalMessages != workers*rounds {
		t.Errorf("seed answered %d messages, want %d", got.Metrics.TotalMessages, workers*rounds)
	}
}

// mixedRound does one round of a worker's mixed load and returns its errors.
func mixedRound(ctx context.Context, s *Store, accountID, seedID, key string, w, r int) []error {
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	f, _ := canonicalFields(map[string]json.RawMessage{"name": json.RawMessage(fmt.Sprintf(`"w%d-r%d"`, w, r))})
	a, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: accountID, Fields: f}, -1)
	check(err)
	if err == nil {
		inactive := domain.StatusInactive
		_, _, err = s.Agents().UpdateAgent(ctx, accountID, a.ID, map[string]json.RawMessage{"bio": json.RawMessage(`["x"]`)}, &inactive, domain.AnyVersion)
		check(err)
		_, err = s.Agents().GetAgent(ctx, accountID, a.ID)
		check(err)
		if r%4 == 0 {
			_, err = s.Agents().DeleteAgent(ctx, accountID, a.ID, domain.AnyVersion)
			check(err)
		}
	}
	_, _, err = s.Conversations().SaveExchange(ctx, accountID, seedID, ref(fmt.Sprintf("user:w%d", w)), domain.Message{Text: "q"}, domain.Message{Text: "r"})
	check(err)
	_, err = s.Conversations().History(ctx, accountID, seedID, ref(fmt.Sprintf("user:w%d", w)), 20)
	check(err)
	_, _, err = s.Agents().ListAgents(ctx, accountID, domain.ListQuery{Limit: 10, SortBy: domain.SortName, Desc: r%2 == 0})
	check(err)
	_, err = s.Accounts().Authenticate(ctx, key)
	check(err)
	return errs
}
