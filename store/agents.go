package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/domain"

	"gorm.io/gorm"
)

// CreateAgent stores a new agent of a.AccountID with a.Fields and returns it
// with ID, Status active and CreatedAt = UpdatedAt = now. The other members
// of a are ignored. The quota is enforced atomically: the account's agent
// counter is bumped, only while under quota, by one conditional UPDATE in
// the transaction that inserts the agent, so concurrent creates never
// exceed it; a negative quota disables the check. The UPDATE comes last,
// so the account row is held (by concurrent creates' waits) only from it
// to the commit. It returns ErrQuotaExceeded (an
// *Error with Quota and Used) when the account has quota agents already,
// ErrNotFound for an unknown account and ErrInvalid for bad fields (naming
// the field for SecretMask sent as a secret's value: there is no stored
// value to keep).
// Secrets are stored encrypted when a key is configured (see Secrets). It
// emits agent.created in the same transaction.
func (s Agents) CreateAgent(ctx context.Context, a domain.Agent, quota int) (domain.Agent, error) {
	fields, err := canonicalFields(a.Fields)
	if err != nil {
		return domain.Agent{}, wrap("create agent", err)
	}
	if err := resolveSecrets(fields, nil); err != nil {
		return domain.Agent{}, wrap("create agent", err)
	}
	t := s.now()
	row := agentRow{
		ID: ctext(newID("agent_", t)), AccountID: ctext(a.AccountID), Status: ctext(domain.StatusActive),
		CreatedAt: t, UpdatedAt: t, Version: 1,
	}
	if fields, err = s.sealAll(fields, string(row.ID)); err != nil {
		return domain.Agent{}, wrap("create agent", err)
	}
	if err := setFields(&row, fields); err != nil {
		return domain.Agent{}, wrap("create agent", err)
	}
	if err := renderRow(&row, fields); err != nil {
		return domain.Agent{}, wrap("create agent", err)
	}
	out := toAgentFields(row, fields)
	err = s.writeEventsVia(s.writeGrouped, ctx, "create agent", func(tx *gorm.DB, emit emitFunc) error {
		if err := tx.Exec(insertAgentSQL, row.values()...).Error; errors.Is(err, gorm.ErrForeignKeyViolated) {
			return domain.ErrNotFound // the account is gone
		} else if err != nil {
			return err
		}
		hooks, err := takeAgentSlot(tx, a.AccountID, quota)
		if err != nil {
			return err
		}
		if hooks == 0 {
			// No webhook to deliver to: no need to look for one. The
			// count was read under the account row's lock, which creating
			// a webhook takes too, so it is this transaction's truth.
			return nil
		}
		return emit(domain.Event{AccountID: a.AccountID, AgentID: out.ID, Type: domain.EventAgentCreated, Data: agentEvent{Agent: summaryOf(out)}})
	})
	if err != nil {
		return domain.Agent{}, err
	}
	return out, nil
}

