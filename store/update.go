package store

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"gorm.io/gorm"
)

// UpdateAgent replaces each member of fields whole in the agent id of
// account accountID (fields are canonicalized again, so key order and
// spacing never count as a change) and sets its status when status is not
// nil. In one transaction it compares each member with the stored one and
// returns, sorted, the names of the members whose value actually changed,
// "status" included. UpdatedAt moves only when something changed. Leaving
// error (for example status active) clears the reason and RetryAt and closes
// the error period counted against uptime. A "status" member of fields is
// ignored.
//
// Secrets (settings.secrets) are compared by value, decrypted, and stored
// encrypted when a key is configured; a secret sent as SecretMask keeps its
// stored value, merged inside the transaction so a concurrent update cannot
// lose it. A write also encrypts the secrets stored before the key was set.
//
// With ifVersion other than AnyVersion it changes nothing and returns
// ErrPreconditionFailed unless that is the agent's version; a change moves
// the version.
//
// It returns ErrNotFound for a missing agent or another account's,
// ErrInvalid for bad fields or an unknown status, and an ErrInvalid naming the field
// (matching ErrInvalid) for the mask sent for a secret that is not stored.
func (s *Store) UpdateAgent(ctx context.Context, accountID, id string, fields map[string]json.RawMessage, status *Status, ifVersion int64) (Agent, []string, error) {
	in, err := canonicalFields(fields)
	if err != nil {
		return Agent{}, nil, wrap("update agent", err)
	}
	if status != nil && !status.Valid() {
		return Agent{}, nil, wrap("update agent", invalidf("unknown status %q", *status))
	}
	var out Agent
	changes := []string{}
	err = s.writeEvents(ctx, "update agent", func(tx *gorm.DB, emit emitFunc) error {
		changes = changes[:0]
		row, err := lockAgent(tx, "id = ? AND account_id = ?", id, accountID)
		if err != nil {
			return err
		}
		if err := checkVersion(row.Version, ifVersion); err != nil {
			return err
		}
		from := Status(row.Status)
		stored, err := decodeFields(row.Fields)
		if err != nil {
			return err
		}
		view, err := s.openView(stored, id)
		if err != nil {
			return err
		}
		if err := resolveSecrets(in, view); err != nil {
			return err
		}
		changes = append(changes, mergeFields(view, in)...)
		t := s.now()
		if status != nil && transition(&row, *status, t) {
			changes = append(changes, "status")
		}
		sort.Strings(changes)
		if len(changes) > 0 || s.hasPlainSecrets(stored) {
			if len(changes) > 0 {
				row.UpdatedAt, row.Version = t, row.Version+1
			}
			if stored, err = s.sealAll(view, id); err != nil {
				return err
			}
			if err := setFields(&row, stored); err != nil {
				return err
			}
			if err := renderRow(&row, stored); err != nil {
				return err
			}
			if err := saveAgent(tx, &row); err != nil {
				return err
			}
		}
		out = toAgentFields(row, stored)
		return emitUpdate(emit, out, from, changes)
	})
	if err != nil {
		return Agent{}, nil, err
	}
	return out, changes, nil
}

// emitUpdate emits agent.updated when something changed, and
// agent.status_changed too when the status did.
func emitUpdate(emit emitFunc, a Agent, from Status, changes []string) error {
	if len(changes) == 0 {
		return nil
	}
	err := emit(Event{AccountID: a.AccountID, AgentID: a.ID, Type: EventAgentUpdated,
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
func (s *Store) MarkAgentError(ctx context.Context, accountID, agentID, reason string, retryAt time.Time) (Status, error) {
	var retry *time.Time
	if !retryAt.IsZero() {
		retry = msPtr(&retryAt)
	}
	status := StatusError
	err := s.writeEvents(ctx, "mark agent error", func(tx *gorm.DB, emit emitFunc) error {
		row, err := lockAgent(tx, "id = ? AND account_id = ?", agentID, accountID)
		if err != nil {
			return err
		}
		if Status(row.Status) == StatusInactive {
			status = StatusInactive
			return nil
		}
		doc, err := errorDocument(row, reason)
		if err != nil {
			return err
		}
		res := tx.Model(&agentRow{}).
			Where("id = ? AND account_id = ? AND status IN ?", agentID, accountID, []string{string(StatusActive), string(StatusError)}).
			Updates(map[string]any{
				"status":        StatusError,
				"status_reason": reason,
				"retry_at":      retry,
				// SET expressions see the row as it was: an open period stays open.
				"error_since": gorm.Expr("CASE WHEN status = ? THEN error_since ELSE ? END", StatusError, s.now()),
				// Get shows the status and its reason, not the cool-down.
				"version":      gorm.Expr("CASE WHEN status = ? AND status_reason = ? THEN version ELSE version + 1 END", StatusError, reason),
				"document":     doc.Document,
				"document_rev": doc.DocumentRev,
			})
		if res.Error != nil || Status(row.Status) == StatusError {
			return res.Error
		}
		return emit(statusChanged(accountID, agentID, Status(row.Status), StatusError, reason))
	})
	return status, err
}

// MarkAgentRecovered returns an agent in error to active, closing its error
// period and emitting agent.status_changed. It does nothing to an agent in
// another state. It returns ErrNotFound for a missing agent or one of
// another account.
func (s *Store) MarkAgentRecovered(ctx context.Context, accountID, agentID string) error {
	return s.writeEvents(ctx, "mark agent recovered", func(tx *gorm.DB, emit emitFunc) error {
		row, err := lockAgent(tx, "id = ? AND account_id = ?", agentID, accountID)
		if err != nil {
			return err
		}
		if Status(row.Status) != StatusError {
			return nil
		}
		transition(&row, StatusActive, s.now())
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
		return emit(statusChanged(accountID, agentID, StatusError, StatusActive, ""))
	})
}

// errorDocument is row, locked, with its document rendered as it is once
// in error for reason.
func errorDocument(row agentRow, reason string) (agentRow, error) {
	fields, err := decodeFields(row.Fields)
	if err != nil {
		return row, err
	}
	row.Status, row.StatusReason = ctext(StatusError), reason
	return row, renderRow(&row, fields)
}

// transition moves row to status to at t and reports whether it changed.
// Leaving error closes the error period and clears its reason and cool-down;
// entering error opens a period.
func transition(row *agentRow, to Status, t time.Time) bool {
	from := Status(row.Status)
	if from == to {
		return false
	}
	if from == StatusError {
		if row.ErrorSince != nil {
			row.ErrorMillis += max(0, t.Sub(*row.ErrorSince).Milliseconds())
		}
		row.ErrorSince, row.RetryAt, row.StatusReason = nil, nil, ""
	}
	if to == StatusError {
		row.ErrorSince = &t
	}
	row.Status = ctext(to)
	return true
}

// saveStatus writes the status columns of row, its document among them.
func saveStatus(tx *gorm.DB, row *agentRow) error {
	return tx.Model(&agentRow{}).Where("id = ?", row.ID).Updates(statusColumns(row)).Error
}

// saveAgent writes every mutable column of row.
func saveAgent(tx *gorm.DB, row *agentRow) error {
	cols := statusColumns(row)
	cols["name"] = row.Name
	cols["model_provider"] = row.ModelProvider
	cols["model"] = row.Model
	cols["delete_protection"] = row.DeleteProtection
	cols["fields"] = row.Fields
	cols["clients"] = row.Clients
	cols["updated_at"] = row.UpdatedAt
	return tx.Model(&agentRow{}).Where("id = ?", row.ID).Updates(cols).Error
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
