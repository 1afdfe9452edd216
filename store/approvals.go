package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// AwaitDecision moves running run id to requires_action until expiresAt,
// its steps (the waiting calls marked) stored, and reports
// run.requires_action. A run ended meanwhile stays as it is. It returns
// the run as stored.
func (s Runs) AwaitDecision(ctx context.Context, id string, steps []domain.RunStep, expiresAt time.Time) (domain.Run, error) {
	raw, err := json.Marshal(steps)
	if err != nil {
		return domain.Run{}, wrap("await decision", err)
	}
	var row runRow
	err = s.writeEvents(ctx, "await decision", func(tx *gorm.DB, emit emitFunc) error {
		if err := forUpdate(tx).Take(&row, "id = ?", id).Error; err != nil {
			return notFoundAs(err, domain.ErrRunNotFound)
		}
		if row.Status != string(domain.RunRunning) {
			return nil
		}
		row.Status, row.Steps, row.ExpiresAt = string(domain.RunRequiresAction), string(raw), &expiresAt
		err := tx.Model(&runRow{}).Where("id = ?", row.ID).
			Updates(map[string]any{"status": row.Status, "steps": row.Steps, "expires_at": expiresAt}).Error
		if err != nil {
			return err
		}
		return emit(runEnded(toRun(row)))
	})
	if err != nil {
		return domain.Run{}, err
	}
	return toRun(row), nil
}

// DecideRun records decisions on the calls run id of the account's agent
// waits for. With all, they must decide every waiting call (the API's
// one request); else any of them (a button's press). A decision naming a
// call that does not wait (unknown, or decided already) is CodeInvalid on
// field "decisions". When no call is left waiting, the run is queued
// again to go on (its beat renewed: whoever decided goes on with it, or
// any process once it is lost). ErrRunNotFound for no such run,
// CodeNotWaiting for a run not in requires_action.
func (s Runs) DecideRun(ctx context.Context, accountID, agentID, id string, decisions []domain.Decision, all bool) (domain.Run, error) {
	var row runRow
	err := s.write(ctx, "decide run", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		if err := forUpdate(tx).Take(&row, "id = ? AND agent_id = ?", id, agentID).Error; err != nil {
			return notFoundAs(err, domain.ErrRunNotFound)
		}
		if row.Status != string(domain.RunRequiresAction) {
			return &domain.Error{Code: domain.CodeNotWaiting, Resource: "run", Status: row.Status}
		}
		run := toRun(row)
		left, err := decide(run.Steps, decisions, all)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(run.Steps)
		if err != nil {
			return err
		}
		update := map[string]any{"steps": string(raw)}
		row.Steps = string(raw)
		if left == 0 {
			t := s.now()
			row.Status, row.BeatAt, row.ExpiresAt = string(domain.RunQueued), t, nil
			update["status"], update["beat_at"], update["expires_at"] = row.Status, t, nil
		}
		if err := tx.Model(&runRow{}).Where("id = ?", row.ID).Updates(update).Error; err != nil || left > 0 {
			return err
		}
		return s.scheduleRunJob(tx, id, row.BeatAt.Add(RunBeatTimeout)) // should whoever decided be lost before it goes on
	})
	if err != nil {
		return domain.Run{}, err
	}
	return toRun(row), nil
}

// decide applies decisions to the waiting calls of the last of steps and
// returns how many are left waiting.
func decide(steps []domain.RunStep, decisions []domain.Decision, all bool) (int, error) {
	refused := &domain.Error{Code: domain.CodeInvalid, Field: "decisions"}
	if len(steps) == 0 {
		refused.Reason = "names no call the run waits for"
		return 0, refused
	}
	calls := steps[len(steps)-1].Calls
	waiting := map[string]int{}
	for i, c := range calls {
		if c.Waits && c.Decision == nil {
			waiting[c.Record.ID] = i
		}
	}
	for _, d := range decisions {
		i, ok := waiting[d.CallID]
		if !ok {
			refused.Reason = "names " + d.CallID + ", which is not a call the run waits for"
			return 0, refused
		}
		calls[i].Decision = &d
		delete(waiting, d.CallID)
	}
	if all && len(waiting) > 0 {
		refused.Reason = "must decide every call the run waits for"
		return 0, refused
	}
	return len(waiting), nil
}

// ExpiredRuns are up to limit runs waiting for decisions past their
// expiry, oldest first.
func (s Runs) ExpiredRuns(ctx context.Context, limit int) ([]domain.Run, error) {
	var rows []runRow
	err := s.read(ctx).Where("status = ? AND expires_at < ?", string(domain.RunRequiresAction), s.now()).
		Order("expires_at").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, wrap("expired runs", err)
	}
	out := make([]domain.Run, len(rows))
	for i, r := range rows {
		out[i] = toRun(r)
	}
	return out, nil
}

// RunOfWaitingCall returns the run of agentID's that waits for a decision
// on call callID (a platform's button names only the call).
// ErrRunNotFound when no run waits for it: unknown, decided already, or
// its run no longer waiting.
func (s Runs) RunOfWaitingCall(ctx context.Context, agentID, callID string) (domain.Run, error) {
	// The steps are JSON text: the LIKE narrows the agent's few waiting
	// runs down to the one naming the call, and the decoded steps decide.
	quoted, _ := json.Marshal(callID) // a string always encodes
	var rows []runRow
	err := s.read(ctx).Where("agent_id = ? AND status = ? AND steps LIKE ? ESCAPE '\\'", agentID,
		string(domain.RunRequiresAction), "%"+likeEscape(`"id":`+string(quoted))+"%").Find(&rows).Error
	if err != nil {
		return domain.Run{}, wrap("run of waiting call", err)
	}
	for _, row := range rows {
		run := toRun(row)
		for _, c := range run.Waiting() {
			if c.ID == callID {
				return run, nil
			}
		}
	}
	return domain.Run{}, wrap("run of waiting call", domain.ErrRunNotFound)
}
