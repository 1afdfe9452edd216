package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{errors.New("database unreachable"), exitError},
		{usagef("keys create", "needs --account"), exitUsage},
		{fmt.Errorf("wrapped: %w", usagef("", "bad")), exitUsage},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestReport(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	report(&b, nil)
	if b.Len() != 0 {
		t.Errorf("report(nil) wrote %q", b.String())
	}
	report(&b, usagef("keys create", "keys create needs --account NAME"))
	if want := "agentd: keys create needs --account NAME (see 'agentd help keys create')\n"; b.String() != want {
		t.Errorf("report wrote %q, want %q", b.String(), want)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"accounts"}, "needs a subcommand: create, update, list"},
		{[]string{"keys"}, "needs a subcommand: create, list, revoke"},
		{[]string{"accounts", "delete", "acme"}, "unknown command 'agentd accounts delete'"},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"version", "--verbose"}, "not defined: -verbose"},
		{[]string{"serve", "now"}, "takes no arguments"},
		{[]string{"serve", "--addr"}, "flag needs an argument"},
	}
	for _, tt := range tests {
		r := agentd(t, nil, tt.args...)
		if r.code() != exitUsage || r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
			t.Errorf("agentd %v: exit %d, err %v; want 2 and %q", tt.args, r.code(), r.err, tt.want)
		}
	}
	// Without a command, the overview goes to stderr.
	if r := agentd(t, nil); !strings.Contains(r.stderr, "Commands:") || r.stdout != "" {
		t.Errorf("agentd alone: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"serve", "accounts create NAME", "accounts update NAME", "accounts list", "keys create", "keys list", "keys revoke KEY_PREFIX", "version", "AGENTD_DB", "OPENAI_API_KEY", "OLLAMA_HOST", "AGENTD_PROVIDER_TIMEOUT", "agentd keys create --account acme"}},
		{[]string{"--help"}, []string{"Commands:", "Environment"}},
		{[]string{"-h"}, []string{"Commands:"}},
		{[]string{"help", "serve"}, []string{"Usage: agentd serve", "--addr address", "env AGENTD_ADDR", "default :8080", "--redis-url", "ANTHROPIC_API_KEY", "Examples:"}},
		{[]string{"serve", "--help"}, []string{"Usage: agentd serve", "--metrics-addr"}},
		{[]string{"help", "accounts"}, []string{"accounts create NAME", "accounts update NAME", "accounts list"}},
		{[]string{"accounts", "--help"}, []string{"accounts create NAME"}},
		{[]string{"keys", "help"}, []string{"keys revoke KEY_PREFIX"}},
		{[]string{"help", "accounts", "create"}, []string{"Usage: agentd accounts create NAME [flags]", "--tier tier", "--rpm N", "--endpoint-multiplier N", "--agent-quota N", "--db path", "enterprise"}},
		{[]string{"accounts", "update", "-h"}, []string{"Usage: agentd accounts update NAME [flags]"}},
		{[]string{"keys", "create", "--help"}, []string{"Usage: agentd keys create [flags]", "--account name", "--scope scope", "--expires lifetime", "shown only once", "90d"}},
		{[]string{"help", "keys", "revoke"}, []string{"Usage: agentd keys revoke KEY_PREFIX [flags]"}},
	}
	for _, tt := range tests {
		r := agentd(t, nil, tt.args...)
		if r.err != nil {
			t.Errorf("agentd %v: %v", tt.args, r.err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("agentd %v: help does not contain %q:\n%s", tt.args, w, r.stdout)
			}
		}
	}
}

func TestHelpShowsTheDefaultsOfTheEnvironmentWithoutSecrets(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"AGENTD_ADDR": "127.0.0.1:9999", "OPENAI_API_KEY": "sk-secret",
		"AGENTD_DB": "postgres://agentd:pg-secret@db/agentd", "AGENTD_REDIS_URL": "redis://:redis-secret@cache:6379/0",
	}
	for _, args := range [][]string{{"help", "serve"}, {"accounts", "list", "--help"}} {
		r := agentd(t, env, args...)
		if args[0] == "help" && !strings.Contains(r.stdout, "default 127.0.0.1:9999") {
			t.Errorf("help serve does not show the address from the environment:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "postgres://agentd:xxxxx@db/agentd") {
			t.Errorf("%v does not show the redacted database URL:\n%s", args, r.stdout)
		}
		for _, secret := range []string{"sk-secret", "pg-secret", "redis-secret"} {
			if strings.Contains(r.stdout, secret) {
				t.Errorf("%v shows the secret %s", args, secret)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := agentd(t, nil, "version")
	if r.err != nil || !strings.HasPrefix(r.stdout, "agentd dev (") || !strings.Contains(r.stdout, runtime.Version()) {
		t.Errorf("version printed %q, %v", r.stdout, r.err)
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		pos  []string
		tier string
	}{
		{[]string{"acme", "--tier", "pro"}, []string{"acme"}, "pro"},
		{[]string{"--tier", "pro", "acme"}, []string{"acme"}, "pro"},
		{[]string{"a", "--tier=pro", "b"}, []string{"a", "b"}, "pro"},
		{[]string{"--", "--tier", "x"}, []string{"--tier", "x"}, ""},
		{[]string{"acme", "--", "-x"}, []string{"acme", "-x"}, ""},
		{nil, nil, ""},
	}
	for _, tt := range tests {
		fs := newFlagSet("test")
		tier := fs.String("tier", "", "")
		pos, err := parseArgs(fs, tt.args)
		if err != nil || strings.Join(pos, " ") != strings.Join(tt.pos, " ") || *tier != tt.tier {
			t.Errorf("parseArgs(%q) = %q, tier %q, %v; want %q, tier %q", tt.args, pos, *tier, err, tt.pos, tt.tier)
		}
	}
}

func TestRunReadsTheProcessEnvironment(t *testing.T) {
	db := tempDB(t)
	t.Setenv("AGENTD_DB", db)
	var stdout, stderr strings.Builder
	if err := run(context.Background(), []string{"accounts", "create", "from-env"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if a := accountNamed(t, db, "from-env"); a.Name != "from-env" {
		t.Errorf("account not created in $AGENTD_DB: %+v", a)
	}
}

// agentd caps glibc's malloc arenas as it loads (the test binary holds the
// same constructor), the operator not having set MALLOC_ARENA_MAX.
func TestMallocArenasAreLimited(t *testing.T) {
	if os.Getenv("MALLOC_ARENA_MAX") != "" {
		t.Skip("MALLOC_ARENA_MAX is set: glibc applies the operator's number")
	}
	if !mallocArenasLimited() {
		t.Error("the arenas were not limited")
	}
}
