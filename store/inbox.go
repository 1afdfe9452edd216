package store

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// inboxRow is a row of platform_inbox.
type inboxRow struct {
	AgentID    ctext     `gorm:"primaryKey"`
	Platform   ctext     `gorm:"primaryKey"`
	MessageID  ctext     `gorm:"primaryKey"`
	Chat       string    `gorm:"not null"`
	Payload    []byte    `gorm:"not null"`
	ReceivedAt time.Time `gorm:"not null;autoCreateTime:false"`
}

// TableName names the table.
func (inboxRow) TableName() string { return "platform_inbox" }

// AnsweredFor is how long a finished platform message is remembered, so
// that fetching it again (a platform's redelivery, a cursor behind it)
// never answers it twice.
const AnsweredFor = 8 * 24 * time.Hour

// TakePlatformMessages stores msgs in the inbox of l's connection, and
// cursor as its cursor unless it is "", in one transaction under l. It
// returns the messages that are new: neither in the inbox already nor
// finished within AnsweredFor. ErrLeaseLost when l is no longer held, and
// then nothing is stored.
func (s Connections) TakePlatformMessages(ctx context.Context, l domain.Lease, cursor string, msgs []domain.InboxMessage) ([]domain.InboxMessage, error) {
	var fresh []domain.InboxMessage
	err := s.write(ctx, "take platform messages", func(tx *gorm.DB) error {
		fresh = fresh[:0]
		// The update locks the connection's row, so no other replica can
		// acquire the lease until these messages are in.
		cols := map[string]any{"cursor": gorm.Expr("cursor")}
		if cursor != "" {
			cols["cursor"] = cursor
		}
		if err := updateHeldTx(s.held(tx, l), cols); err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Payload == nil {
				m.Payload = []byte{} // no payload is an empty one, not NULL
			}
			res := tx.Exec(`INSERT INTO platform_inbox (agent_id, platform, message_id, chat, payload, received_at)
				SELECT ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM platform_messages WHERE agent_id = ? AND platform = ? AND message_id = ?)
				ON CONFLICT DO NOTHING`, l.AgentID, l.Platform, m.ID, m.Chat, m.Payload, m.ReceivedAt,
				l.AgentID, l.Platform, m.ID)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				fresh = append(fresh, m)
			}
		}
		return nil
	})
	return fresh, err
}

// PendingPlatformMessages returns the inbox of l's connection, oldest
// first; ErrLeaseLost when l is no longer held.
func (s Connections) PendingPlatformMessages(ctx context.Context, l domain.Lease) ([]domain.InboxMessage, error) {
	var rows []inboxRow
	err := s.write(ctx, "pending platform messages", func(tx *gorm.DB) error {
		if err := updateHeldTx(s.held(tx, l), map[string]any{"cursor": gorm.Expr("cursor")}); err != nil {
			return err
		}
		return tx.Where("agent_id = ? AND platform = ?", l.AgentID, l.Platform).
			Order("received_at, message_id").Find(&rows).Error
	})
	out := make([]domain.InboxMessage, len(rows))
	for i, r := range rows {
		out[i] = domain.InboxMessage{ID: string(r.MessageID), Chat: r.Chat, Payload: r.Payload, ReceivedAt: utc(r.ReceivedAt)}
	}
	return out, err
}

// FinishPlatformMessage takes message id out of the inbox of l's
// connection and remembers it as finished, under l, and reports whether
// this call finished it (false: it was finished before). ErrLeaseLost
// when l is no longer held: then another runner may answer it.
func (s Connections) FinishPlatformMessage(ctx context.Context, l domain.Lease, id string) (bool, error) {
	var first bool
	err := s.write(ctx, "finish platform message", func(tx *gorm.DB) error {
		if err := updateHeldTx(s.held(tx, l), map[string]any{"cursor": gorm.Expr("cursor")}); err != nil {
			return err
		}
		if err := tx.Where("agent_id = ? AND platform = ? AND message_id = ?", l.AgentID, l.Platform, id).Delete(&inboxRow{}).Error; err != nil {
			return err
		}
		res := tx.Exec(`INSERT INTO platform_messages (agent_id, platform, message_id, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, l.AgentID, l.Platform, id, s.now())
		first = res.RowsAffected == 1
		return res.Error
	})
	return first, err
}

// PruneAnsweredMessages forgets up to limit platform messages finished
// before AnsweredFor ago and returns how many it forgot.
func (s Connections) PruneAnsweredMessages(ctx context.Context, limit int) (int64, error) {
	var n int64
	err := s.write(ctx, "prune answered messages", func(tx *gorm.DB) error {
		old := tx.Model(&platformMessageRow{}).Select("agent_id, platform, message_id").
			Where("created_at < ?", s.now().Add(-AnsweredFor)).Limit(limit)
		res := tx.Where("(agent_id, platform, message_id) IN (?)", old).Delete(&platformMessageRow{})
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}
