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

// maxAccountName is the longest account name accepted.
const maxAccountName = 100

// tiers are the tier names accepted by --tier.
var tiers = []string{string(domain.TierStandard), string(domain.TierPro), string(domain.TierEnterprise)}

const accountFlagsHelp = `Tiers set the rate limits: standard allows 60 requests per minute and the
per-endpoint limits of the API; pro 300 and five times the endpoint limits;
enterprise takes both from --rpm (required) and --endpoint-multiplier
(default 1). --agent-quota is the most agents the account may own (default 100).
--monthly-budget caps what the account's agents spend per UTC month, in USD
(GET /account shows it with this month's spend; 0 removes it).`

var accountsCreateCommand = &command{
	name:    "accounts create",
	args:    "NAME",
	nargs:   1,
	summary: "create an account",
	details: "Creates the account NAME. API keys and agents belong to an account.\n\n" + accountFlagsHelp + `

Examples:
  agentd accounts create acme
  agentd accounts create acme --tier pro --agent-quota 500
  agentd accounts create bigco --tier enterprise --rpm 5000 --endpoint-multiplier 20`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		f := defineAccountFlags(fs, e, string(domain.TierStandard))
		return func(ctx context.Context, args []string) error { return f.create(ctx, e, args[0]) }
	},
}

var accountsUpdateCommand = &command{
	name:    "accounts update",
	args:    "NAME",
	nargs:   1,
	summary: "change an account's tier, limits or agent quota",
	details: "Changes the given settings of the account NAME; the others keep their values.\n" +
		"Leaving the enterprise tier clears --rpm and --endpoint-multiplier.\n\n" + accountFlagsHelp + `

Examples:
  agentd accounts update acme --tier pro
  agentd accounts update bigco --rpm 10000
  agentd accounts update acme --agent-quota 1000`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		f := defineAccountFlags(fs, e, "")
		return func(ctx context.Context, args []string) error { return f.update(ctx, e, args[0]) }
	},
}

var accountsListCommand = &command{
	name:    "accounts list",
	summary: "list the accounts",
	details: `Prints every account with its effective limits.

Example:
  agentd accounts list --db postgres://agentd@localhost/agentd`,
	setup: func(fs *flag.FlagSet, e *env) func(context.Context, []string) error {
		db := dbFlag(fs, e)
		return func(ctx context.Context, _ []string) error {
			return withStore(ctx, *db, func(st *store.Store) error {
				accts, err := st.Accounts().ListAccounts(ctx)
				if err != nil {
					return fmt.Errorf("list accounts: %w", err)
				}
				return printAccounts(e.stdout, accts...)
			})
		}
	},
}

// accountFlags are the flags of accounts create and update.
type accountFlags struct {
	db                      *string
	tier                    *choice
	rpm, multiplier, quotas optInt
	monthlyBudget           optBudget
}

// maxBudgetUSD is the highest budget accepted, as for an agent's.
const maxBudgetUSD = 1_000_000

// defineAccountFlags defines the account flags on fs; tier is the default
// shown for --tier.
func defineAccountFlags(fs *flag.FlagSet, e *env, tier string) *accountFlags {
	f := &accountFlags{db: dbFlag(fs, e), tier: newChoice(tier, tiers...)}
	fs.Var(f.tier, "tier", "service `tier`: standard, pro or enterprise")
	fs.Var(&f.rpm, "rpm", "`N` requests per minute for an enterprise account")
	fs.Var(&f.multiplier, "endpoint-multiplier", "`N` times the per-endpoint limits for an enterprise account")
	fs.Var(&f.quotas, "agent-quota", "at most `N` agents owned by the account (100 when created without it)")
	fs.Var(&f.monthlyBudget, "monthly-budget", "what the account's agents may spend per UTC month, `USD` (0: no budget)")
	return f
}

// create runs accounts create.
func (f *accountFlags) create(ctx context.Context, e *env, name string) error {
	name, err := checkAccountName("accounts create", name)
	if err != nil {
		return err
	}
	tier := domain.Tier(f.tier.v)
	if err := f.checkTierLimits("accounts create", tier, 0); err != nil {
		return err
	}
	a := domain.Account{Name: name, Tier: tier, RPM: f.rpm.v, EndpointMultiplier: f.multiplier.v, AgentQuota: f.quotas.v,
		MonthlyBudgetMicros: f.monthlyBudget.micros}
	return withStore(ctx, *f.db, func(st *store.Store) error {
		created, err := st.Accounts().CreateAccount(ctx, a)
		if errors.Is(err, domain.ErrConflict) {
			return fmt.Errorf("account %q already exists (change it with: agentd accounts update %s)", name, name)
		}
		if err != nil {
			return fmt.Errorf("create account: %w", err)
		}
		fmt.Fprintf(e.stderr, "Created account %q. Give it an API key with: agentd keys create --account %s\n", name, name)
		return printAccounts(e.stdout, created)
	})
}

