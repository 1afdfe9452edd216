package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// listFixture creates agents with tied names, statuses and creation times
// in one account, plus one agent in another account.
func listFixture(t *testing.T, s *Store) (string, []domain.Agent) {
	t.Helper()
	ctx := context.Background()
	clock := withClock(s)
	acct := mustAccount(t, s, "acme")
	other := mustAccount(t, s, "other")
	mustAgent(t, s, other.ID, "intruder")
	var agents []domain.Agent
	for i, name := range []string{"bob", "alice", "carol", "alice", "dave", "Bob", "eve"} {
		if i%2 == 0 {
			clock.add(time.Millisecond) // pairs share a creation time
		}
		agents = append(agents, mustAgent(t, s, acct.ID, name))
	}
	inactive := domain.StatusInactive
	for _, i := range []int{1, 4, 6} {
		a, _, err := s.Agents().UpdateAgent(ctx, acct.ID, agents[i].ID, nil, &inactive, domain.AnyVersion)
		mustOK(t, err)
		agents[i] = a
	}
	mustEnterError(t)(s.Agents().MarkAgentError(ctx, acct.ID, agents[2].ID, "rate limited", clock.now().Add(time.Minute)))
	agents[2].Status = domain.StatusError
	return acct.ID, agents
}

// expectedOrder sorts agents the way ListAgents must.
func expectedOrder(agents []domain.Agent, by domain.SortField, desc bool) []string {
	sorted := append([]domain.Agent(nil), agents...)
	key := func(a domain.Agent) string {
		switch by {
		case domain.SortName:
			return a.Name
		case domain.SortStatus:
			return string(a.Status)
		}
		return a.CreatedAt.Format("2006-01-02T15:04:05.000")
	}
	sort.Slice(sorted, func(i, j int) bool {
		ki, kj := key(sorted[i]), key(sorted[j])
		if ki == kj {
			ki, kj = sorted[i].ID, sorted[j].ID
		}
		if desc {
			return ki > kj
		}
		return ki < kj
	})
	ids := make([]string, len(sorted))
	for i, a := range sorted {
		ids[i] = a.ID
	}
	return ids
}

func TestListAgentsSortAndPaginate(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		accountID, agents := listFixture(t, s)
		for _, by := range []domain.SortField{domain.SortCreatedAt, domain.SortName, domain.SortStatus} {
			for _, desc := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s desc=%v", by, desc), func(t *testing.T) {
					want := expectedOrder(agents, by, desc)
					var got []string
					for page := 1; page <= 3; page++ {
						list, total, err := s.Agents().ListAgents(ctx, accountID, domain.ListQuery{Page: page, Limit: 3, SortBy: by, Desc: desc})
						mustOK(t, err)
						if total != 7 {
							t.Errorf("total = %d, want 7", total)
						}
						for _, a := range list {
							got = append(got, a.ID)
						}
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("order\n got  %v\n want %v", got, want)
					}
				})
			}
		}
	})
}

// Pages of the default listing start where the page before left them,
// tied creation times included, and only while the account's set of
// agents is the one they were read from.
func TestListAgentsPageStarts(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		accountID, agents := listFixture(t, s)
		walk := func(t *testing.T, desc bool, want []string) {
			t.Helper()
			for pass := range 2 { // the second pass starts every page from its known start
				var got []string
				for page := 1; page <= 3; page++ {
					list, _, err := s.Agents().ListAgents(ctx, accountID, domain.ListQuery{Page: page, Limit: 3, Desc: desc})
					mustOK(t, err)
					for _, a := range list {
						got = append(got, a.ID)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("pass %d, desc=%v\n got  %v\n want %v", pass, desc, got, want)
				}
			}
		}
		for _, desc := range []bool{false, true} {
			walk(t, desc, expectedOrder(agents, domain.SortCreatedAt, desc))
			want := expectedOrder(agents, domain.SortCreatedAt, desc)
			var acct accountRow
			mustOK(t, s.r.Take(&acct, "id = ?", accountID).Error)
			start, ok := s.starts.get(pageKey{accountID, desc, 3}, acct.AgentSetVersion)
			if !ok || start.id != want[3] {
				t.Fatalf("desc=%v: the start of page 2 is %+v (%v), want agent %s", desc, start, ok, want[3])
			}
		}
		// A start kept for the current set is where the page begins.
		var acct accountRow
		mustOK(t, s.r.Take(&acct, "id = ?", accountID).Error)
		want := expectedOrder(agents, domain.SortCreatedAt, false)
		byID := map[string]domain.Agent{}
		for _, a := range agents {
			byID[a.ID] = a
		}
		s.starts.put(pageKey{accountID, false, 3}, pageStart{acct.AgentSetVersion, byID[want[5]].CreatedAt, want[5]})
		list, _, err := s.Agents().ListAgents(ctx, accountID, domain.ListQuery{Page: 2, Limit: 3})
		mustOK(t, err)
		if len(list) != 2 || list[0].ID != want[5] {
			t.Errorf("page 2 from a start at agent %s: %d agents, first %v", want[5], len(list), list)
		}
		// Creating or deleting an agent moves the set: the starts kept
		// before are not used, on this replica or any other.
		_, err = s.Agents().DeleteAgent(ctx, accountID, agents[0].ID, domain.AnyVersion)
		mustOK(t, err)
		agents = append(agents[1:], mustAgent(t, s, accountID, "frank"))
		for _, desc := range []bool{false, true} {
			walk(t, desc, expectedOrder(agents, domain.SortCreatedAt, desc))
		}
	})
}

