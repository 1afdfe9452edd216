package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/store/storetest"
)

func TestMigrateCommands(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	status := func() string {
		t.Helper()
		return mustAgentd(t, db, "migrate", "status").stdout
	}
	if out := status(); !strings.Contains(out, "00001_initial.sql") || strings.Contains(out, "applied") ||
		strings.Count(out, "pending") < 2 {
		t.Errorf("status of a new database:\n%s", out)
	}
	if r := mustAgentd(t, db, "migrate", "up"); !strings.Contains(r.stderr, "applied 00001_initial.sql") ||
		!strings.Contains(r.stderr, "applied 00002_") {
		t.Errorf("migrate up said %q", r.stderr)
	}
	if out := status(); strings.Contains(out, "pending") || strings.Count(out, "applied") < 2 {
		t.Errorf("status after migrate up:\n%s", out)
	}
	if r := mustAgentd(t, db, "migrate", "up"); !strings.Contains(r.stderr, "up to date") {
		t.Errorf("second migrate up said %q", r.stderr)
	}
	// The migrated database serves the other commands.
	mustAgentd(t, db, "accounts", "create", "acme")
}

// TestMigrateUpPostgres: on PostgreSQL migrate up applies the job
// engine's migrations beside the store's, and then finds neither pending.
func TestMigrateUpPostgres(t *testing.T) {
	t.Parallel()
	db := storetest.PostgresDSN(t)
	if r := mustAgentd(t, db, "migrate", "up"); !strings.Contains(r.stderr, "applied 00001_initial.sql") ||
		!strings.Contains(r.stderr, "applied river 001_") {
		t.Errorf("migrate up said %q", r.stderr)
	}
	if r := mustAgentd(t, db, "migrate", "up"); !strings.Contains(r.stderr, "up to date") {
		t.Errorf("second migrate up said %q", r.stderr)
	}
}

func TestMigrateCommandErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"migrate"}, exitUsage, "needs a subcommand: up, status"},
		{[]string{"migrate", "down"}, exitUsage, "unknown command 'agentd migrate down'"},
		{[]string{"migrate", "up", "now"}, exitUsage, "takes no arguments"},
		{[]string{"migrate", "status", "--db", filepath.Join(t.TempDir(), "missing", "agentd.db")}, exitError, "migration status of"},
	} {
		r := agentd(t, nil, tt.args...)
		if r.code() != tt.code || r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
			t.Errorf("%v: exit %d, error %v; want exit %d and %q", tt.args, r.code(), r.err, tt.code, tt.want)
		}
	}
	if r := agentd(t, nil, "help", "migrate", "status"); r.err != nil || !strings.Contains(r.stdout, "--db") {
		t.Errorf("help migrate status: %v\n%s", r.err, r.stdout)
	}
}
