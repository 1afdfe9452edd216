package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/secretbox"
	"gorm.io/gorm"
)

// SecretPrefix starts every webhook secret: `whsec_` + base64 of the key.
const SecretPrefix = "whsec_"

// rotationOverlap is how long a rotated-out secret still signs deliveries.
const rotationOverlap = 24 * time.Hour

// webhookRow is a row of webhooks. Secret and PrevSecret are sealed under
// the secret key when one is configured, with the webhook id as owner.
type webhookRow struct {
	ID              ctext  `gorm:"primaryKey;index:idx_webhooks_account_created,priority:3"`
	AccountID       ctext  `gorm:"not null;index:idx_webhooks_account_created,priority:1"`
	URL             string `gorm:"not null"`
	Events          string `gorm:"not null"` // JSON array
	Description     string `gorm:"not null;default:''"`
	AgentID         ctext  `gorm:"not null;default:''"`
	Enabled         bool   `gorm:"not null"`
	DisabledReason  string `gorm:"not null;default:''"`
	Secret          string `gorm:"not null"`
	PrevSecret      string `gorm:"not null;default:''"`
	PrevSecretUntil *time.Time
	CreatedAt       time.Time `gorm:"not null;autoCreateTime:false;index:idx_webhooks_account_created,priority:2"`
	UpdatedAt       time.Time `gorm:"not null;autoUpdateTime:false"`
	// Version grows with every change Get Webhook shows: its ETag.
	Version int64 `gorm:"not null;default:1"`
}

// TableName names the table.
func (webhookRow) TableName() string { return "webhooks" }

// CreateWebhook stores w as a new webhook of w.AccountID with a fresh
// secret, returned in clear in Secret. A non-empty w.AgentID must name an
// agent of the account (else an ErrInvalid naming agentId). It returns an
// ErrQuotaExceeded *Error when the account has WebhookQuota webhooks already,
// an ErrInvalid naming events for an empty or unknown event type, and
// domain.ErrNotFound for an unknown account.
func (s Webhooks) CreateWebhook(ctx context.Context, w domain.Webhook) (domain.Webhook, error) {
	events, err := encodeEvents(w.Events)
	if err != nil {
		return domain.Webhook{}, wrap("create webhook", err)
	}
	secret, err := newSecret()
	if err != nil {
		return domain.Webhook{}, wrap("create webhook", err)
	}
	t := s.now()
	row := webhookRow{ID: ctext(newID("wh_", t)), AccountID: ctext(w.AccountID), URL: w.URL, Events: events,
		Description: w.Description, AgentID: ctext(w.AgentID), Enabled: w.Enabled, CreatedAt: t, UpdatedAt: t}
	if row.Secret, err = s.sealSecret(secret, string(row.ID)); err != nil {
		return domain.Webhook{}, wrap("create webhook", err)
	}
	err = s.write(ctx, "create webhook", func(tx *gorm.DB) error {
		var acct accountRow
		if err := forUpdate(tx).Select("id").Take(&acct, "id = ?", w.AccountID).Error; err != nil {
			return err
		}
		var used int64
		if err := tx.Model(&webhookRow{}).Where("account_id = ?", w.AccountID).Count(&used).Error; err != nil {
			return err
		}
		if used >= domain.WebhookQuota {
			return quotaError("webhook", domain.WebhookQuota, int(used))
		}
		if w.AgentID != "" {
			if err := ownedAgent(tx, w.AccountID, w.AgentID); isNotFound(err) {
				return fieldError("agentId", "is not an agent of this account")
			} else if err != nil {
				return err
			}
		}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		return countOnAccount(tx, w.AccountID, "webhook_count", 1)
	})
	if err != nil {
		return domain.Webhook{}, err
	}
	out := toWebhook(row)
	out.Secret = secret
	return out, nil
}

// GetWebhook returns webhook id of account accountID; ErrWebhookNotFound
// for a missing one or another account's.
func (s Webhooks) GetWebhook(ctx context.Context, accountID, id string) (domain.Webhook, error) {
	row, err := findWebhook(s.read(ctx), accountID, id)
	if err != nil {
		return domain.Webhook{}, wrap("get webhook", err)
	}
	return toWebhook(row), nil
}

// findWebhook reads a webhook of the account; ErrWebhookNotFound if none.
func findWebhook(db *gorm.DB, accountID, id string) (webhookRow, error) {
	var row webhookRow
	err := db.Take(&row, "id = ? AND account_id = ?", id, accountID).Error
	if isNotFound(err) {
		return row, domain.ErrWebhookNotFound
	}
	return row, err
}

