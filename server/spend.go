package server

import (
	"context"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/price"
	"github.com/oapi-codegen/nullable"
)

// GetAgentSpend answers what the agent spent this UTC day and month
// against its budgets, as the database has it now.
func (s *Server) GetAgentSpend(ctx context.Context, req gen.GetAgentSpendRequestObject) (gen.GetAgentSpendResponseObject, error) {
	acct := principalFrom(ctx).Account.ID
	a, err := s.cfg.Store.Agents.GetAgent(ctx, acct, req.AgentId)
	if err != nil {
		return nil, err
	}
	sp, err := s.cfg.Store.Analytics.AgentSpend(ctx, acct, a.ID)
	if err != nil {
		return nil, err
	}
	b := a.Budget()
	return gen.GetAgentSpend200JSONResponse{Body: gen.AgentSpendEnvelope{Success: true, Data: gen.AgentSpend{
		Day:          gen.SpendWindow{SpentUsd: price.USD(sp.DayMicros), LimitUsd: nullUSD(b.Daily), ResetsAt: timestamp(sp.DayResetsAt)},
		Month:        gen.SpendWindow{SpentUsd: price.USD(sp.MonthMicros), LimitUsd: nullUSD(b.Monthly), ResetsAt: timestamp(sp.MonthResetsAt)},
		PerUserDaily: gen.SpendLimit{LimitUsd: nullUSD(b.PerUserDaily)},
	}}}, nil
}

// GetAccount answers the caller's account: its tier, limits and monthly
// budget with this month's spend.
func (s *Server) GetAccount(ctx context.Context, _ gen.GetAccountRequestObject) (gen.GetAccountResponseObject, error) {
	a := principalFrom(ctx).Account
	sp, err := s.cfg.Store.Analytics.AccountSpend(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	l := a.Limits()
	var monthly *float64
	if a.MonthlyBudgetMicros > 0 {
		monthly = new(price.USD(a.MonthlyBudgetMicros))
	}
	budget := gen.AccountBudget{Monthly: nullUSD(monthly), Spent: price.USD(sp.MonthMicros), ResetsAt: timestamp(sp.MonthResetsAt)}
	return gen.GetAccount200JSONResponse{Body: gen.AccountEnvelope{Success: true, Data: gen.Account{
		Id: a.ID, Name: a.Name, Tier: gen.AccountTier(a.Tier), Budget: budget,
		Limits: gen.AccountLimits{Tier: gen.AccountTier(a.Tier), Rpm: int(l.RPM), EndpointMultiplier: int(l.EndpointMultiplier),
			AgentQuota: a.AgentQuota},
	}}}, nil
}

// nullUSD is a budget as the contract shows it: null when unset.
func nullUSD(usd *float64) nullable.Nullable[float64] {
	if usd == nil {
		return nullable.NewNullNullable[float64]()
	}
	return nullable.NewNullableWithValue(*usd)
}
