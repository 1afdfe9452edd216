package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// mapEnv returns a getenv over m, so tests never read or change the
// process environment.
func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// cliResult is what one agentd invocation produced.
type cliResult struct {
	stdout, stderr string
	err            error
}

// code is the exit code main would use.
func (r cliResult) code() int { return exitCode(r.err) }

// agentd runs the command line args with the environment env.
func agentd(t testing.TB, env map[string]string, args ...string) cliResult {
	t.Helper()
	var stdout, stderr testutil.SyncBuffer
	err := runEnv(context.Background(), args, mapEnv(env), &stdout, &stderr)
	return cliResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustAgentd runs args against db and fails the test unless it succeeds.
func mustAgentd(t testing.TB, db string, args ...string) cliResult {
	t.Helper()
	r := agentd(t, nil, append(args, "--db", db)...)
	if r.err != nil {
		t.Fatalf("agentd %s: %v\nstderr: %s", strings.Join(args, " "), r.err, r.stderr)
	}
	return r
}

// tempDB returns the path of a new SQLite database file.
func tempDB(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "agentd.db")
}

// tableRows parses a table printed by the CLI into rows of fields, without
// the header.
func tableRows(out string) [][]string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rows [][]string
	for _, l := range lines[1:] {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}