// ListWebhooks returns a page of the account's webhooks, the oldest first,
// and how many it has.
func (s Webhooks) ListWebhooks(ctx context.Context, accountID string, page, limit int) ([]domain.Webhook, int64, error) {
	db := s.read(ctx).Model(&webhookRow{}).Where("account_id = ?", accountID).Session(&gorm.Session{})
	var total int64
	if err := db.Count(&total).Error; err != nil {
		return nil, 0, wrap("list webhooks", err)
	}
	page, limit, past := pageBounds(page, limit, total)
	if past {
		return []domain.Webhook{}, total, nil
	}
	var rows []webhookRow
	if err := db.Order("created_at, id").Offset((page - 1) * limit).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, wrap("list webhooks", err)
	}
	out := make([]domain.Webhook, len(rows))
	for i, r := range rows {
		out[i] = toWebhook(r)
	}
	return out, total, nil
}

// UpdateWebhook applies c to webhook id of account accountID and returns it
// with the names of the members whose value changed, sorted. UpdatedAt and
// the version move only when something changed; enabling clears
// DisabledReason. With ifVersion other than AnyVersion it changes nothing
// and returns ErrPreconditionFailed unless that is the webhook's version.
// It returns domain.ErrWebhookNotFound for a missing webhook or another
// account's, and an ErrInvalid naming events for an empty or unknown event
// type.
func (s Webhooks) UpdateWebhook(ctx context.Context, accountID, id string, c domain.WebhookChanges, ifVersion int64) (domain.Webhook, []string, error) {
	var out domain.Webhook
	changes := []string{}
	err := s.write(ctx, "update webhook", func(tx *gorm.DB) error {
		changes = changes[:0]
		row, err := findWebhook(forUpdate(tx), accountID, id)
		if err != nil {
			return err
		}
		if err := checkVersion(row.Version, ifVersion); err != nil {
			return err
		}
		if c.URL != nil && *c.URL != row.URL {
			row.URL = *c.URL
			changes = append(changes, "url")
		}
		if c.Events != nil {
			events, err := encodeEvents(c.Events)
			if err != nil {
				return err
			}
			if events != row.Events {
				row.Events = events
				changes = append(changes, "events")
			}
		}
		if c.Description != nil && *c.Description != row.Description {
			row.Description = *c.Description
			changes = append(changes, "description")
		}
		if c.Enabled != nil && *c.Enabled != row.Enabled {
			row.Enabled = *c.Enabled
			if row.Enabled {
				row.DisabledReason = ""
			}
			changes = append(changes, "enabled")
		}
		sort.Strings(changes)
		if len(changes) > 0 {
			row.UpdatedAt, row.Version = s.now(), row.Version+1
			if err := tx.Model(&webhookRow{}).Where("id = ?", row.ID).Updates(map[string]any{
				"url": row.URL, "events": row.Events, "description": row.Description, "enabled": row.Enabled,
				"disabled_reason": row.DisabledReason, "updated_at": row.UpdatedAt, "version": row.Version,
			}).Error; err != nil {
				return err
			}
		}
		out = toWebhook(row)
		return nil
	})
	if err != nil {
		return domain.Webhook{}, nil, err
	}
	return out, changes, nil
}

// DeleteWebhook deletes webhook id of account accountID with its
// deliveries, pending ones included, and their attempts; with ifVersion
// other than AnyVersion, only when that is its version
// (ErrPreconditionFailed). It returns domain.ErrWebhookNotFound for a
// missing webhook or another account's.
func (s Webhooks) DeleteWebhook(ctx context.Context, accountID, id string, ifVersion int64) error {
	return s.write(ctx, "delete webhook", func(tx *gorm.DB) error {
		row, err := findWebhook(forUpdate(tx), accountID, id)
		if err != nil {
			return err
		}
		if err := checkVersion(row.Version, ifVersion); err != nil {
			return err
		}
		if err := tx.Where("id = ?", id).Delete(&webhookRow{}).Error; err != nil {
			return err
		}
		if err := countOnAccount(tx, accountID, "webhook_count", -1); err != nil {
			return err
		}
		mine := tx.Model(&deliveryRow{}).Select("id").Where("webhook_id = ?", id)
		if err := tx.Where("delivery_id IN (?)", mine).Delete(&attemptRow{}).Error; err != nil {
			return err
		}
		return tx.Where("webhook_id = ?", id).Delete(&deliveryRow{}).Error
	})
}

// RotateWebhookSecret gives webhook id of account accountID a new secret,
// returned in clear in Secret; the old one keeps signing for 24 hours. It
// returns domain.ErrWebhookNotFound for a missing webhook or another
// account's.
func (s Webhooks) RotateWebhookSecret(ctx context.Context, accountID, id string) (domain.Webhook, error) {
	secret, err := newSecret()
	if err != nil {
		return domain.Webhook{}, wrap("rotate webhook secret", err)
	}
	var out domain.Webhook
	err = s.write(ctx, "rotate webhook secret", func(tx *gorm.DB) error {
		row, err := findWebhook(forUpdate(tx), accountID, id)
		if err != nil {
			return err
		}
		sealed, err := s.sealSecret(secret, id)
		if err != nil {
			return err
		}
		until := s.now().Add(rotationOverlap)
		if err := tx.Model(&webhookRow{}).Where("id = ?", id).Updates(map[string]any{
			"secret": sealed, "prev_secret": row.Secret, "prev_secret_until": until,
		}).Error; err != nil {
			return err
		}
		out = toWebhook(row)
		return nil
	})
	if err != nil {
		return domain.Webhook{}, err
	}
	out.Secret = secret
	return out, nil
}

