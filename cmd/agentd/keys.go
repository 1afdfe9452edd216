package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store"
)

var keysCreateCommand = &command{
	name:    "keys create",
	summary: "create an API key and print it (shown only once)",
	details: `Creates an API key for the account and prints the key alone on stdout, so
scripts can capture it; notes go to stderr. Only a hash is stored: save the
key now, it cannot be shown again.

A read key may only call GET operations; a write key may call every
operation. --expires takes a lifetime: Nd (days), Nh (hours) or a Go duration
such as 1h30m; without it the key never expires.

Examples:
  agentd keys create --account acme
  agentd keys create --account acme --scope read --expires 90d
  KEY=$(agentd keys create --account acme --expires 12h)`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		db := dbFlag(fs, e)
		account := fs.String("account", "", "`name` of the account the key belongs to (required)")
		scope := newChoice(string(domain.ScopeWrite), string(domain.ScopeRead), string(domain.ScopeWrite))
		fs.Var(scope, "scope", "`scope` of the key: read (GET operations only) or write (every operation)")
		var exp expiry
		fs.Var(&exp, "expires", "`lifetime` of the key: 90d, 12h, 1h30m (default: never expires)")
		return func(ctx context.Context, _ []string) error {
			if *account == "" {
				return usagef("keys create", "keys create needs --account NAME")
			}
			return createKey(ctx, e, *db, *account, domain.Scope(scope.v), exp.expiresAt(time.Now()))
		}
	},
}

var keysListCommand = &command{
	name:    "keys list",
	summary: "list an account's API keys",
	details: `Prints the keys of the account: their prefix (the first characters of the
key, which is all that is kept in clear), scope, state and dates.

Example:
  agentd keys list --account acme`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		db := dbFlag(fs, e)
		account := fs.String("account", "", "`name` of the account (required)")
		return func(ctx context.Context, _ []string) error {
			if *account == "" {
				return usagef("keys list", "keys list needs --account NAME")
			}
			return listKeys(ctx, e, *db, *account)
		}
	},
}

var keysRevokeCommand = &command{
	name:    "keys revoke",
	args:    "KEY_PREFIX",
	nargs:   1,
	summary: "revoke an API key by its prefix",
	details: fmt.Sprintf(`Revokes the key whose prefix is KEY_PREFIX (the first %d characters of the
key, as shown by keys list; the whole key works too). Requests with a revoked
key are refused with 401 at once.

Example:
  agentd keys revoke agk_AbCdEfGh`, store.KeyPrefixLen),
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		db := dbFlag(fs, e)
		return func(ctx context.Context, args []string) error {
			return revokeKey(ctx, e, *db, args[0])
		}
	},
}

// createKey creates a key and prints it alone on stdout.
func createKey(ctx context.Context, e *env, dsn, account string, scope domain.Scope, expiresAt *time.Time) error {
	return withStore(ctx, dsn, func(st *store.Store) error {
		plain, key, err := st.Accounts().CreateKey(ctx, account, scope, expiresAt)
		if errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("account %q not found (see: agentd accounts list)", account)
		}
		if err != nil {
			return fmt.Errorf("create key: %w", err)
		}
		fmt.Fprintln(e.stdout, plain)
		fmt.Fprintf(e.stderr, "Created a %s key %s for account %q, expires %s.\n"+
			"Save it now: it is shown only once. Use it as: Authorization: Bearer <key>\n",
			key.Scope, key.Prefix, account, formatTime(key.ExpiresAt, "never"))
		return nil
	})
}

// listKeys prints the keys of account as a table.
func listKeys(ctx context.Context, e *env, dsn, account string) error {
	return withStore(ctx, dsn, func(st *store.Store) error {
		keys, err := st.Accounts().ListKeys(ctx, account)
		if errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("account %q not found (see: agentd accounts list)", account)
		}
		if err != nil {
			return fmt.Errorf("list keys: %w", err)
		}
		return printKeys(e.stdout, time.Now(), keys)
	})
}

// revokeKey revokes the key with the given prefix (or the whole key).
func revokeKey(ctx context.Context, e *env, dsn, prefix string) error {
	if strings.HasPrefix(prefix, store.KeyPrefix) && len(prefix) > store.KeyPrefixLen {
		prefix = prefix[:store.KeyPrefixLen]
	}
	if !strings.HasPrefix(prefix, store.KeyPrefix) || len(prefix) != store.KeyPrefixLen {
		return usagef("keys revoke", "%q is not a key prefix: expected %s followed by %d characters, as shown by keys list",
			prefix, store.KeyPrefix, store.KeyPrefixLen-len(store.KeyPrefix))
	}
	return withStore(ctx, dsn, func(st *store.Store) error {
		key, err := st.Accounts().RevokeKey(ctx, prefix)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			return fmt.Errorf("no key has the prefix %s", prefix)
		case errors.Is(err, domain.ErrConflict):
			return fmt.Errorf("several keys have the prefix %s; none was revoked", prefix)
		case err != nil:
			return fmt.Errorf("revoke key: %w", err)
		}
		fmt.Fprintf(e.stdout, "revoked %s key %s (revoked at %s)\n", key.Scope, key.Prefix, formatTime(key.RevokedAt, "-"))
		return nil
	})
}

// printKeys writes keys as a table; now decides which have expired.
func printKeys(w io.Writer, now time.Time, keys []domain.APIKey) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tSCOPE\tSTATE\tCREATED\tEXPIRES\tLAST-USED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.Prefix, k.Scope, keyState(k, now),
			formatTime(&k.CreatedAt, "-"), formatTime(k.ExpiresAt, "never"), formatTime(k.LastUsedAt, "never"))
	}
	return tw.Flush()
}

// keyState is "active", "revoked" or "expired".
func keyState(k domain.APIKey, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !k.ExpiresAt.After(now):
		return "expired"
	default:
		return "active"
	}
}

// formatTime formats t in RFC 3339 UTC, or returns none for nil.
func formatTime(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}
