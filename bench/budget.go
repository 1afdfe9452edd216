package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store"
)

// The budget check's measure: Send Message at one connection to an agent
// held by no budget and to one held by all four (its daily, monthly and
// per-user daily ones, and its account's monthly one), in alternating
// rounds so drift on a shared machine falls on both alike.
const (
	budgetRounds   = 5
	budgetPerRound = 200
	budgetUsers    = 20
)

// budgetRun is what the measure found: each send's time, per agent.
type budgetRun struct {
	free, held []time.Duration
}

// seedBudgeted adds to the database dsn an account whose monthly budget
// is set, with an agent held by every budget of its own (none reached),
// and returns the account's key and the agent's id.
func seedBudgeted(ctx context.Context, dsn string) (string, string, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return "", "", err
	}
	defer st.Close()
	_, err = st.Accounts().CreateAccount(ctx, domain.Account{Name: "budgeted", Tier: domain.TierEnterprise, RPM: 1_000_000_000,
		EndpointMultiplier: 100_000_000, AgentQuota: 10, MonthlyBudgetMicros: 1_000_000 * 1_000_000})
	if err != nil {
		return "", "", err
	}
	key, k, err := st.Accounts().CreateKey(ctx, "budgeted", domain.ScopeWrite, nil)
	if err != nil {
		return "", "", err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(agentBody, &fields); err != nil {
		return "", "", err
	}
	fields["settings"] = json.RawMessage(`{"budget":{"daily":1000000,"monthly":1000000,"perUserDaily":1000000}}`)
	a, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: k.AccountID, Fields: fields}, -1)
	return key, a.ID, err
}

// measureBudget sends budgetRounds rounds of budgetPerRound messages to
// free, then to held, one at a time, from budgetUsers users in turn.
func measureBudget(ctx context.Context, free, held runsClient) (budgetRun, error) {
	var r budgetRun
	send := func(c runsClient, into *[]time.Duration) error {
		for i := range budgetPerRound {
			began := time.Now()
			var reply struct{ Response string }
			err := c.call(ctx, "POST", "/messages", map[string]any{"text": "hello", "userId": fmt.Sprint("budget-", i%budgetUsers)},
				http.StatusOK, &reply)
			if err != nil {
				return err
			}
			*into = append(*into, time.Since(began))
		}
		return nil
	}
	for range budgetRounds {
		if err := send(free, &r.free); err != nil {
			return r, err
		}
		if err := send(held, &r.held); err != nil {
			return r, err
		}
	}
	return r, nil
}

// budgetSection is the measure's part of the runs section.
func budgetSection(r budgetRun) string {
	if len(r.free) == 0 || len(r.held) == 0 {
		return ""
	}
	p50 := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n**Budget check**: Send Message at 1 connection, %d rounds of %d messages from %d users to an agent "+
		"held by no budget, then to one held by all four (daily, monthly, per-user daily, and its account's monthly), "+
		"none reached. The difference of the p50s is the check's cost (target ≤ 0.1 ms).\n\n", budgetRounds, budgetPerRound, budgetUsers)
	free, held := p50(r.free), p50(r.held)
	b.WriteString("| no budget p50 | every budget p50 | the check |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| %s | %s | %.3fms |\n", ms(free), ms(held), float64((held-free).Microseconds())/1000)
	return b.String()
}
