package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// UpdateAgent replaces each member of fields whole in the agent id of
// account accountID (fields are canonicalized again, so key order and
// spacing never count as a change) and sets its status when status is not
// nil. It compares each member with the one stored at the version it read,
// writes only if the agent is still at that version (else it starts over),
// and returns, sorted, the names of the members whose value actually
// changed, "status" included. UpdatedAt moves only when something changed.
// Leaving error (for example status active) clears the reason and RetryAt
// and closes the error period counted against uptime. A "status" member of
// fields is ignored.
//
// Secrets (settings.secrets) are compared by value, decrypted, and stored
// encrypted when a key is configured; a secret sent as SecretMask keeps the
// value stored at the version written over, so a concurrent update cannot
// lose it. A write also encrypts the secrets stored before the key was set.
//
// With ifVersion other than AnyVersion it changes nothing and returns
// ErrPreconditionFailed unless that is the agent's version; a change moves
// the version.
//
// It returns ErrNotFound for a missing agent or another account's,
// ErrInvalid for bad fields or an unknown status, and an ErrInvalid naming the field
// (matching ErrInvalid) for the mask sent for a secret that is not stored,
// and domain.ErrSecretUnreadable when a stored secret does not decrypt
// under the configured key (secrets are compared decrypted).
func (s Agents) UpdateAgent(ctx context.Context, accountID, id string, fields map[string]json.RawMessage, status *domain.Status, ifVersion int64) (domain.Agent, []string, error) {
	in, err := canonicalFields(fields)
	if err != nil {
		return domain.Agent{}, nil, wrap("update agent", err)
	}
	if status != nil && !status.Valid() {
		return domain.Agent{}, nil, wrap("update agent", invalidf("unknown status %q", *status))
	}
	u := agentUpdate{s: s.core, accountID: accountID, id: id, in: in, status: status, ifVersion: ifVersion}
	for range optimisticUpdates {
		if err := u.plan(s.read(ctx), false); err != nil || !u.write {
			return u.result(wrap("update agent", err))
		}
		err := s.writeEventsVia(s.writeGrouped, ctx, "update agent", u.save)
		if !errors.Is(err, errVersionMoved) {
			return u.result(err)
		}
	}
	// The agent kept changing between the read and the write: this time
	// read it under the write's lock.
	return u.result(s.writeEvents(ctx, "update agent", func(tx *gorm.DB, emit emitFunc) error {
		if err := u.plan(tx, true); err != nil || !u.write {
			return err
		}
		return u.save(tx, emit)
	}))
}

// optimisticUpdates bounds how often UpdateAgent reads the agent outside
// the write transaction before it reads it under the write's lock.
const optimisticUpdates = 3

// errVersionMoved says the agent changed after an update read it.
var errVersionMoved = errors.New("the agent changed while it was being updated")

// agentUpdate is one UpdateAgent. plan reads the agent and works out the
// new row outside the write transaction; save writes it only if the
// agent's version is still the one read (errVersionMoved otherwise). The
// single SQLite writer, and PostgreSQL's row lock, are held for one UPDATE,
// not for decoding, merging and rendering.
type agentUpdate struct {
	s         *core
	accountID string
	id        string
	in        map[string]json.RawMessage
	status    *domain.Status
	ifVersion int64

	row     agentRow // the agent as it will be
	before  agentRow // the agent as read
	read    int64    // its version when read
	stored  map[string]json.RawMessage
	changes []string
	write   bool
}

// planAgentSQL reads what an update works from: every column of the
// agent but its document, which the update renders again. Written out:
// GORM built it, and scanned the row by reflection, on every update.
const planAgentSQL = `SELECT id, account_id, name, model_provider, model, delete_protection, status, status_reason,
	retry_at, fields, clients, created_at, updated_at, total_messages, total_conversations, error_since,
	error_millis, version, document_rev, knowledge_docs FROM agents WHERE id = ? AND account_id = ?`

// planColumns are where planAgentSQL's columns go in r.
func (r *agentRow) planColumns() []any {
	return []any{&r.ID, &r.AccountID, &r.Name, &r.ModelProvider, &r.Model, &r.DeleteProtection, &r.Status,
		&r.StatusReason, &r.RetryAt, &r.Fields, &r.Clients, &r.CreatedAt, &r.UpdatedAt, &r.TotalMessages,
		&r.TotalConversations, &r.ErrorSince, &r.ErrorMillis, &r.Version, &r.DocumentRev, &r.KnowledgeDocs}
}

// plan reads the agent through db, locking its row when lock (on
// PostgreSQL; SQLite's writer is exclusive already), and works out the
// update.
func (u *agentUpdate) plan(db *gorm.DB, lock bool) error {
	query := planAgentSQL
	if lock && u.s.postgres {
		query += " FOR UPDATE"
	}
	u.row = agentRow{}
	err := db.Raw(query, u.id, u.accountID).Row().Scan(u.row.planColumns()...)
	if errors.Is(err, sql.ErrNoRows) {
		return gorm.ErrRecordNotFound
	}
	if err != nil {
		return err
	}
	if err := checkVersion(u.row.Version, u.ifVersion); err != nil {
		return err
	}
	u.before, u.read = u.row, u.row.Version
	u.stored, u.changes, u.write, err = u.s.mergeUpdate(&u.row, u.in, u.status)
	return err
}

