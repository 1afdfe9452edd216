package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// SaveRunSteps stores the finished steps of run id while it has not
// ended, with what they cost: each write is the whole list, so the last
// one wins.
func (s Runs) SaveRunSteps(ctx context.Context, id string, steps []domain.RunStep) error {
	raw, err := json.Marshal(steps)
	if err != nil {
		return wrap("save run steps", err)
	}
	var cost int64
	for _, st := range steps {
		cost += st.CostMicros
	}
	return s.write(ctx, "save run steps", func(tx *gorm.DB) error {
		return tx.Model(&runRow{}).Where("id = ? AND status IN ?", id, activeStatuses).
			Updates(map[string]any{"steps": string(raw), "beat_at": s.now(), "own_cost_micros": cost, "step_cost_micros": cost}).Error
	})
}

// LostRuns are the ids of up to limit runs, oldest first, that have not
// ended and whose holder was lost (no beat for RunBeatTimeout): queued or
// running ones; a run waiting for a decision holds nothing to lose.
func (s Runs) LostRuns(ctx context.Context, limit int) ([]string, error) {
	var ids []string
	err := s.read(ctx).Model(&runRow{}).
		Where("status IN ? AND beat_at < ?", []string{string(domain.RunQueued), string(domain.RunRunning)}, s.now().Add(-RunBeatTimeout)).
		Order("beat_at").Limit(limit).Pluck("id", &ids).Error
	return ids, wrap("lost runs", err)
}

// ClaimRun takes over run id when whoever held it was lost: a queued or
// running run without a beat for RunBeatTimeout. A running one counts a
// start, and fails with RUN_ABANDONED once started MaxRunStarts times; a
// running one whose reply was stored before its holder was lost ends
// completed with that reply. An ended run, or one waiting for a decision,
// is not claimed; nor is one whose holder is alive (Again says when to
// look again). ErrRunNotFound when there is no such run.
func (s Runs) ClaimRun(ctx context.Context, id string) (domain.RunClaim, error) {
	var c domain.RunClaim
	var row runRow
	err := s.writeEvents(ctx, "claim run", func(tx *gorm.DB, emit emitFunc) error {
		c = domain.RunClaim{}
		if err := forUpdate(tx).Take(&row, "id = ?", id).Error; err != nil {
			return notFoundAs(err, domain.ErrRunNotFound)
		}
		status, now := domain.RunStatus(row.Status), s.now()
		if status != domain.RunQueued && status != domain.RunRunning {
			return nil
		}
		if silent := now.Sub(row.BeatAt); silent <= RunBeatTimeout {
			c.Again = RunBeatTimeout - silent + time.Second
			return nil
		}
		if status == domain.RunRunning {
			ended, err := s.endStored(tx, &row, now, emit)
			if err != nil || ended {
				return err
			}
			if row.Attempts >= MaxRunStarts {
				row, err = abandon(tx, row, now, emit)
				return err
			}
			row.Attempts++
		}
		row.BeatAt, c.Claimed = now, true
		err := tx.Model(&runRow{}).Where("id = ?", row.ID).Updates(map[string]any{"beat_at": now, "attempts": row.Attempts}).Error
		if err != nil {
			return err
		}
		return s.scheduleRunJob(tx, id, now.Add(RunBeatTimeout)) // should the claimer be lost too
	})
	if err != nil {
		return domain.RunClaim{}, err
	}
	c.Run = toRun(row)
	return c, nil
}

// endStored ends *row completed when its reply was stored: the turn saved
// the exchange, and its holder was lost before it said the run ended.
func (s Runs) endStored(tx *gorm.DB, row *runRow, now time.Time, emit emitFunc) (bool, error) {
	var msgs []messageRow
	if err := tx.Where("id = ?", row.MessageID).Limit(1).Find(&msgs).Error; err != nil || len(msgs) == 0 {
		return false, err
	}
	m := toMessage(msgs[0])
	reply, err := json.Marshal(domain.Reply{MessageID: m.ID, RunID: string(row.ID), Text: m.Text, AgentID: string(row.AgentID),
		UserID: row.UserID, RoomID: row.RoomID, CreatedAt: m.CreatedAt, Partial: m.Partial,
		Metadata: domain.ReplyMetadata{TokensUsed: m.TokensUsed, ResponseMillis: m.ResponseMillis, Model: m.Model,
			PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens, CostMicros: m.CostMicros, ToolCalls: m.ToolCalls}})
	if err != nil {
		return false, err
	}
	row.Status, row.FinishedAt, row.Reply = string(domain.RunCompleted), &now, string(reply)
	err = tx.Model(&runRow{}).Where("id = ?", row.ID).
		Updates(map[string]any{"status": row.Status, "finished_at": now, "reply": row.Reply}).Error
	if err != nil {
		return false, err
	}
	return true, emitEnded(emit, []runRow{*row})
}

// ReleaseRun gives up run id while it has not ended, without ending it:
// its holder is stopping, so the run is taken for lost at once and any
// process resumes it from its last stored step.
func (s Runs) ReleaseRun(ctx context.Context, id string) error {
	return s.write(ctx, "release run", func(tx *gorm.DB) error {
		res := tx.Model(&runRow{}).Where("id = ? AND status IN ?", id, []string{string(domain.RunQueued), string(domain.RunRunning)}).
			Update("beat_at", time.Unix(0, 0).UTC())
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return s.scheduleRunJob(tx, id, s.now())
	})
}
