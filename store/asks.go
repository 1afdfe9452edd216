package store

import (
	"context"
	"encoding/json"

	"github.com/agentd/agentd/domain"
)

// AskChain is the agents of the chain of asks that led to run id: the
// run's agent first, then the agent of each run that asked it
// (parent_run_id), up to maxAskChain of them; and the runs on other
// servers that led to the first of them (its input's askDepth). A run
// nobody asked is a chain of one.
func (s Runs) AskChain(ctx context.Context, id string) ([]string, int, error) {
	db := s.read(ctx)
	var chain []string
	var row struct{ AgentID, ParentRunID, Input string }
	for range maxAskChain {
		row.AgentID, row.ParentRunID, row.Input = "", "", ""
		if err := db.Raw(`SELECT agent_id, parent_run_id, input FROM runs WHERE id = ?`, id).Scan(&row).Error; err != nil {
			return nil, 0, wrap("ask chain", err)
		}
		if row.AgentID == "" { // no such run: the chain ends
			break
		}
		chain = append(chain, row.AgentID)
		if row.ParentRunID == "" {
			break
		}
		id = row.ParentRunID
	}
	var first domain.RunInput
	_ = json.Unmarshal([]byte(row.Input), &first) // written by fromRun; "" for none
	return chain, first.AskDepth, nil
}

// ChildRuns are the runs run id of the account asked (their parent_run_id
// is id), oldest first.
func (s Runs) ChildRuns(ctx context.Context, accountID, id string) ([]domain.Run, error) {
	var rows []runRow
	err := s.read(ctx).Where("account_id = ? AND parent_run_id = ?", accountID, id).
		Order("created_at").Order("id").Find(&rows).Error
	if err != nil {
		return nil, wrap("child runs", err)
	}
	out := make([]domain.Run, len(rows))
	for i, r := range rows {
		out[i] = toRun(r)
	}
	return out, nil
}