func TestListAgentsFilterAndBounds(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		accountID, agents := listFixture(t, s)
		for st, n := range map[domain.Status]int{domain.StatusActive: 3, domain.StatusInactive: 3, domain.StatusError: 1} {
			list, total, err := s.Agents().ListAgents(ctx, accountID, domain.ListQuery{Status: st, Limit: 2})
			mustOK(t, err)
			if total != int64(n) || len(list) != min(n, 2) {
				t.Errorf("status %s: %d agents, total %d; want total %d", st, len(list), total, n)
			}
			for _, a := range list {
				if a.Status != st {
					t.Errorf("status %s filter returned %s", st, a.Status)
				}
			}
		}
		list, total, err := s.Agents().ListAgents(ctx, accountID, domain.ListQuery{Page: 5, Limit: 3})
		mustOK(t, err)
		if list == nil || len(list) != 0 || total != 7 {
			t.Errorf("page past the end: %v, total %d", list, total)
		}
		list, total, err = s.Agents().ListAgents(ctx, accountID, domain.ListQuery{})
		mustOK(t, err)
		if len(list) != 7 || total != 7 || list[0].ID != expectedOrder(agents, domain.SortCreatedAt, false)[0] {
			t.Errorf("defaults: %d agents, total %d", len(list), total)
		}
		if list[0].Name == "" || list[0].ModelProvider == "" || list[0].Model == "" || list[0].Status == "" ||
			list[0].CreatedAt.IsZero() || list[0].UpdatedAt.IsZero() || list[0].CreatedAt.Location() != time.UTC {
			t.Errorf("listed agents are not summaries: %+v", list[0])
		}
		list, total, err = s.Agents().ListAgents(ctx, "acct_nobody", domain.ListQuery{})
		mustOK(t, err)
		if len(list) != 0 || total != 0 {
			t.Errorf("empty account: %d agents, total %d", len(list), total)
		}
		_, _, err = s.Agents().ListAgents(ctx, accountID, domain.ListQuery{SortBy: "model"})
		wantErr(t, err, domain.ErrInvalid)
	})
}

func TestListAgentsUsesIndexes(t *testing.T) {
	s := newSQLite(t)
	for _, col := range []string{"created_at", "name", "status"} {
		var plan []struct {
			ID, Parent, Notused int
			Detail              string
		}
		q := fmt.Sprintf("EXPLAIN QUERY PLAN SELECT * FROM agents WHERE account_id = 'a' ORDER BY %s DESC, id DESC LIMIT 20 OFFSET 40", col)
		mustOK(t, s.r.Raw(q).Scan(&plan).Error)
		text := fmt.Sprint(plan)
		t.Logf("sort by %s: %s", col, text)
		if !strings.Contains(text, "USING INDEX idx_agents_account_") || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("sort by %s does not use its index: %s", col, text)
		}
	}
	var plan []struct {
		ID, Parent, Notused int
		Detail              string
	}
	q := "EXPLAIN QUERY PLAN SELECT * FROM agents WHERE account_id = 'a' AND (created_at, id) >= ('x', 'y') ORDER BY created_at, id LIMIT 21"
	mustOK(t, s.r.Raw(q).Scan(&plan).Error)
	t.Logf("from a start: %v", plan)
	if text := fmt.Sprint(plan); !strings.Contains(text, "idx_agents_account_created (account_id=? AND (created_at,id)>(?,?))") &&
		!strings.Contains(text, "idx_agents_account_created (account_id=? AND created_at>?)") {
		t.Errorf("a page from its start is not a range of the index: %s", text)
	}
}

