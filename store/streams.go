package store

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/streamlog"
	"gorm.io/gorm"
)

// The database keeps streams for every replica when Redis is not
// configured.
var _ streamlog.Backend = (*Store)(nil)

// streamPruneBatch bounds the streams one prune forgets.
const streamPruneBatch = 500

// messageStreamRow is a row of message_streams: a streamed reply, who runs
// it (Owner, the replica a cancel goes to) and how it ended.
type messageStreamRow struct {
	MessageID       ctext      `gorm:"primaryKey"`
	AccountID       ctext      `gorm:"not null"`
	AgentID         ctext      `gorm:"not null"`
	Owner           ctext      `gorm:"not null;index:idx_message_streams_owner_cancel,priority:1"`
	CancelRequested bool       `gorm:"not null;index:idx_message_streams_owner_cancel,priority:2"`
	Done            bool       `gorm:"not null"`
	Partial         bool       `gorm:"not null"`
	CreatedAt       time.Time  `gorm:"not null;autoCreateTime:false;index:idx_message_streams_created"`
	EndedAt         *time.Time `gorm:"index:idx_message_streams_ended"`
}

// TableName names the table.
func (messageStreamRow) TableName() string { return "message_streams" }

// messageStreamEventRow is a row of message_stream_events: one event of a
// stream, by its SSE id.
type messageStreamEventRow struct {
	MessageID ctext  `gorm:"primaryKey"`
	Seq       int    `gorm:"primaryKey;autoIncrement:false"`
	Data      []byte `gorm:"not null"`
}

// TableName names the table.
func (messageStreamEventRow) TableName() string { return "message_stream_events" }

// streamModels are the tables of streamed replies.
func streamModels() []any { return []any{&messageStreamRow{}, &messageStreamEventRow{}} }

// AppendStreams writes the batches of a replica's flush in one
// transaction: a batch starting with event 1 creates its stream, a batch
// whose End.Done is set ends it.
func (s *Store) AppendStreams(ctx context.Context, batches []streamlog.Batch) error {
	at := s.now()
	var events []messageStreamEventRow
	var created []messageStreamRow
	for _, b := range batches {
		if len(b.Events) > 0 && b.Events[0].ID == 1 {
			created = append(created, messageStreamRow{MessageID: ctext(b.MessageID), AccountID: ctext(b.AccountID),
				AgentID: ctext(b.AgentID), Owner: ctext(b.Owner), CreatedAt: at})
		}
		for _, e := range b.Events {
			events = append(events, messageStreamEventRow{MessageID: ctext(b.MessageID), Seq: e.ID, Data: e.Data})
		}
	}
	return s.write(ctx, "append stream events", func(tx *gorm.DB) error {
		if len(created) > 0 {
			if err := tx.CreateInBatches(created, 200).Error; err != nil {
				return err
			}
		}
		if len(events) > 0 {
			if err := tx.CreateInBatches(events, 500).Error; err != nil {
				return err
			}
		}
		for _, b := range batches {
			if !b.End.Done {
				continue
			}
			err := tx.Model(&messageStreamRow{}).Where("message_id = ?", b.MessageID).
				Updates(map[string]any{"done": true, "partial": b.End.Partial, "ended_at": at}).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadStream returns the stream's events after the one with id after, and
// its State; streamlog.ErrNotFound when it is not kept or not k's.
func (s *Store) ReadStream(ctx context.Context, k streamlog.Key, after int) ([]streamlog.Event, streamlog.State, error) {
	db := s.read(ctx)
	row, err := s.streamRow(db, k)
	if err != nil {
		return nil, streamlog.State{}, err
	}
	var rows []messageStreamEventRow
	if err := db.Where("message_id = ? AND seq > ?", k.MessageID, after).Order("seq").Find(&rows).Error; err != nil {
		return nil, streamlog.State{}, wrap("read stream events", err)
	}
	events := make([]streamlog.Event, len(rows))
	for i, r := range rows {
		events[i] = streamlog.Event{ID: r.Seq, Data: r.Data}
	}
	return events, streamlog.State{Done: row.Done, Partial: row.Partial}, nil
}

// streamRow reads k's stream row; streamlog.ErrNotFound when there is none.
func (s *Store) streamRow(db *gorm.DB, k streamlog.Key) (messageStreamRow, error) {
	var row messageStreamRow
	err := db.Where("message_id = ? AND account_id = ? AND agent_id = ?", k.MessageID, k.AccountID, k.AgentID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, streamlog.ErrNotFound
	}
	return row, wrap("read stream", err)
}

// RequestStreamCancel marks k's stream for its owner to stop, unless it is
// done, and returns its State.
func (s *Store) RequestStreamCancel(ctx context.Context, k streamlog.Key) (streamlog.State, error) {
	row, err := s.streamRow(s.read(ctx), k)
	st := streamlog.State{Done: row.Done, Partial: row.Partial}
	if err != nil || row.Done {
		return st, err
	}
	return st, s.write(ctx, "request stream cancel", func(tx *gorm.DB) error {
		return tx.Model(&messageStreamRow{}).Where("message_id = ? AND NOT done", k.MessageID).
			Update("cancel_requested", true).Error
	})
}

// TakeStreamCancels returns owner's streams whose cancel was requested and
// clears the requests. The read goes to a reader first, so a replica with
// nothing to cancel makes no write.
func (s *Store) TakeStreamCancels(ctx context.Context, owner string) ([]string, error) {
	var ids []string
	q := "owner = ? AND cancel_requested"
	if err := s.read(ctx).Model(&messageStreamRow{}).Where(q, owner).Pluck("message_id", &ids).Error; err != nil {
		return nil, wrap("read stream cancels", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	err := s.write(ctx, "take stream cancels", func(tx *gorm.DB) error {
		return tx.Model(&messageStreamRow{}).Where("message_id IN ?", ids).Update("cancel_requested", false).Error
	})
	return ids, err
}

// PruneStreams forgets a batch of the streams that ended
// streamlog.Retention ago and of those that never ended and started
// streamlog.StaleAfter ago, with their events.
func (s *Store) PruneStreams(ctx context.Context, now time.Time) error {
	return s.write(ctx, "prune streams", func(tx *gorm.DB) error {
		var ids []string
		err := tx.Model(&messageStreamRow{}).
			Where("ended_at < ? OR (ended_at IS NULL AND created_at < ?)", now.Add(-streamlog.Retention), now.Add(-streamlog.StaleAfter)).
			Limit(streamPruneBatch).Pluck("message_id", &ids).Error
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := tx.Where("message_id IN ?", ids).Delete(&messageStreamEventRow{}).Error; err != nil {
			return err
		}
		return tx.Where("message_id IN ?", ids).Delete(&messageStreamRow{}).Error
	})
}