// save writes the planned row unless the agent moved since it was read.
func (u *agentUpdate) save(tx *gorm.DB, emit emitFunc) error {
	set, args := updatedColumns(&u.row, &u.before)
	res := tx.Exec("UPDATE agents SET "+set+" WHERE id = ? AND version = ?", append(args, u.id, u.read)...)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return errVersionMoved
	}
	return emitUpdate(emit, toAgentFields(u.row, u.stored), domain.Status(u.before.Status), u.changes)
}

// result is what UpdateAgent returns once the update ended with err.
func (u *agentUpdate) result(err error) (domain.Agent, []string, error) {
	if err != nil {
		return domain.Agent{}, nil, err
	}
	return toAgentFields(u.row, u.stored), u.changes, nil
}

// mergeUpdate applies in and status to row and returns its fields as
// stored (secrets sealed), the names of what changed, sorted, and whether
// row must be written: something changed, or secrets stored before the key
// was set are to be sealed now.
func (s *core) mergeUpdate(row *agentRow, in map[string]json.RawMessage, status *domain.Status) (map[string]json.RawMessage, []string, bool, error) {
	stored, err := decodeFields(row.Fields)
	if err != nil {
		return nil, nil, false, err
	}
	view, err := s.openView(stored, string(row.ID))
	if err != nil {
		return nil, nil, false, err
	}
	if err := resolveSecrets(in, view); err != nil {
		return nil, nil, false, err
	}
	changes := append([]string{}, mergeFields(view, in)...)
	t := s.now()
	if status != nil && transition(row, *status, t) {
		changes = append(changes, "status")
	}
	sort.Strings(changes)
	if len(changes) == 0 && !s.hasPlainSecrets(stored) {
		return stored, changes, false, nil
	}
	if len(changes) > 0 {
		row.UpdatedAt, row.Version = t, row.Version+1
	}
	if stored, err = s.sealAll(view, string(row.ID)); err != nil {
		return nil, nil, false, err
	}
	if err := setFields(row, stored); err != nil {
		return nil, nil, false, err
	}
	return stored, changes, true, renderRow(row, stored)
}

// emitUpdate emits agent.updated when something changed, and
// agent.status_changed too when the status did.
func emitUpdate(emit emitFunc, a domain.Agent, from domain.Status, changes []string) error {
	if len(changes) == 0 {
		return nil
	}
	err := emit(domain.Event{AccountID: a.AccountID, AgentID: a.ID, Type: domain.EventAgentUpdated,
		Data: agentEvent{Agent: summaryOf(a), Changes: changes}})
	if err != nil || from == a.Status {
		return err
	}
	return emit(statusChanged(a.AccountID, a.ID, from, a.Status, a.StatusReason))
}

// MarkAgentError puts an active agent, or one already in error, into error
// with reason and the end of its cool-down, in one conditional update: an
// agent made inactive meanwhile stays inactive. Entering error opens an
// error period; an agent already in error keeps its period and gets the new
// reason and retryAt. UpdatedAt does not move: it tracks configuration
// changes. It returns the agent's status afterwards, and ErrNotFound for a
// missing agent or one of another account. Entering error emits
// agent.status_changed in the same transaction.
func (s Agents) MarkAgentError(ctx context.Context, accountID, agentID, reason string, retryAt time.Time) (domain.Status, error) {
	var retry *time.Time
	if !retryAt.IsZero() {
		retry = msPtr(&retryAt)
	}
	status := domain.StatusError
	err := s.writeEvents(ctx, "mark agent error", func(tx *gorm.DB, emit emitFunc) error {
		row, err := lockAgent(tx, "id = ? AND account_id = ?", agentID, accountID)
		if err != nil {
			return err
		}
		if domain.Status(row.Status) == domain.StatusInactive {
			status = domain.StatusInactive
			return nil
		}
		doc, err := errorDocument(row, reason)
		if err != nil {
			return err
		}
		res := tx.Model(&agentRow{}).
			Where("id = ? AND account_id = ? AND status IN ?", agentID, accountID, []string{string(domain.StatusActive), string(domain.StatusError)}).
			Updates(map[string]any{
				"status":        domain.StatusError,
				"status_reason": reason,
				"retry_at":      retry,
				// SET expressions see the row as it was: an open period stays open.
				"error_since": gorm.Expr("CASE WHEN status = ? THEN error_since ELSE ? END", domain.StatusError, s.now()),
				// Get shows the status and its reason, not the cool-down.
				"version":      gorm.Expr("CASE WHEN status = ? AND status_reason = ? THEN version ELSE version + 1 END", domain.StatusError, reason),
				"document":     doc.Document,
				"document_rev": doc.DocumentRev,
			})
		if res.Error != nil || domain.Status(row.Status) == domain.StatusError {
			return res.Error
		}
		return emit(statusChanged(accountID, agentID, domain.Status(row.Status), domain.StatusError, reason))
	})
	return status, err
}

