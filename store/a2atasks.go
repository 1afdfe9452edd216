package store

import (
	"context"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// a2aTaskRow is a row of a2a_tasks.
type a2aTaskRow struct {
	ID               ctext     `gorm:"primaryKey"`
	AgentID          ctext     `gorm:"not null;index:idx_a2a_tasks_agent_context,priority:1"`
	ContextID        ctext     `gorm:"not null;index:idx_a2a_tasks_agent_context,priority:2"`
	State            string    `gorm:"not null"`
	RequestMessageID string    `gorm:"not null"`
	RequestText      string    `gorm:"type:text;not null"`
	ReplyMessageID   string    `gorm:"not null"`
	ReplyText        string    `gorm:"type:text;not null"`
	Reason           string    `gorm:"type:text;not null"`
	CreatedAt        time.Time `gorm:"not null;autoCreateTime:false"`
	UpdatedAt        time.Time `gorm:"not null;autoUpdateTime:false;index:idx_a2a_tasks_updated"`
}

// TableName names the table.
func (a2aTaskRow) TableName() string { return "a2a_tasks" }

// CreateA2ATask stores t, in state working, as a task of agent t.AgentID of
// account accountID and returns it with its ID and times filled in. It
// deletes the tasks past A2ATaskRetention in the same transaction.
// It returns ErrNotFound for a missing agent or one of another account.
func (s Tasks) CreateA2ATask(ctx context.Context, accountID string, t domain.A2ATask) (domain.A2ATask, error) {
	at := s.now()
	t.ID, t.State, t.CreatedAt, t.UpdatedAt = newID("task_", at), domain.A2ATaskWorking, at, at
	t.ReplyMessageID, t.ReplyText, t.Reason = "", "", ""
	err := s.write(ctx, "create a2a task", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, t.AgentID); err != nil {
			return err
		}
		if err := tx.Where("updated_at < ?", at.Add(-domain.A2ATaskRetention)).Delete(&a2aTaskRow{}).Error; err != nil {
			return err
		}
		return tx.Create(fromA2ATask(t)).Error
	})
	if err != nil {
		return domain.A2ATask{}, err
	}
	return t, nil
}

// FinishA2ATask moves task t.ID of agent t.AgentID of account accountID to
// t.State with the reply (ReplyMessageID, ReplyText) or the Reason, and
// returns the task as stored. Errors as GetA2ATask, whatever the task's
// age.
func (s Tasks) FinishA2ATask(ctx context.Context, accountID string, t domain.A2ATask) (domain.A2ATask, error) {
	var out domain.A2ATask
	err := s.write(ctx, "finish a2a task", func(tx *gorm.DB) error {
		row, err := a2aTask(tx, accountID, t.AgentID, t.ID, time.Time{})
		if err != nil {
			return err
		}
		row.State, row.ReplyMessageID, row.ReplyText, row.Reason = string(t.State), t.ReplyMessageID, t.ReplyText, t.Reason
		row.UpdatedAt = s.now()
		if err := tx.Save(&row).Error; err != nil {
			return err
		}
		out = toA2ATask(row)
		return nil
	})
	return out, err
}

// RenewA2ATask records that the replica running task id of agent agentID
// is alive (its UpdatedAt moves to now) while the task is working: a task
// its replica stops renewing is taken for abandoned (FailAbandonedA2ATask).
// A task that ended is left as it is.
func (s Tasks) RenewA2ATask(ctx context.Context, agentID, id string) error {
	at := s.now()
	return s.write(ctx, "renew a2a task", func(tx *gorm.DB) error {
		return tx.Model(&a2aTaskRow{}).Where("id = ? AND agent_id = ? AND state = ?", id, agentID, string(domain.A2ATaskWorking)).
			Update("updated_at", at).Error
	})
}

// FailAbandonedA2ATask moves task id of agent agentID of account accountID
// to failed with reason when it is still working and was last renewed
// before since (its replica died), and returns the task as stored then.
// Of replicas racing, one fails it; a task that ended meanwhile is
// returned as it ended. Errors as GetA2ATask, whatever the task's age.
func (s Tasks) FailAbandonedA2ATask(ctx context.Context, accountID, agentID, id string, since time.Time, reason string) (domain.A2ATask, error) {
	var out domain.A2ATask
	err := s.write(ctx, "fail abandoned a2a task", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		err := tx.Model(&a2aTaskRow{}).
			Where("id = ? AND agent_id = ? AND state = ? AND updated_at < ?", id, agentID, string(domain.A2ATaskWorking), since).
			Updates(map[string]any{"state": string(domain.A2ATaskFailed), "reason": reason, "updated_at": s.now()}).Error
		if err != nil {
			return err
		}
		row, err := a2aTask(tx, accountID, agentID, id, time.Time{})
		out = toA2ATask(row)
		return err
	})
	return out, err
}

// GetA2ATask returns task id of agent agentID of account accountID:
// It returns ErrNotFound for a missing agent or one of another account.
// ErrA2ATaskNotFound when the agent has no such task or it last changed
// more than A2ATaskRetention ago.
func (s Tasks) GetA2ATask(ctx context.Context, accountID, agentID, id string) (domain.A2ATask, error) {
	row, err := a2aTask(s.read(ctx), accountID, agentID, id, s.now().Add(-domain.A2ATaskRetention))
	if err != nil {
		return domain.A2ATask{}, wrap("get a2a task", err)
	}
	return toA2ATask(row), nil
}

// a2aTask reads one task of an account's agent that changed at or after
// since (any, for a zero since): ErrNotFound for a missing agent or one of
// another account, ErrA2ATaskNotFound for a task it lacks.
func a2aTask(db *gorm.DB, accountID, agentID, id string, since time.Time) (a2aTaskRow, error) {
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return a2aTaskRow{}, err
	}
	var row a2aTaskRow
	q := db.Where("id = ? AND agent_id = ?", id, agentID)
	if !since.IsZero() {
		q = q.Where("updated_at >= ?", since)
	}
	err := q.Take(&row).Error
	if isNotFound(err) {
		err = domain.ErrA2ATaskNotFound
	}
	return row, err
}

// deleteA2ATasksOfRoom deletes the tasks of agent agentID whose context is
// the room roomID (none when it is not an A2A room).
func deleteA2ATasksOfRoom(tx *gorm.DB, agentID, roomID string) error {
	contextID, ok := strings.CutPrefix(roomID, domain.A2ARoomPrefix)
	if !ok {
		return nil
	}
	return tx.Where("agent_id = ? AND context_id = ?", agentID, contextID).Delete(&a2aTaskRow{}).Error
}

func fromA2ATask(t domain.A2ATask) *a2aTaskRow {
	return &a2aTaskRow{
		ID: ctext(t.ID), AgentID: ctext(t.AgentID), ContextID: ctext(t.ContextID), State: string(t.State),
		RequestMessageID: t.RequestMessageID, RequestText: t.RequestText,
		ReplyMessageID: t.ReplyMessageID, ReplyText: t.ReplyText, Reason: t.Reason,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

func toA2ATask(r a2aTaskRow) domain.A2ATask {
	return domain.A2ATask{
		ID: string(r.ID), AgentID: string(r.AgentID), ContextID: string(r.ContextID), State: domain.A2ATaskState(r.State),
		RequestMessageID: r.RequestMessageID, RequestText: r.RequestText,
		ReplyMessageID: r.ReplyMessageID, ReplyText: r.ReplyText, Reason: r.Reason,
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt),
	}
}
