package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store"
)

func TestAccountsCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		row      []string // NAME TIER RPM MULTIPLIER QUOTA, when it succeeds
		inStderr string
	}{
		{name: "defaults", args: []string{"acme"}, row: []string{"acme", "standard", "60", "1", "100"}},
		{name: "pro, flags after the name", args: []string{"acme", "--tier", "pro", "--agent-quota", "5"}, row: []string{"acme", "pro", "300", "5", "5"}},
		{name: "flags before the name", args: []string{"--tier=pro", "acme"}, row: []string{"acme", "pro", "300", "5", "100"}},
		{name: "single dash flags", args: []string{"-tier", "pro", "acme"}, row: []string{"acme", "pro", "300", "5", "100"}},
		{name: "enterprise", args: []string{"big", "--tier", "enterprise", "--rpm", "5000", "--endpoint-multiplier", "20"}, row: []string{"big", "enterprise", "5000", "20", "100"}},
		{name: "enterprise default multiplier", args: []string{"big", "--tier", "enterprise", "--rpm", "5000"}, row: []string{"big", "enterprise", "5000", "1", "100"}},
		{name: "enterprise without rpm", args: []string{"big", "--tier", "enterprise"}, code: exitUsage, inStderr: "needs --rpm"},
		{name: "rpm on standard", args: []string{"acme", "--rpm", "100"}, code: exitUsage, inStderr: "enterprise tier only"},
		{name: "multiplier on pro", args: []string{"acme", "--tier", "pro", "--endpoint-multiplier", "2"}, code: exitUsage, inStderr: "enterprise tier only"},
		{name: "bad tier", args: []string{"acme", "--tier", "gold"}, code: exitUsage, inStderr: "must be one of standard, pro, enterprise"},
		{name: "zero quota", args: []string{"acme", "--agent-quota", "0"}, code: exitUsage, inStderr: "positive whole number"},
		{name: "negative rpm", args: []string{"big", "--tier", "enterprise", "--rpm", "-5"}, code: exitUsage, inStderr: "positive whole number"},
		{name: "not a number", args: []string{"acme", "--agent-quota", "lots"}, code: exitUsage, inStderr: "positive whole number"},
		{name: "unknown flag", args: []string{"acme", "--colour", "red"}, code: exitUsage, inStderr: "not defined"},
		{name: "no name", args: nil, code: exitUsage, inStderr: "needs NAME"},
		{name: "blank name", args: []string{"  "}, code: exitUsage, inStderr: "1 to 100 characters"},
		{name: "two names", args: []string{"acme", "other"}, code: exitUsage, inStderr: `extra "other"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := tempDB(t)
			r := agentd(t, nil, append(append([]string{"accounts", "create"}, tt.args...), "--db", db)...)
			if r.code() != tt.code {
				t.Fatalf("exit code %d, want %d (err %v)", r.code(), tt.code, r.err)
			}
			if tt.code != exitOK {
				if !strings.Contains(r.err.Error(), tt.inStderr) {
					t.Errorf("error %q does not mention %q", r.err, tt.inStderr)
				}
				if r.stdout != "" {
					t.Errorf("stdout %q on failure", r.stdout)
				}
				return
			}
			rows := tableRows(r.stdout)
			if len(rows) != 1 || strings.Join(rows[0][:5], " ") != strings.Join(tt.row, " ") {
				t.Errorf("printed %v, want %v", rows, tt.row)
			}
			if !strings.Contains(r.stderr, "keys create --account "+tt.row[0]) {
				t.Errorf("stderr %q does not say how to make a key", r.stderr)
			}
		})
	}
}

func TestAccountsCreateStoresTheAccount(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "big", "--tier", "enterprise", "--rpm", "5000", "--endpoint-multiplier", "20", "--agent-quota", "7")
	a := accountNamed(t, db, "big")
	want := domain.Account{Name: "big", Tier: domain.TierEnterprise, RPM: 5000, EndpointMultiplier: 20, AgentQuota: 7}
	if a.Name != want.Name || a.Tier != want.Tier || a.RPM != want.RPM || a.EndpointMultiplier != want.EndpointMultiplier || a.AgentQuota != want.AgentQuota {
		t.Errorf("stored %+v, want %+v", a, want)
	}
}

// TestAccountsMonthlyBudget: --monthly-budget sets the account's budget
// in USD on create and update, 0 removes it, and a bad one is a usage
// error naming the range.
func TestAccountsMonthlyBudget(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	r := mustAgentd(t, db, "accounts", "create", "acme", "--monthly-budget", "250.5")
	if got := accountNamed(t, db, "acme").MonthlyBudgetMicros; got != 250_500_000 {
		t.Errorf("stored budget %d micros, want 250500000", got)
	}
	if rows := tableRows(r.stdout); len(rows) != 1 || rows[0][5] != "250.5" {
		t.Errorf("printed %v, want the budget 250.5", rows)
	}
	mustAgentd(t, db, "accounts", "update", "acme", "--monthly-budget", "0")
	if got := accountNamed(t, db, "acme").MonthlyBudgetMicros; got != 0 {
		t.Errorf("budget %d after --monthly-budget 0, want none", got)
	}
	for _, bad := range []string{"-1", "1000001", "lots"} {
		r := agentd(t, nil, "accounts", "update", "acme", "--monthly-budget", bad, "--db", db)
		if r.code() != exitUsage || !strings.Contains(r.err.Error(), "1000000") {
			t.Errorf("--monthly-budget %s: exit %d, err %v", bad, r.code(), r.err)
		}
	}
}

func TestAccountsCreateConflict(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "acme")
	r := agentd(t, nil, "accounts", "create", "acme", "--tier", "pro", "--db", db)
	if r.code() != exitError || !strings.Contains(r.err.Error(), `account "acme" already exists`) {
		t.Fatalf("exit %d, err %v; want 1 and already exists", r.code(), r.err)
	}
	if got := accountNamed(t, db, "acme").Tier; got != domain.TierStandard {
		t.Errorf("tier changed to %s by a failed create", got)
	}
}

func TestAccountsUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		create   []string
		update   []string
		code     int
		row      []string
		inStderr string
	}{
		{name: "to pro", create: []string{"acme"}, update: []string{"acme", "--tier", "pro"}, row: []string{"acme", "pro", "300", "5", "100"}},
		{name: "quota only", create: []string{"acme", "--tier", "pro"}, update: []string{"--agent-quota", "3", "acme"}, row: []string{"acme", "pro", "300", "5", "3"}},
		{name: "to enterprise", create: []string{"acme"}, update: []string{"acme", "--tier", "enterprise", "--rpm", "900"}, row: []string{"acme", "enterprise", "900", "1", "100"}},
		{name: "enterprise rpm kept", create: []string{"big", "--tier", "enterprise", "--rpm", "900"}, update: []string{"big", "--endpoint-multiplier", "4"}, row: []string{"big", "enterprise", "900", "4", "100"}},
		{name: "to enterprise without rpm", create: []string{"acme"}, update: []string{"acme", "--tier", "enterprise"}, code: exitUsage, inStderr: "needs --rpm"},
		{name: "rpm on a standard account", create: []string{"acme"}, update: []string{"acme", "--rpm", "9"}, code: exitUsage, inStderr: "enterprise tier only"},
		{name: "nothing to change", create: []string{"acme"}, update: []string{"acme"}, code: exitUsage, inStderr: "nothing to change"},
		{name: "unknown account", create: []string{"acme"}, update: []string{"nope", "--tier", "pro"}, code: exitError, inStderr: `account "nope" not found`},
		{name: "bad tier", create: []string{"acme"}, update: []string{"acme", "--tier", "platinum"}, code: exitUsage, inStderr: "must be one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := tempDB(t)
			mustAgentd(t, db, append([]string{"accounts", "create"}, tt.create...)...)
			r := agentd(t, nil, append(append([]string{"accounts", "update"}, tt.update...), "--db", db)...)
			if r.code() != tt.code {
				t.Fatalf("exit code %d, want %d (err %v)", r.code(), tt.code, r.err)
			}
			if tt.code != exitOK {
				if !strings.Contains(r.err.Error(), tt.inStderr) {
					t.Errorf("error %q does not mention %q", r.err, tt.inStderr)
				}
				return
			}
			if rows := tableRows(r.stdout); len(rows) != 1 || strings.Join(rows[0][:5], " ") != strings.Join(tt.row, " ") {
				t.Errorf("printed %v, want %v", rows, tt.row)
			}
		})
	}
}

func TestAccountsUpdateLeavingEnterpriseClearsItsLimits(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "big", "--tier", "enterprise", "--rpm", "900", "--endpoint-multiplier", "3")
	mustAgentd(t, db, "accounts", "update", "big", "--tier", "pro")
	a := accountNamed(t, db, "big")
	if a.Tier != domain.TierPro || a.RPM != 0 || a.EndpointMultiplier != 0 {
		t.Errorf("after leaving enterprise: %+v, want pro with rpm and multiplier cleared", a)
	}
}

func TestAccountsList(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "zeta", "--tier", "pro")
	mustAgentd(t, db, "accounts", "create", "alpha")
	mustAgentd(t, db, "accounts", "create", "mid", "--tier", "enterprise", "--rpm", "1234")
	r := mustAgentd(t, db, "accounts", "list")
	if !strings.HasPrefix(r.stdout, "NAME") {
		t.Errorf("no header: %q", r.stdout)
	}
	var got []string
	for _, row := range tableRows(r.stdout) {
		got = append(got, strings.Join(row[:3], " "))
	}
	want := []string{"alpha standard 60", "mid enterprise 1234", "zeta pro 300"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("listed %q, want %q", got, want)
	}
	if r := agentd(t, nil, "accounts", "list", "extra", "--db", db); r.code() != exitUsage {
		t.Errorf("accounts list with an argument: exit %d, want 2", r.code())
	}
}

func TestAdminCommandsTakeTheDatabaseFromAGENTD_DB(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	env := map[string]string{"AGENTD_DB": db}
	if r := agentd(t, env, "accounts", "create", "acme"); r.err != nil {
		t.Fatal(r.err)
	}
	r := agentd(t, env, "accounts", "list")
	if r.err != nil || !strings.Contains(r.stdout, "acme") {
		t.Fatalf("list via AGENTD_DB: %v %q", r.err, r.stdout)
	}
	// --db wins over the environment.
	other := tempDB(t)
	r = agentd(t, env, "accounts", "list", "--db", other)
	if r.err != nil || strings.Contains(r.stdout, "acme") {
		t.Errorf("--db did not override AGENTD_DB: %v %q", r.err, r.stdout)
	}
}

// accountNamed reads an account straight from the database.
func accountNamed(t testing.TB, db, name string) domain.Account {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.Accounts().AccountByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
