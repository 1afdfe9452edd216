package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentd/agentd/store"
)

var migrateUpCommand = &command{
	name:    "migrate up",
	summary: "apply the pending schema migrations",
	details: `Applies the schema migrations the database does not have yet, and nothing
else; on PostgreSQL, the job engine's (River's) too. 'agentd serve' and every other command apply them too when they open
the database; run this first to upgrade the schema as a step of its own,
for instance before starting several replicas of a new release (they would
also agree among themselves: on PostgreSQL migrations run under an advisory
lock, so only the first replica applies them).

A database made by a release before versioned migrations is recognised and
upgraded from the schema it has.

Examples:
  agentd migrate up
  agentd migrate up --db postgres://agentd@db/agentd`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		db := dbFlag(fs, e)
		return func(ctx context.Context, _ []string) error {
			applied, err := store.Migrate(ctx, *db)
			if err != nil {
				return fmt.Errorf("migrate database %s: %w", redactDSN(*db), err)
			}
			engine, err := migrateJobs(ctx, *db)
			if err != nil {
				return fmt.Errorf("migrate the job engine's tables of %s: %w", redactDSN(*db), err)
			}
			for _, m := range applied {
				fmt.Fprintf(e.stderr, "applied %s\n", m.Name)
			}
			for _, name := range engine {
				fmt.Fprintf(e.stderr, "applied %s\n", name)
			}
			if len(applied)+len(engine) == 0 {
				fmt.Fprintln(e.stderr, "the schema is up to date")
			}
			return nil
		}
	},
}

var migrateStatusCommand = &command{
	name:    "migrate status",
	summary: "list the schema migrations, applied or pending",
	details: `Prints every schema migration this release knows, oldest first, with whether
the database has it (applied, and when) or not yet (pending). It applies
none.

Example:
  agentd migrate status --db postgres://agentd@db/agentd`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		db := dbFlag(fs, e)
		return func(ctx context.Context, _ []string) error {
			list, err := store.MigrationStatus(ctx, *db)
			if err != nil {
				return fmt.Errorf("migration status of %s: %w", redactDSN(*db), err)
			}
			return printMigrations(e.stdout, list)
		}
	},
}

// printMigrations writes migrations as a table.
func printMigrations(w io.Writer, list []store.Migration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tMIGRATION\tSTATE\tAPPLIED AT")
	for _, m := range list {
		state, at := "pending", "-"
		if m.Applied {
			state, at = "applied", m.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Version, m.Name, state, at)
	}
	return tw.Flush()
}
