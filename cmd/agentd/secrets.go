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
	summary: "re-encrypt every agent's secrets under the current AGENTD_SECRET_KEY",
	details: `Rewrites the settings.secrets of every agent encrypted under the current key
(AGENTD_SECRET_KEY or --secret-key): values encrypted under the --old key or
already under the current one, and values stored in clear before any key was
set. Each agent is rewritten on its own, so an interrupted run can simply be
run again. Agents with a value that opens under neither key are left as they
are and listed; the command then fails.

To change the key: generate one with 'openssl rand -base64 32', run this
command with the new key as AGENTD_SECRET_KEY and the old one as --old, then
restart the servers with the new key. Without --old it only encrypts the
values stored in clear.

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
				res, err := st.RotateSecrets(ctx, oldBox)
				if err != nil {
					return fmt.Errorf("rotate secrets: %w", err)
				}
				fmt.Fprintf(e.stderr, "re-encrypted the secrets of %d agents and %d webhooks\n", res.Agents, res.Webhooks)
				if len(res.Unreadable) > 0 {
					return fmt.Errorf("the secrets of %d agents or webhooks open under neither key and were left as they were: %s",
						len(res.Unreadable), strings.Join(res.Unreadable, ", "))
				}
				return nil
			}, store.WithSecretBox(box))
		}
	},
}
