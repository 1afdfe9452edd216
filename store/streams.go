package store

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/agentd/agentd/streamlog"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The database keeps streams for every replica when Redis is not
// configured.
var _ streamlog.Backend = Streams{}

// streamPruneBatch bounds the streams one prune forgets.
const streamPruneBatch = 500

// messageStreamRow is a row of message_streams: a streamed reply, who runs
// it (Owner, the replica a cancel goes to), when its owner last renewed it
// (BeatAt; none for a stream written before heartbeats) and how it ended
// (Lost: ended by a follower, its owner dead).
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
	BeatAt          *time.Time
	Lost            bool `gorm:"not null;default:false"`
}

// TableName names the table.
func (messageStreamRow) TableName() string { return "message_streams" }

// messageStreamChunkRow is a row of message_stream_chunks: the events a
// flush wrote of one stream, by the SSE id of the last of them. A replica
// writes a row per stream per flush, however many tokens arrived since the
// last one: the rows a flush writes are bounded by the streams running, not
// by their tokens.
type messageStreamChunkRow struct {
	MessageID ctext  `gorm:"primaryKey"`
	LastSeq   int    `gorm:"primaryKey;autoIncrement:false"`
	Data      []byte `gorm:"not null"`
}

// TableName names the table.
func (messageStreamChunkRow) TableName() string { return "message_stream_chunks" }

// streamModels are the tables of streamed replies.
func streamModels() []any { return []any{&messageStreamRow{}, &messageStreamChunkRow{}} }

// encodeChunk packs events, whose ids follow each other, as each one's
// length (uvarint) and data.
func encodeChunk(events []streamlog.Event) []byte {
	n := 0
	for _, e := range events {
		n += binary.MaxVarintLen32 + len(e.Data)
	}
	out := make([]byte, 0, n)
	for _, e := range events {
		out = binary.AppendUvarint(out, uint64(len(e.Data)))
		out = append(out, e.Data...)
	}
	return out
}

// decodeChunk unpacks a chunk whose last event has id last and appends
// the events after the id after to out.
func decodeChunk(out []streamlog.Event, data []byte, last, after int) ([]streamlog.Event, error) {
	var datas [][]byte
	for len(data) > 0 {
		n, w := binary.Uvarint(data)
		if w <= 0 || n > uint64(len(data)-w) {
			return out, errors.New("store: corrupt stream chunk")
		}
		datas, data = append(datas, data[w:w+int(n)]), data[w+int(n):]
	}
	first := last - len(datas) + 1
	for i, d := range datas {
		if id := first + i; id > after {
			out = append(out, streamlog.Event{ID: id, Data: d})
		}
	}
	return out, nil
}

