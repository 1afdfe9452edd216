package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentd/agentd/connect"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"
)

// apiError is a Bot API failure: its error_code and retry_after.
type apiError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  time.Duration
}

func (e *apiError) Error() string {
	return fmt.Sprintf("telegram: %s: %d %s", e.Method, e.Code, e.Description)
}

// getUpdates asks for the updates from offset, held up to timeout by
// Telegram: messages, and presses of approval buttons (callback queries). The library's own poll loop confirms a batch before it is
// handled, retries a rejected token forever and ignores retry_after, so
// the runtime polls itself and confirms an update only once its cursor is
// stored.
func getUpdates(ctx context.Context, client *http.Client, apiURL, token string, offset int64, timeout time.Duration) ([]models.Update, error) {
	var updates []models.Update
	err := call(ctx, client, apiURL, token, "getUpdates", map[string]any{
		"offset": offset, "timeout": int(timeout.Seconds()), "allowed_updates": []string{"message", "callback_query"},
	}, timeout+10*time.Second, &updates)
	return updates, err
}

// webhookURL is the URL of the webhook set on the bot, "" when none: a
// webhook makes Telegram refuse polling.
func webhookURL(ctx context.Context, client *http.Client, apiURL, token string) (string, error) {
	var info struct {
		URL string `json:"url"`
	}
	err := call(ctx, client, apiURL, token, "getWebhookInfo", map[string]any{}, connect.CallTimeout, &info)
	return info.URL, err
}

// call makes one Bot API call within timeout and decodes its result into
// out; a refusal is an *apiError.
func call(ctx context.Context, client *http.Client, apiURL, token, method string, params any, timeout time.Duration, out any) error {
	body, _ := json.Marshal(params)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(apiURL, "/")+"/bot"+token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram: %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("telegram: %s: %w", method, redact(err, token))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("telegram: %s: read: %w", method, err)
	}
	var r struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("telegram: %s: decode (HTTP %d): %w", method, resp.StatusCode, err)
	}
	if !r.OK {
		return &apiError{Method: method, Code: r.ErrorCode, Description: r.Description, RetryAfter: time.Duration(r.Parameters.RetryAfter) * time.Second}
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("telegram: %s: decode result: %w", method, err)
	}
	return nil
}

// redact keeps the token (part of every URL) out of an error's text.
func redact(err error, token string) error {
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), token, "***"))
}