// TestWebhook queues a webhook.test event to webhook id of account
// accountID alone. It returns domain.ErrWebhookNotFound for a missing
// webhook or another account's, and domain.ErrWebhookDisabled for a
// disabled one, whose delivery would wait unsent.
func (s Webhooks) TestWebhook(ctx context.Context, accountID, id string) error {
	return s.writeEvents(ctx, "test webhook", func(tx *gorm.DB, emit emitFunc) error {
		w, err := findWebhook(tx, accountID, id)
		if err != nil {
			return err
		}
		if !w.Enabled {
			return domain.ErrWebhookDisabled // its delivery would wait, unsent, until it is enabled
		}
		return emit(domain.Event{AccountID: accountID, Type: domain.EventWebhookTest, WebhookID: id,
			Data: map[string]string{"webhookId": id}})
	})
}

// encodeEvents checks an events list and encodes it for its column.
func encodeEvents(events []string) (string, error) {
	if len(events) == 0 {
		return "", fieldError("events", "must name at least one event type")
	}
	for _, e := range events {
		if e != domain.AllEvents && !slices.Contains(domain.EventTypes, domain.EventType(e)) {
			return "", fieldError("events", fmt.Sprintf("%q is not an event type", e))
		}
	}
	b, err := json.Marshal(events)
	return string(b), err
}

// newSecret returns a fresh webhook secret.
func newSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// webhookSecretName binds a sealed webhook secret (current or rotated out:
// rotation moves the sealed value between the two columns) to its use.
const webhookSecretName = "webhook signing secret"

// sealSecret encrypts a webhook secret when a key is configured.
func (s *core) sealSecret(secret, owner string) (string, error) {
	if s.box == nil {
		return secret, nil
	}
	return s.box.Seal([]byte(secret), owner, webhookSecretName)
}

// rotateWebhookSecrets re-seals every webhook's secrets under the
// configured key, one transaction per webhook (see RotateSecrets).
func (s *core) rotateWebhookSecrets(ctx context.Context, old *secretbox.Box, res *RotateResult) error {
	var ids []string
	if err := s.read(ctx).Model(&webhookRow{}).Order("id").Pluck("id", &ids).Error; err != nil {
		return wrap("rotate secrets", err)
	}
	for _, id := range ids {
		err := s.write(ctx, "rotate secrets", func(tx *gorm.DB) error {
			var row webhookRow
			if err := forUpdate(tx).Take(&row, "id = ?", id).Error; err != nil {
				return err
			}
			cols := map[string]any{}
			for col, stored := range map[string]string{"secret": row.Secret, "prev_secret": row.PrevSecret} {
				if stored == "" {
					continue
				}
				plain, err := s.openSecret(stored, id)
				if err != nil && old != nil && secretbox.Sealed(stored) {
					var p []byte
					p, err = old.Open(stored, id, webhookSecretName)
					plain = string(p)
				}
				if err != nil {
					return domain.ErrSecretUnreadable
				}
				if cols[col], err = s.sealSecret(plain, id); err != nil {
					return err
				}
			}
			return tx.Model(&webhookRow{}).Where("id = ?", id).Updates(cols).Error
		})
		switch {
		case errors.Is(err, domain.ErrSecretUnreadable):
			res.Unreadable = append(res.Unreadable, id)
		case errors.Is(err, domain.ErrNotFound): // deleted meanwhile
		case err != nil:
			return err
		default:
			res.Webhooks++
		}
	}
	return nil
}

// openSecret decrypts a stored webhook secret; a plain one is returned as is.
func (s *core) openSecret(stored, owner string) (string, error) {
	if !secretbox.Sealed(stored) {
		return stored, nil
	}
	plain, err := s.box.Open(stored, owner, webhookSecretName)
	if err != nil {
		return "", fmt.Errorf("%w: webhook %s: %v", domain.ErrSecretUnreadable, owner, err)
	}
	return string(plain), nil
}

func toWebhook(r webhookRow) domain.Webhook {
	var events []string
	_ = json.Unmarshal([]byte(r.Events), &events) // written by encodeEvents
	return domain.Webhook{ID: string(r.ID), AccountID: string(r.AccountID), URL: r.URL, Events: events,
		Description: r.Description, AgentID: string(r.AgentID), Enabled: r.Enabled, DisabledReason: r.DisabledReason,
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt), Version: r.Version}
}
