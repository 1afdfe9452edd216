package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// responseRow is a row of responses: what the OpenAI Responses API keeps
// of a response beside its run. Metadata and Input are JSON. Rows cascade
// from their agent; a row whose run is gone (past RunRetention) is a
// response no longer found.
type responseRow struct {
	RunID         ctext     `gorm:"primaryKey"`
	AccountID     ctext     `gorm:"not null;index:idx_responses_account"`
	AgentID       ctext     `gorm:"not null"`
	PreviousRunID string    `gorm:"not null;default:''"`
	UserID        string    `gorm:"not null;default:''"`
	Instructions  string    `gorm:"type:text;not null;default:''"`
	Metadata      string    `gorm:"type:text;not null;default:''"`
	Background    bool      `gorm:"not null;default:false"`
	Input         string    `gorm:"type:text;not null"`
	CreatedAt     time.Time `gorm:"not null;autoCreateTime:false"`
}

// TableName names the table.
func (responseRow) TableName() string { return "responses" }

// CreateResponse keeps r, made when its run was accepted. A run already
// kept as a response (a message merged into a queued run made by another
// response) stays the first response's.
func (s Responses) CreateResponse(ctx context.Context, r domain.Response) error {
	meta, err := json.Marshal(r.Metadata)
	if err != nil {
		return wrap("create response", err)
	}
	input, err := json.Marshal(r.Input)
	if err != nil {
		return wrap("create response", err)
	}
	row := responseRow{RunID: ctext(r.RunID), AccountID: ctext(r.AccountID), AgentID: ctext(r.AgentID),
		PreviousRunID: r.PreviousRunID, UserID: r.UserID, Instructions: r.Instructions, Metadata: string(meta),
		Background: r.Background, Input: string(input), CreatedAt: r.CreatedAt.UTC()}
	return s.write(ctx, "create response", func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error
	})
}

// GetResponse reads the account's response of run runID;
// domain.ErrResponseNotFound when the account has none.
func (s Responses) GetResponse(ctx context.Context, accountID, runID string) (domain.Response, error) {
	var row responseRow
	err := s.read(ctx).Take(&row, "run_id = ? AND account_id = ?", runID, accountID).Error
	if err != nil {
		return domain.Response{}, wrap("get response", notFoundAs(err, domain.ErrResponseNotFound))
	}
	return toResponse(row)
}

// DeleteResponse deletes the account's response of run runID, not its run;
// domain.ErrResponseNotFound when the account has none.
func (s Responses) DeleteResponse(ctx context.Context, accountID, runID string) error {
	return s.write(ctx, "delete response", func(tx *gorm.DB) error {
		res := tx.Where("run_id = ? AND account_id = ?", runID, accountID).Delete(&responseRow{})
		if res.Error == nil && res.RowsAffected == 0 {
			return domain.ErrResponseNotFound
		}
		return res.Error
	})
}

// toResponse decodes a row.
func toResponse(row responseRow) (domain.Response, error) {
	r := domain.Response{RunID: string(row.RunID), AccountID: string(row.AccountID), AgentID: string(row.AgentID),
		PreviousRunID: row.PreviousRunID, UserID: row.UserID, Instructions: row.Instructions,
		Background: row.Background, CreatedAt: row.CreatedAt}
	if err := json.Unmarshal([]byte(row.Input), &r.Input); err != nil {
		return domain.Response{}, wrap("read response", err)
	}
	if row.Metadata != "" {
		if err := json.Unmarshal([]byte(row.Metadata), &r.Metadata); err != nil {
			return domain.Response{}, wrap("read response", err)
		}
	}
	return r, nil
}
