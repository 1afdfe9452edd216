package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"
)

// apiError is a Bot API failure: its error_code and retry_after.
type apiError struct {
	Code        int
	Description string
	RetryAfter  time.Duration
}

func (e *apiError) Error() string {
	return fmt.Sprintf("telegram: getUpdates: %d %s", e.Code, e.Description)
}

// getUpdates asks for the updates from offset, held up to timeout by
// Telegram. The library's own poll loop confirms a batch before it is
// handled, retries a rejected token forever and ignores retry_after, so
// the runtime polls itself and confirms an update only once its cursor is
// stored.
func getUpdates(ctx context.Context, client *http.Client, apiURL, token string, offset int64, timeout time.Duration) ([]models.Update, error) {
	body, _ := json.Marshal(map[string]any{
		"offset": offset, "timeout": int(timeout.Seconds()), "allowed_updates": []string{"message"},
	})
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(apiURL, "/")+"/bot"+token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w", redact(err, token))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: read: %w", err)
	}
	var r struct {
		OK          bool            `json:"ok"`
		Result      []models.Update `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: decode (HTTP %d): %w", resp.StatusCode, err)
	}
	if !r.OK {
		return nil, &apiError{Code: r.ErrorCode, Description: r.Description, RetryAfter: time.Duration(r.Parameters.RetryAfter) * time.Second}
	}
	return r.Result, nil
}

// redact keeps the token (part of every URL) out of an error's text.
func redact(err error, token string) error {
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), token, "***"))
}
