// Package signature signs and verifies HTTP requests per Standard Webhooks
// (https://www.standardwebhooks.com): the webhook-id, webhook-timestamp and
// webhook-signature headers, and "v1," + the base64 HMAC-SHA256 of
// "id.timestamp.body" keyed with a "whsec_" secret.
//
// Webhook deliveries (package webhook) and calls to action handlers
// (package tools) are signed alike; this leaf package is what they share,
// so neither imports the other. It imports nothing of agentd.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// secretPrefix starts a secret; the HMAC key is the base64 after it.
const secretPrefix = "whsec_"

// ErrInvalid means no signature of a delivery verifies with the secret.
var ErrInvalid = errors.New("webhook: no valid signature")

// Sign returns the Standard Webhooks signature of a message: "v1," and the
// base64 HMAC-SHA256 of "id.timestamp.body" keyed with the secret's
// decoded bytes.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil {
		return "", fmt.Errorf("webhook: secret is not whsec_ + base64: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Verify checks a received delivery as a receiver should: one of the
// space-separated signatures of h matches secret, and the timestamp is
// within tolerance of now (replays are refused).
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: bad %s: %w", HeaderTimestamp, err)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook: timestamp %d is too far from now", ts)
	}
	want, err := Sign(secret, h.Get(HeaderID), ts, body)
	if err != nil {
		return err
	}
	for _, sig := range strings.Fields(h.Get(HeaderSignature)) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return ErrInvalid
}