// Every page query reads its page through its sort index, in order, and
// counts once a statement.
func TestListQueriesPlans(t *testing.T) {
	s := newSQLite(t)
	for sh, q := range listQueries[0] {
		if sh.from && sh.col != "created_at" {
			continue // only the default listing starts from a start
		}
		var plan []struct {
			ID, Parent, Notused int
			Detail              string
		}
		args := []any{"a"}
		if sh.status {
			args = append(args, "active")
		}
		if sh.from {
			args = append(args, "2026-11-28 14:05:01.123+00:00", "agent_x")
		}
		args = append(args, 21)
		if !sh.from {
			args = append(args, 40)
		}
		mustOK(t, s.r.Raw("EXPLAIN QUERY PLAN "+q, args...).Scan(&plan).Error)
		text := fmt.Sprint(plan)
		if !strings.Contains(text, "USING INDEX idx_agents_account_") || strings.Contains(text, "TEMP B-TREE") ||
			strings.Contains(text, "CORRELATED") || !strings.Contains(text, "SCALAR SUBQUERY") {
			t.Errorf("%+v: %s", sh, text)
		}
	}
}

func TestListAgentsSummaryClients(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		with, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", "a", "clients", []string{"discord", "slack"})}, -1)
		mustOK(t, err)
		mustAgent(t, s, acct.ID, "b")
		list, total, err := s.Agents().ListAgents(ctx, acct.ID, domain.ListQuery{SortBy: domain.SortName})
		mustOK(t, err)
		if total != 2 || len(list) != 2 {
			t.Fatalf("%d agents, total %d", len(list), total)
		}
		if list[0].ID != with.ID || string(list[0].Clients) != `["discord","slack"]` {
			t.Errorf("clients of %s: %s", list[0].ID, list[0].Clients)
		}
		if list[1].Clients != nil {
			t.Errorf("agent without clients lists %s", list[1].Clients)
		}
		// A PATCH of clients reaches the summary.
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, with.ID, fields(t, "clients", []string{"telegram"}), nil, domain.AnyVersion)
		mustOK(t, err)
		list, _, err = s.Agents().ListAgents(ctx, acct.ID, domain.ListQuery{SortBy: domain.SortName})
		mustOK(t, err)
		if string(list[0].Clients) != `["telegram"]` {
			t.Errorf("clients after update: %s", list[0].Clients)
		}
	})
}

// A summary holds exactly what the agent holds, whatever its text: the
// page query's row is packed on SQLite (see listQuery), and a name of
// digits and colons, multi-byte characters or a NUL must come back whole.
func TestListAgentsSummariesAreExact(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		withClock(s)
		acct := mustAccount(t, s, "acme")
		names := []string{"12:34", "3:abc", "0:", "é ü 日本 🎉", "a\x00b", strings.Repeat("9:ab:", 20), `"quoted" \ <html> & more`}
		if s.postgres {
			names[4] = "no NUL on PostgreSQL" // text there cannot hold one
		}
		want := map[string]domain.Agent{}
		for i, name := range names {
			a := mustAgent(t, s, acct.ID, name, "model", fmt.Sprintf("org/model:%d", i), "clients", []string{"discord"})
			want[a.ID] = a
		}
		list, total, err := s.Agents().ListAgents(ctx, acct.ID, domain.ListQuery{Limit: 100})
		mustOK(t, err)
		if total != int64(len(names)) || len(list) != len(names) {
			t.Fatalf("%d agents, total %d", len(list), total)
		}
		for _, got := range list {
			a := want[got.ID]
			if got.Name != a.Name || got.ModelProvider != a.ModelProvider || got.Model != a.Model || got.Status != a.Status ||
				!got.CreatedAt.Equal(a.CreatedAt) || !got.UpdatedAt.Equal(a.UpdatedAt) || got.CreatedAt.Location() != time.UTC ||
				got.UpdatedAt.Location() != time.UTC || string(got.Clients) != string(a.Fields["clients"]) {
				t.Errorf("summary %+v\n of %+v", got, a)
			}
		}
	})
}
