package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestMigrateBackfillsDerivedColumns opens a database whose accounts and
// agents predate agent_count and clients, and checks that migrating fills
// them for the existing rows.
func TestMigrateBackfillsDerivedColumns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentd.db")
	old, err := Open(ctx, path)
	mustOK(t, err)
	acct := mustAccount(t, old, "acme")
	mustAccount(t, old, "empty")
	withClients := mustAgent(t, old, acct.ID, "a", "clients", []string{"discord"})
	mustAgent(t, old, acct.ID, "b")
	mustAgent(t, old, acct.ID, "c")
	for _, stmt := range []string{"ALTER TABLE accounts DROP COLUMN agent_count", "ALTER TABLE agents DROP COLUMN clients"} {
		mustOK(t, old.w.Exec(stmt).Error)
	}
	mustOK(t, old.Close())

	s := openSQLiteAt(t, path)
	counts := map[string]int64{}
	var rows []accountRow
	mustOK(t, s.r.Find(&rows).Error)
	for _, r := range rows {
		counts[string(r.Name)] = r.AgentCount
	}
	if counts["acme"] != 3 || counts["empty"] != 0 {
		t.Errorf("agent counts after migration: %v", counts)
	}
	list, total, err := s.ListAgents(ctx, acct.ID, ListQuery{SortBy: SortName})
	mustOK(t, err)
	if total != 3 || list[0].ID != withClients.ID || string(list[0].Fields["clients"]) != `["discord"]` {
		t.Errorf("after migration: total %d, first %s with clients %s", total, list[0].ID, list[0].Fields["clients"])
	}
	if _, ok := list[1].Fields["clients"]; ok {
		t.Errorf("agent without clients got %s", list[1].Fields["clients"])
	}
}

func TestAgentCountFollowsCreatesAndDeletes(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "a")
		mustAgent(t, s, acct.ID, "b")
		protected := mustAgent(t, s, acct.ID, "c", "deleteProtection", true)
		_, err := s.DeleteAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		_, err = s.DeleteAgent(ctx, acct.ID, protected.ID)
		wantErr(t, err, ErrDeleteProtected)
		_, err = s.DeleteAgent(ctx, acct.ID, a.ID)
		wantErr(t, err, ErrNotFound)
		_, total, err := s.ListAgents(ctx, acct.ID, ListQuery{})
		mustOK(t, err)
		if total != 2 {
			t.Errorf("total after deletes = %d, want 2", total)
		}
		// The quota counts the same agents: 2 of 3 leaves room for one.
		_, err = s.CreateAgent(ctx, Agent{AccountID: acct.ID, Fields: fields(t, "name", "d")}, 3)
		mustOK(t, err)
		_, err = s.CreateAgent(ctx, Agent{AccountID: acct.ID, Fields: fields(t, "name", "e")}, 3)
		wantErr(t, err, ErrQuotaExceeded)
	})
}
