package store

import (
	"context"
	"encoding/json"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// sortColumns maps sort fields to columns; each is the second column of an
// (account_id, column, id) index, so a page is an index range scan.
var sortColumns = map[domain.SortField]string{
	domain.SortCreatedAt: "created_at",
	domain.SortName:      "name",
	domain.SortStatus:    "status",
}

// summaryColumns are the columns ListAgents reads: a summary never needs
// the agent's whole Fields document.
var summaryColumns = []string{
	"id", "account_id", "name", "model_provider", "model", "delete_protection",
	"status", "status_reason", "retry_at", "clients", "created_at", "updated_at",
}

// ListAgents returns one page of the agents of account accountID and the
// number of agents matching q.Status. The agents are summaries: Fields holds
// only "clients" (when set) and Metrics are zero; GetAgent has the rest.
// Ties in the sort column are broken by id in the same direction. A page
// past the end is empty, not an error. An unknown SortBy is ErrInvalid.
func (s Agents) ListAgents(ctx context.Context, accountID string, q domain.ListQuery) ([]domain.Agent, int64, error) {
	q = normalizeListQuery(q)
	col, ok := sortColumns[q.SortBy]
	if !ok {
		return nil, 0, wrap("list agents", invalidf("unknown sort field %q", q.SortBy))
	}
	db := s.read(ctx).Model(&agentRow{}).Where("account_id = ?", accountID)
	if q.Status != "" {
		db = db.Where("status = ?", string(q.Status))
	}
	db = db.Session(&gorm.Session{}) // reusable: the count and the page each clone it
	total, setVersion, err := s.countListed(ctx, db, accountID, q)
	if err != nil {
		return nil, 0, wrap("list agents", err)
	}
	if _, _, past := pageBounds(q.Page, q.Limit, total); past {
		return []domain.Agent{}, total, nil
	}
	rows, err := s.listPage(db, col, accountID, q, setVersion)
	if err != nil {
		return nil, 0, wrap("list agents", err)
	}
	agents := make([]domain.Agent, len(rows))
	for i, r := range rows {
		fields := map[string]json.RawMessage{}
		if r.Clients != "" {
			fields["clients"] = json.RawMessage(r.Clients)
		}
		agents[i] = toAgentFields(r, fields)
	}
	return agents, total, nil
}

// listPage reads the rows of page q ordered by col. The default listing
// (every status, by createdAt) starts from the page's first agent when
// pageStarts knows it, and reads one agent more to leave the next page's
// start there.
func (s *core) listPage(db *gorm.DB, col, accountID string, q domain.ListQuery, setVersion int64) ([]agentRow, error) {
	dir, from := " ASC", ">="
	if q.Desc {
		dir, from = " DESC", "<="
	}
	offset := (q.Page - 1) * q.Limit
	page := db.Select(summaryColumns).Order(col + dir).Order("id" + dir)
	starts := q.Status == "" && q.SortBy == domain.SortCreatedAt
	if !starts {
		var rows []agentRow
		err := page.Offset(offset).Limit(q.Limit).Find(&rows).Error
		return rows, err
	}
	key := pageKey{accountID, q.Desc, offset}
	start, known := s.starts.get(key, setVersion)
	if known {
		page = page.Where("(created_at, id) "+from+" (?, ?)", start.createdAt, start.id)
	} else {
		page = page.Offset(offset)
	}
	rows := make([]agentRow, 0, q.Limit+1)
	if err := page.Limit(q.Limit + 1).Find(&rows).Error; err != nil {
		return nil, err
	}
	if !known && offset > 0 && len(rows) > 0 {
		s.starts.put(key, startAt(setVersion, rows[0]))
	}
	if len(rows) > q.Limit {
		s.starts.put(pageKey{accountID, q.Desc, offset + q.Limit}, startAt(setVersion, rows[q.Limit]))
		rows = rows[:q.Limit]
	}
	return rows, nil
}

// countListed returns how many agents match q and the version of the
// account's set of agents: the account's agent counter when every status
// is listed (one primary-key read), else a count over the (account_id,
// status) index (and no version: only the default listing uses it).
func (s *core) countListed(ctx context.Context, filtered *gorm.DB, accountID string, q domain.ListQuery) (int64, int64, error) {
	var total int64
	if q.Status != "" {
		err := filtered.Count(&total).Error
		return total, 0, err
	}
	var acct accountRow
	if err := s.read(ctx).Select("agent_count", "agent_set_version").Take(&acct, "id = ?", accountID).Error; err != nil {
		if isNotFound(err) {
			return 0, 0, nil // an unknown account has no agents, as the count said
		}
		return 0, 0, err
	}
	return acct.AgentCount, acct.AgentSetVersion, nil
}

// normalizeListQuery applies the defaults of ListQuery.
func normalizeListQuery(q domain.ListQuery) domain.ListQuery {
	if q.Page < 1 {
		q.Page = 1
	}
	if q.Limit < 1 {
		q.Limit = domain.DefaultPageLimit
	}
	if q.SortBy == "" {
		q.SortBy = domain.SortCreatedAt
	}
	return q
}