// AppendStreams writes the batches of a replica's flush in one
// transaction: a batch starting with event 1 creates its stream, each
// batch's events go in one chunk, and the streams whose End.Done is set end
// (in their first row when they start in the same flush).
func (s Streams) AppendStreams(ctx context.Context, batches []streamlog.Batch) error {
	at := s.now()
	var created []messageStreamRow
	var chunks []messageStreamChunkRow
	ended := map[bool][]string{} // by Partial, of streams created before
	for _, b := range batches {
		if len(b.Events) > 0 {
			chunks = append(chunks, messageStreamChunkRow{MessageID: ctext(b.MessageID), LastSeq: b.Events[len(b.Events)-1].ID,
				Data: encodeChunk(b.Events)})
		}
		switch {
		case len(b.Events) > 0 && b.Events[0].ID == 1:
			row := messageStreamRow{MessageID: ctext(b.MessageID), AccountID: ctext(b.AccountID),
				AgentID: ctext(b.AgentID), Owner: ctext(b.Owner), CreatedAt: at, BeatAt: &at}
			if b.End.Done {
				row.Done, row.Partial, row.EndedAt = true, b.End.Partial, &at
			}
			created = append(created, row)
		case b.End.Done:
			ended[b.End.Partial] = append(ended[b.End.Partial], b.MessageID)
		}
	}
	return s.write(ctx, "append stream events", func(tx *gorm.DB) error {
		if len(created) > 0 {
			if err := tx.CreateInBatches(created, 100).Error; err != nil {
				return err
			}
		}
		if len(chunks) > 0 {
			// A stream taken for lost has its last event already: an
			// owner that was only cut off writes after it in vain, and
			// must not fail the flush of its other streams.
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(chunks, 300).Error; err != nil {
				return err
			}
		}
		for partial, ids := range ended {
			for part := range slices.Chunk(ids, 500) {
				err := tx.Model(&messageStreamRow{}).Where("message_id IN ? AND NOT done", part).
					Updates(map[string]any{"done": true, "partial": partial, "ended_at": at}).Error
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// ReadStream returns the stream's events after the one with id after, and
// its State; streamlog.ErrNotFound when it is not kept or not k's.
func (s Streams) ReadStream(ctx context.Context, k streamlog.Key, after int) ([]streamlog.Event, streamlog.State, error) {
	db := s.read(ctx)
	row, err := s.streamRow(db, k)
	if err != nil {
		return nil, streamlog.State{}, err
	}
	var rows []messageStreamChunkRow
	if err := db.Where("message_id = ? AND last_seq > ?", k.MessageID, after).Order("last_seq").Find(&rows).Error; err != nil {
		return nil, streamlog.State{}, wrap("read stream events", err)
	}
	var events []streamlog.Event
	for _, r := range rows {
		if events, err = decodeChunk(events, r.Data, r.LastSeq, after); err != nil {
			return nil, streamlog.State{}, err
		}
	}
	return events, row.state(), nil
}

// state is the State the row records.
func (r messageStreamRow) state() streamlog.State {
	return streamlog.State{Done: r.Done, Partial: r.Partial, Lost: r.Lost}
}

// streamRow reads k's stream row; streamlog.ErrNotFound when there is none.
func (s *core) streamRow(db *gorm.DB, k streamlog.Key) (messageStreamRow, error) {
	var row messageStreamRow
	err := db.Where("message_id = ? AND account_id = ? AND agent_id = ?", k.MessageID, k.AccountID, k.AgentID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, streamlog.ErrNotFound
	}
	return row, wrap("read stream", err)
}

// RequestStreamCancel marks k's stream for its owner to stop, unless it is
// done, and returns its State.
func (s Streams) RequestStreamCancel(ctx context.Context, k streamlog.Key) (streamlog.State, error) {
	row, err := s.streamRow(s.read(ctx), k)
	st := row.state()
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
func (s Streams) TakeStreamCancels(ctx context.Context, owner string) ([]string, error) {
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

// KeepStreams renews the heartbeat of owner's streams ids that are not
// done, in one statement per 500.
func (s Streams) KeepStreams(ctx context.Context, owner string, ids []string) error {
	at := s.now()
	return s.write(ctx, "renew streams", func(tx *gorm.DB) error {
		for part := range slices.Chunk(ids, 500) {
			err := tx.Model(&messageStreamRow{}).Where("message_id IN ? AND owner = ? AND NOT done", part, owner).
				Update("beat_at", at).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// EndLostStream ends k's stream with the event data when it is not done
// and its heartbeat is more than silent old. It reads first, on a reader,
// so a follower of a live stream makes no write; the end itself is one
// conditional update, which one of replicas racing wins, and the event's
// chunk.
func (s Streams) EndLostStream(ctx context.Context, k streamlog.Key, silent time.Duration, data []byte) (bool, error) {
	at := s.now()
	before := at.Add(-silent)
	row, err := s.streamRow(s.read(ctx), k)
	if err != nil || row.Done || row.BeatAt == nil || !row.BeatAt.Before(before) {
		return false, err
	}
	ended := false
	err = s.write(ctx, "end lost stream", func(tx *gorm.DB) error {
		res := tx.Model(&messageStreamRow{}).Where("message_id = ? AND NOT done AND beat_at < ?", k.MessageID, before).
			Updates(map[string]any{"done": true, "partial": true, "lost": true, "ended_at": at})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var last int
		err := tx.Model(&messageStreamChunkRow{}).Where("message_id = ?", k.MessageID).
			Select("COALESCE(MAX(last_seq), 0)").Scan(&last).Error
		if err != nil {
			return err
		}
		ended = true
		event := []streamlog.Event{{ID: last + 1, Data: data}}
		return tx.Create(&messageStreamChunkRow{MessageID: ctext(k.MessageID), LastSeq: last + 1, Data: encodeChunk(event)}).Error
	})
	return ended, err
}

// PruneStreams forgets a batch of the streams that ended
// streamlog.Retention ago and of those that never ended and started
// streamlog.StaleAfter ago, with their events.
func (s Streams) PruneStreams(ctx context.Context, now time.Time) error {
	return s.write(ctx, "prune streams", func(tx *gorm.DB) error {
		var ids []string
		err := tx.Model(&messageStreamRow{}).
			Where("ended_at < ? OR (ended_at IS NULL AND created_at < ?)", now.Add(-streamlog.Retention), now.Add(-streamlog.StaleAfter)).
			Limit(streamPruneBatch).Pluck("message_id", &ids).Error
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := tx.Where("message_id IN ?", ids).Delete(&messageStreamChunkRow{}).Error; err != nil {
			return err
		}
		return tx.Where("message_id IN ?", ids).Delete(&messageStreamRow{}).Error
	})
}