// insertAgentSQL inserts an agent, its columns as agentRow.values gives
// them. Written out: GORM's Create built it from the row type on every
// Create, in the writer's transaction.
const insertAgentSQL = `INSERT INTO agents (id, account_id, name, model_provider, model, delete_protection, status,
	status_reason, retry_at, fields, clients, created_at, updated_at, total_messages, total_conversations,
	error_since, error_millis, version, document, document_rev, knowledge_docs)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// values are r's columns in insertAgentSQL's order.
func (r *agentRow) values() []any {
	return []any{r.ID, r.AccountID, r.Name, r.ModelProvider, r.Model, r.DeleteProtection, r.Status,
		r.StatusReason, r.RetryAt, r.Fields, r.Clients, r.CreatedAt, r.UpdatedAt, r.TotalMessages, r.TotalConversations,
		r.ErrorSince, r.ErrorMillis, r.Version, r.Document, r.DocumentRev, r.KnowledgeDocs}
}

// takeAgentSlotSQL counts one agent more on an account under its quota
// (the second and third arguments; a negative one has no bound) and
// returns its webhook count.
const takeAgentSlotSQL = `UPDATE accounts SET agent_count = agent_count + 1, agent_set_version = agent_set_version + 1
	WHERE id = ? AND (? < 0 OR agent_count < ?) RETURNING webhook_count`

// takeAgentSlot counts one agent more on the account, as countAgents
// does, unless it has quota agents already (a negative quota has no
// bound), and returns its webhook count, read under the row lock the
// update takes. An account at its quota is an ErrQuotaExceeded *Error.
func takeAgentSlot(tx *gorm.DB, accountID string, quota int) (webhooks int64, err error) {
	err = tx.Raw(takeAgentSlotSQL, accountID, quota, quota).Row().Scan(&webhooks)
	if !errors.Is(err, sql.ErrNoRows) {
		return webhooks, err
	}
	var acct accountRow
	if err := tx.Select("agent_count").Take(&acct, "id = ?", accountID).Error; err != nil {
		return 0, err
	}
	return 0, quotaError("agent", quota, int(acct.AgentCount))
}

// countAgents adds delta to the account's agent count and moves the
// version of its set of agents, under which List keeps where its pages
// start.
func countAgents(tx *gorm.DB, accountID string, delta int) error {
	return tx.Model(&accountRow{}).Where("id = ?", accountID).UpdateColumns(map[string]any{
		"agent_count":       gorm.Expr("agent_count + ?", delta),
		"agent_set_version": gorm.Expr("agent_set_version + 1"),
	}).Error
}

// countOnAccount adds delta to a counter column of the account
// (webhook_count).
func countOnAccount(tx *gorm.DB, accountID, column string, delta int) error {
	return tx.Model(&accountRow{}).Where("id = ?", accountID).
		UpdateColumn(column, gorm.Expr(column+" + ?", delta)).Error
}

// GetAgent returns the agent id of account accountID with its Metrics. An
// agent of another account is ErrNotFound, like a missing one.
func (s Agents) GetAgent(ctx context.Context, accountID, id string) (domain.Agent, error) {
	var row agentRow
	// The rendered document is Get's (GetAgentDocument): a turn needs the
	// fields alone.
	if err := s.read(ctx).Omit("document").Take(&row, "id = ? AND account_id = ?", id, accountID).Error; err != nil {
		return domain.Agent{}, wrap("get agent", err)
	}
	a, err := toAgent(row)
	if err != nil {
		return domain.Agent{}, wrap("get agent", err)
	}
	a.Metrics = metricsOf(row, s.now())
	return a, nil
}

// DeleteAgent deletes the agent id of account accountID and, in the same
// transaction, its conversations and messages; it returns the agent as it
// was. A protected agent is not deleted: the error is ErrDeleteProtected and
// the agent is returned with it. A missing agent or another account's is
// ErrNotFound. It emits agent.deleted in the same transaction. It returns
// domain.ErrPreconditionFailed when ifVersion is neither domain.AnyVersion
// nor the agent's version.
func (s Agents) DeleteAgent(ctx context.Context, accountID, id string, ifVersion int64) (domain.Agent, error) {
	var out domain.Agent
	err := s.writeEvents(ctx, "delete agent", func(tx *gorm.DB, emit emitFunc) error {
		row, err := lockAgent(tx, "id = ? AND account_id = ?", id, accountID)
		if err != nil {
			return err
		}
		if err := checkVersion(row.Version, ifVersion); err != nil {
			return err
		}
		if out, err = toAgent(row); err != nil {
			return err
		}
		if row.DeleteProtection {
			return domain.ErrDeleteProtected
		}
		if err := deleteAgentRows(tx, id); err != nil {
			return err
		}
		if err := countAgents(tx, accountID, -1); err != nil {
			return err
		}
		// The agent's last event: with it gone, nothing can emit another.
		return emit(domain.Event{AccountID: accountID, AgentID: id, Type: domain.EventAgentDeleted, Data: agentIDEvent{AgentID: id}})
	})
	return out, err
}

// deleteAgentRows deletes an agent, its conversations, their messages, its
// A2A tasks, its analytics and its platform connections (so their runners lose their
// leases). The foreign keys cascade the conversations' rows too; deleting
// explicitly does not depend on it.
func deleteAgentRows(tx *gorm.DB, id string) error {
	convs := tx.Model(&conversationRow{}).Select("id").Where("agent_id = ?", id)
	if err := tx.Where("conversation_id IN (?)", convs).Delete(&messageRow{}).Error; err != nil {
		return err
	}
	if err := deleteMessageEvents(tx, "agent_id = ?", id); err != nil {
		return err
	}
	owned := append(append([]any{&conversationUserRow{}, &conversationRow{}, &a2aTaskRow{}}, analyticsModels()...), connectionModels()...)
	for _, model := range owned {
		if err := tx.Where("agent_id = ?", id).Delete(model).Error; err != nil {
			return err
		}
	}
	return tx.Where("id = ?", id).Delete(&agentRow{}).Error
}

// lockAgent reads one agent row inside a transaction, locking it on
// PostgreSQL (SQLite's writer is exclusive already).
func lockAgent(tx *gorm.DB, where string, args ...any) (agentRow, error) {
	var row agentRow
	err := forUpdate(tx).Where(where, args...).Take(&row).Error
	return row, err
}

// metricsOf computes an agent's metrics at t.
func metricsOf(r agentRow, t time.Time) domain.Metrics {
	return domain.Metrics{
		TotalMessages:      r.TotalMessages,
		TotalConversations: r.TotalConversations,
		Uptime:             uptime(r, t),
	}
}

// uptime is the percentage of the agent's lifetime up to t not spent in
// error: closed error periods plus the open one, if any. A lifetime of zero
// is 100.
func uptime(r agentRow, t time.Time) float64 {
	life := t.Sub(r.CreatedAt).Milliseconds()
	if life <= 0 {
		return 100
	}
	down := r.ErrorMillis
	if r.ErrorSince != nil {
		down += max(0, t.Sub(*r.ErrorSince).Milliseconds())
	}
	pct := 100 * float64(life-down) / float64(life)
	return min(100, max(0, pct))
}

// toAgent converts a row, decoding its fields.
func toAgent(r agentRow) (domain.Agent, error) {
	fields, err := decodeFields(r.Fields)
	if err != nil {
		return domain.Agent{}, err
	}
	return toAgentFields(r, fields), nil
}

// toAgentFields converts a row whose fields are already decoded.
func toAgentFields(r agentRow, fields map[string]json.RawMessage) domain.Agent {
	a := domain.Agent{
		ID: string(r.ID), AccountID: string(r.AccountID), Name: string(r.Name),
		ModelProvider: r.ModelProvider, Model: r.Model, DeleteProtection: r.DeleteProtection,
		Status: domain.Status(r.Status), StatusReason: r.StatusReason, Fields: fields,
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt), Version: r.Version, KnowledgeDocs: r.KnowledgeDocs,
	}
	if r.RetryAt != nil {
		a.RetryAt = r.RetryAt.UTC()
	}
	return a
}

// AgentVersionsChangedSince returns the ids, versions and clients of up to
// limit agents whose configuration changed at or after since (UpdatedAt;
// created agents included), in no account in particular, ordered by
// UpdatedAt then ID and following after (the last agent of the page
// before; the zero AgentVersion for the first page); a zero since pages
// through every agent. It serves the connection supervisor, which needs
// all accounts. The (updated_at, id) index makes a page cost the agents
// it holds, not the service's.
func (s Agents) AgentVersionsChangedSince(ctx context.Context, since time.Time, after domain.AgentVersion, limit int) ([]domain.AgentVersion, error) {
	from, id := since.UTC(), ""
	if after.ID != "" {
		from, id = after.UpdatedAt.UTC(), after.ID
	}
	var out []domain.AgentVersion
	err := s.read(ctx).Model(&agentRow{}).Select("id", "version", "clients", "updated_at").
		Where("(updated_at, id) > (?, ?)", from, id).
		Order("updated_at").Order("id").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, wrap("agent versions changed since", err)
	}
	return out, nil
}

// AgentsByID returns the agents of ids that still exist, in no account in
// particular, ordered by id.
func (s Agents) AgentsByID(ctx context.Context, ids []string) ([]domain.Agent, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []agentRow
	// An Agent has no use for the rendered Get document, as large as the
	// fields: a full resync reads every agent.
	if err := s.read(ctx).Omit("document").Where("id IN ?", ids).Order("id").Find(&rows).Error; err != nil {
		return nil, wrap("agents by id", err)
	}
	out := make([]domain.Agent, 0, len(rows))
	for _, r := range rows {
		a, err := toAgent(r)
		if err != nil {
			return nil, wrap("agents by id", err)
		}
		out = append(out, a)
	}
	return out, nil
}