// MarkAgentRecovered returns an agent in error to active, closing its error
// period and emitting agent.status_changed. It does nothing to an agent in
// another state. It returns ErrNotFound for a missing agent or one of
// another account.
func (s Agents) MarkAgentRecovered(ctx context.Context, accountID, agentID string) error {
	return s.writeEvents(ctx, "mark agent recovered", func(tx *gorm.DB, emit emitFunc) error {
		row, err := lockAgent(tx, "id = ? AND account_id = ?", agentID, accountID)
		if err != nil {
			return err
		}
		if domain.Status(row.Status) != domain.StatusError {
			return nil
		}
		transition(&row, domain.StatusActive, s.now())
		row.Version++
		fields, err := decodeFields(row.Fields)
		if err != nil {
			return err
		}
		if err := renderRow(&row, fields); err != nil {
			return err
		}
		if err := saveStatus(tx, &row); err != nil {
			return err
		}
		return emit(statusChanged(accountID, agentID, domain.StatusError, domain.StatusActive, ""))
	})
}

// errorDocument is row, locked, with its document rendered as it is once
// in error for reason.
func errorDocument(row agentRow, reason string) (agentRow, error) {
	fields, err := decodeFields(row.Fields)
	if err != nil {
		return row, err
	}
	row.Status, row.StatusReason = ctext(domain.StatusError), reason
	return row, renderRow(&row, fields)
}

// transition moves row to status to at t and reports whether it changed.
// Leaving error closes the error period and clears its reason and cool-down;
// entering error opens a period.
func transition(row *agentRow, to domain.Status, t time.Time) bool {
	from := domain.Status(row.Status)
	if from == to {
		return false
	}
	if from == domain.StatusError {
		if row.ErrorSince != nil {
			row.ErrorMillis += max(0, t.Sub(*row.ErrorSince).Milliseconds())
		}
		row.ErrorSince, row.RetryAt, row.StatusReason = nil, nil, ""
	}
	if to == domain.StatusError {
		row.ErrorSince = &t
	}
	row.Status = ctext(to)
	return true
}

// saveStatus writes the status columns of row, its document among them.
func saveStatus(tx *gorm.DB, row *agentRow) error {
	return tx.Model(&agentRow{}).Where("id = ?", row.ID).Updates(statusColumns(row)).Error
}

// updatedColumns are the SET list of an update of row, read as before,
// and its arguments: the fields and the document, rendered again, and
// each other column whose value moved, in a fixed order (so that each
// combination is one prepared statement). A column left alone is not
// written, and an index over none that moved is not touched: a PATCH of
// the goals rewrites neither the name's index nor the status's. The
// status columns are written together when the status moved: a
// cool-down set by MarkAgentError meanwhile, which keeps the version, is
// kept by an update that leaves the status alone.
func updatedColumns(row, before *agentRow) (string, []any) {
	var set strings.Builder
	var args []any
	add := func(column string, v any) {
		if set.Len() > 0 {
			set.WriteString(", ")
		}
		set.WriteString(column + " = ?")
		args = append(args, v)
	}
	add("fields", row.Fields)
	add("document", row.Document)
	add("document_rev", row.DocumentRev)
	if row.Version != before.Version {
		add("version", row.Version)
	}
	if !row.UpdatedAt.Equal(before.UpdatedAt) {
		add("updated_at", row.UpdatedAt)
	}
	if row.Name != before.Name {
		add("name", row.Name)
	}
	if row.ModelProvider != before.ModelProvider {
		add("model_provider", row.ModelProvider)
	}
	if row.Model != before.Model {
		add("model", row.Model)
	}
	if row.DeleteProtection != before.DeleteProtection {
		add("delete_protection", row.DeleteProtection)
	}
	if row.Clients != before.Clients {
		add("clients", row.Clients)
	}
	if row.Status != before.Status {
		add("status", row.Status)
		add("status_reason", row.StatusReason)
		add("retry_at", row.RetryAt)
		add("error_since", row.ErrorSince)
		add("error_millis", row.ErrorMillis)
	}
	return set.String(), args
}

// statusColumns are the columns a status change writes. Updates with a map
// writes zero values and NULLs too, unlike Updates with a struct.
func statusColumns(row *agentRow) map[string]any {
	return map[string]any{
		"status":        row.Status,
		"status_reason": row.StatusReason,
		"retry_at":      row.RetryAt,
		"error_since":   row.ErrorSince,
		"error_millis":  row.ErrorMillis,
		"version":       row.Version,
		"document":      row.Document,
		"document_rev":  row.DocumentRev,
	}
}
