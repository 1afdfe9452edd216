package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/agentd/agentd/store"
)

var secretsRotateCommand = &command{
	name:    "secrets rotate",
	summary: "re-encrypt every agent's and webhook's secrets under the newest key",
	details: `Rewrites the settings.secrets of every agent, and every webhook's signing
secrets, under the newest key (the first of AGENTD_SECRET_KEYS, or
AGENTD_SECRET_KEY, or --secret-key): values encrypted under any listed key or
the --old key, and values stored in clear before any key was set. Each agent is
rewritten on its own, so an interrupted run can simply be run again. Agents
with a value that opens under no key are left as they are and listed; the
command then fails.

To change the key without an outage: generate one with 'openssl rand -base64
32'; restart every server with AGENTD_SECRET_KEYS=OLD,NEW (the new key reads),
then with AGENTD_SECRET_KEYS=NEW,OLD (the new key writes, the old one still
reads), run this command, then restart with AGENTD_SECRET_KEYS=NEW. Every
value names the key that sealed it, so each step works while the servers of
the step before still run. Without a list, --old names the previous key.

Examples:
  AGENTD_SECRET_KEY=$(openssl rand -base64 32) agentd secrets rotate
  AGENTD_SECRET_KEY=$NEW_KEY agentd secrets rotate --old "$OLD_KEY" --db postgres://agentd@db/agentd`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		db := dbFlag(fs, e)
		current := secretKeyFlag(fs, e)
		old := fs.String("old", "", "the previous `key`, in the same form (default: none, only values in clear are encrypted)")
		return func(ctx context.Context, _ []string) error {
			box, err := parseSecretKey(*current)
			if err != nil {
				return usagef("secrets rotate", "--secret-key / %s: %v", secretKeyEnv, err)
			}
			if box == nil {
				return usagef("secrets rotate", "secrets rotate needs the new key in %s or --secret-key", secretKeyEnv)
			}
			oldBox, err := parseSecretKey(*old)
			if err != nil {
				return usagef("secrets rotate", "--old: %v", err)
			}
			return withStore(ctx, *db, func(st *store.Store) error {
				res, err := st.Agents().RotateSecrets(ctx, oldBox)
				if err != nil {
					return fmt.Errorf("rotate secrets: %w", err)
				}
				fmt.Fprintf(e.stderr, "re-encrypted the secrets of %d agents, %d webhooks and %d stored idempotent answers\n", res.Agents, res.Webhooks, res.Answers)
				if len(res.Unreadable) > 0 {
					return fmt.Errorf("the secrets of %d agents or webhooks open under neither key and were left as they were: %s",
						len(res.Unreadable), strings.Join(res.Unreadable, ", "))
				}
				return nil
			}, store.WithSecretBox(box))
		}
	},
}