// update runs accounts update.
func (f *accountFlags) update(ctx context.Context, e *env, name string) error {
	if !f.tier.set && !f.rpm.set && !f.multiplier.set && !f.quotas.set && !f.monthlyBudget.set {
		return usagef("accounts update", "nothing to change: give --tier, --rpm, --endpoint-multiplier, --agent-quota or --monthly-budget")
	}
	return withStore(ctx, *f.db, func(st *store.Store) error {
		cur, err := st.Accounts().AccountByName(ctx, name)
		if errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("account %q not found (see: agentd accounts list)", name)
		}
		if err != nil {
			return fmt.Errorf("update account: %w", err)
		}
		changes, err := f.changes(cur)
		if err != nil {
			return err
		}
		updated, err := st.Accounts().UpdateAccount(ctx, name, changes)
		if err != nil {
			return fmt.Errorf("update account: %w", err)
		}
		fmt.Fprintf(e.stderr, "Updated account %q.\n", name)
		return printAccounts(e.stdout, updated)
	})
}

// changes returns the changes the flags make to cur, checking that the
// result is a consistent account.
func (f *accountFlags) changes(cur domain.Account) (domain.AccountChanges, error) {
	c := domain.AccountChanges{RPM: f.rpm.ptr(), EndpointMultiplier: f.multiplier.ptr(), AgentQuota: f.quotas.ptr(),
		MonthlyBudgetMicros: f.monthlyBudget.ptr()}
	tier := cur.Tier
	if f.tier.set {
		tier = domain.Tier(f.tier.v)
		c.Tier = &tier
	}
	if err := f.checkTierLimits("accounts update", tier, cur.RPM); err != nil {
		return c, err
	}
	if tier != domain.TierEnterprise && cur.Tier == domain.TierEnterprise {
		zero := 0
		c.RPM, c.EndpointMultiplier = &zero, &zero
	}
	return c, nil
}

// checkTierLimits checks --rpm and --endpoint-multiplier against tier:
// enterprise needs an rpm (given, or stored as curRPM), the other tiers
// take neither.
func (f *accountFlags) checkTierLimits(cmd string, tier domain.Tier, curRPM int) error {
	if tier == domain.TierEnterprise {
		if !f.rpm.set && curRPM == 0 {
			return usagef(cmd, "the enterprise tier needs --rpm (its requests per minute)")
		}
		return nil
	}
	if f.rpm.set || f.multiplier.set {
		return usagef(cmd, "--rpm and --endpoint-multiplier apply to the enterprise tier only; the %s tier fixes its limits", tier)
	}
	return nil
}

// checkAccountName trims name and checks its length.
func checkAccountName(cmd, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > maxAccountName {
		return "", usagef(cmd, "the account name must be 1 to %d characters", maxAccountName)
	}
	return name, nil
}

// printAccounts writes accts as a table with their effective limits.
func printAccounts(w io.Writer, accts ...domain.Account) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTIER\tRPM\tENDPOINT-MULTIPLIER\tAGENT-QUOTA\tMONTHLY-BUDGET\tCREATED\tID")
	for _, a := range accts {
		budget := "none"
		if a.MonthlyBudgetMicros > 0 {
			budget = (&optBudget{micros: a.MonthlyBudgetMicros, set: true}).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", a.Name, a.Tier, a.Limits().RPM, a.Limits().EndpointMultiplier,
			a.AgentQuota, budget, a.CreatedAt.UTC().Format(time.RFC3339), a.ID)
	}
	return tw.Flush()
}

// withStore opens the database dsn with opts, runs fn with it and closes it.
func withStore(ctx context.Context, dsn string, fn func(*store.Store) error, opts ...store.Option) (err error) {
	st, err := store.Open(ctx, dsn, opts...)
	if err != nil {
		return fmt.Errorf("open database %s: %w", redactDSN(dsn), err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close database: %w", cerr)
		}
	}()
	return fn(st)
}
