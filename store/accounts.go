package store

import (
	"context"
	"strings"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// DefaultAgentQuota is the agent quota of an account created without one.
const DefaultAgentQuota = 100

// CreateAccount stores a new account and returns it with ID, CreatedAt and
// defaults filled in (tier standard, agent quota DefaultAgentQuota). It
// returns ErrConflict if the name is taken and ErrInvalid for an empty name,
// an unknown tier or a negative number.
func (s Accounts) CreateAccount(ctx context.Context, a domain.Account) (domain.Account, error) {
	a.Name = strings.TrimSpace(a.Name)
	if a.Tier == "" {
		a.Tier = domain.TierStandard
	}
	if a.AgentQuota == 0 {
		a.AgentQuota = DefaultAgentQuota
	}
	if err := validateAccount(a); err != nil {
		return domain.Account{}, wrap("create account", err)
	}
	a.CreatedAt = s.now()
	a.ID = newID("acct_", a.CreatedAt)
	row := fromAccount(a)
	if err := s.w.WithContext(ctx).Create(&row).Error; err != nil {
		return domain.Account{}, wrap("create account", err)
	}
	return toAccount(row), nil
}

// UpdateAccount applies c to the account called name and returns the result.
// It returns ErrNotFound for an unknown account and ErrInvalid for a bad value.
func (s Accounts) UpdateAccount(ctx context.Context, name string, c domain.AccountChanges) (domain.Account, error) {
	var out domain.Account
	err := s.write(ctx, "update account", func(tx *gorm.DB) error {
		var row accountRow
		err := forUpdate(tx).Take(&row, "name = ?", name).Error
		if err != nil {
			return err
		}
		a := applyAccountChanges(toAccount(row), c)
		if err := validateAccount(a); err != nil {
			return err
		}
		err = tx.Model(&accountRow{}).Where("id = ?", a.ID).Updates(map[string]any{
			"tier": string(a.Tier), "rpm": a.RPM,
			"endpoint_multiplier": a.EndpointMultiplier, "agent_quota": a.AgentQuota,
			"monthly_budget_micros": a.MonthlyBudgetMicros,
		}).Error
		out = a
		return err
	})
	s.auth.dropAccount(ctext(out.ID))
	if err != nil {
		return domain.Account{}, err
	}
	return out, nil
}

// applyAccountChanges returns a with the non-nil members of c applied.
func applyAccountChanges(a domain.Account, c domain.AccountChanges) domain.Account {
	if c.Tier != nil {
		a.Tier = *c.Tier
	}
	if c.RPM != nil {
		a.RPM = *c.RPM
	}
	if c.EndpointMultiplier != nil {
		a.EndpointMultiplier = *c.EndpointMultiplier
	}
	if c.AgentQuota != nil {
		a.AgentQuota = *c.AgentQuota
	}
	if c.MonthlyBudgetMicros != nil {
		a.MonthlyBudgetMicros = *c.MonthlyBudgetMicros
	}
	return a
}

// validateAccount checks the invariants of an account.
func validateAccount(a domain.Account) error {
	switch {
	case a.Name == "":
		return invalidf("account name is empty")
	case !a.Tier.Valid():
		return invalidf("unknown tier %q", a.Tier)
	case a.RPM < 0, a.EndpointMultiplier < 0, a.AgentQuota < 0, a.MonthlyBudgetMicros < 0:
		return invalidf("rpm, endpoint multiplier, agent quota and monthly budget must not be negative")
	}
	return nil
}

// ListAccounts returns every account, ordered by name.
func (s Accounts) ListAccounts(ctx context.Context) ([]domain.Account, error) {
	var rows []accountRow
	if err := s.read(ctx).Order("name, id").Find(&rows).Error; err != nil {
		return nil, wrap("list accounts", err)
	}
	out := make([]domain.Account, len(rows))
	for i, r := range rows {
		out[i] = toAccount(r)
	}
	return out, nil
}

// AccountByName returns the account called name, or ErrNotFound.
func (s Accounts) AccountByName(ctx context.Context, name string) (domain.Account, error) {
	var row accountRow
	if err := s.read(ctx).Take(&row, "name = ?", name).Error; err != nil {
		return domain.Account{}, wrap("account by name", err)
	}
	return toAccount(row), nil
}

// CountAccounts returns how many accounts exist.
func (s Accounts) CountAccounts(ctx context.Context) (int64, error) {
	var n int64
	if err := s.read(ctx).Model(&accountRow{}).Count(&n).Error; err != nil {
		return 0, wrap("count accounts", err)
	}
	return n, nil
}

func fromAccount(a domain.Account) accountRow {
	return accountRow{
		ID: ctext(a.ID), Name: ctext(a.Name), Tier: string(a.Tier), RPM: a.RPM,
		EndpointMultiplier: a.EndpointMultiplier, AgentQuota: a.AgentQuota, MonthlyBudgetMicros: a.MonthlyBudgetMicros,
		CreatedAt: a.CreatedAt,
	}
}

func toAccount(r accountRow) domain.Account {
	return domain.Account{
		ID: string(r.ID), Name: string(r.Name), Tier: domain.Tier(r.Tier), RPM: r.RPM,
		EndpointMultiplier: r.EndpointMultiplier, AgentQuota: r.AgentQuota, MonthlyBudgetMicros: r.MonthlyBudgetMicros,
		CreatedAt: utc(r.CreatedAt),
	}
}
