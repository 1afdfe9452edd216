package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// DisableAfter is how many deliveries in a row must fail for a webhook to
// be disabled.
const DisableAfter = 50

// deliveryRow is a row of webhook_deliveries. A pending row is due at
// NextAttemptAt; a worker claims it by moving NextAttemptAt past its
// attempt (a lease: if the worker dies, the row is due again) and setting
// Claim, which its result must match.
type deliveryRow struct {
	ID             ctext      `gorm:"primaryKey;index:idx_webhook_deliveries_webhook,priority:3"`
	WebhookID      ctext      `gorm:"not null;index:idx_webhook_deliveries_webhook,priority:1"`
	EventID        ctext      `gorm:"not null"`
	Type           string     `gorm:"not null"`
	Status         string     `gorm:"not null;index:idx_webhook_deliveries_due,priority:1"`
	Attempts       int        `gorm:"not null;default:0"`
	LastStatusCode int        `gorm:"not null;default:0"`
	LastError      string     `gorm:"not null;default:''"`
	NextAttemptAt  *time.Time `gorm:"index:idx_webhook_deliveries_due,priority:2"`
	Claim          string     `gorm:"not null;default:''"`
	// Final makes the next failure final: a retry asked through the API is
	// one attempt, not a new schedule.
	Final         bool      `gorm:"not null;default:false"`
	CreatedAt     time.Time `gorm:"not null;autoCreateTime:false;index:idx_webhook_deliveries_webhook,priority:2"`
	LastAttemptAt *time.Time
}

// TableName names the table.
func (deliveryRow) TableName() string { return "webhook_deliveries" }

// attemptRow is a row of webhook_attempts: every attempt of a delivery.
type attemptRow struct {
	ID         uint      `gorm:"primaryKey;autoIncrement"`
	DeliveryID ctext     `gorm:"not null;index:idx_webhook_attempts_delivery"`
	At         time.Time `gorm:"not null"`
	StatusCode int       `gorm:"not null"`
	Error      string    `gorm:"not null"`
	Millis     int64     `gorm:"not null"`
}

// TableName names the table.
func (attemptRow) TableName() string { return "webhook_attempts" }

// webhookModels are the outbox's tables, parents first.
func webhookModels() []any {
	return []any{&webhookRow{}, &eventRow{}, &deliveryRow{}, &attemptRow{}}
}

// ListDeliveries returns a page of the deliveries of webhook webhookID of
// account accountID and how many match q; ErrWebhookNotFound for a webhook
// the account lacks.
func (s Webhooks) ListDeliveries(ctx context.Context, accountID, webhookID string, q domain.DeliveryQuery) ([]domain.Delivery, int64, error) {
	db := s.read(ctx)
	if _, err := findWebhook(db, accountID, webhookID); err != nil {
		return nil, 0, wrap("list deliveries", err)
	}
	sel := db.Model(&deliveryRow{}).Where("webhook_id = ?", webhookID)
	if q.Status != "" {
		sel = sel.Where("status = ?", string(q.Status))
	}
	sel = sel.Session(&gorm.Session{})
	var total int64
	if err := sel.Count(&total).Error; err != nil {
		return nil, 0, wrap("list deliveries", err)
	}
	page, limit, past := pageBounds(q.Page, q.Limit, total)
	if past {
		return []domain.Delivery{}, total, nil
	}
	var rows []deliveryRow
	if err := sel.Order("created_at DESC, id DESC").Offset((page - 1) * limit).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, wrap("list deliveries", err)
	}
	out := make([]domain.Delivery, len(rows))
	for i, r := range rows {
		out[i] = toDelivery(r)
	}
	return out, total, nil
}

// RetryDelivery makes delivery deliveryID of webhook webhookID of account
// accountID due now, whatever its status, for one more attempt. It returns
// ErrWebhookNotFound or ErrDeliveryNotFound.
func (s Webhooks) RetryDelivery(ctx context.Context, accountID, webhookID, deliveryID string) error {
	err := s.write(ctx, "retry delivery", func(tx *gorm.DB) error {
		if _, err := findWebhook(tx, accountID, webhookID); err != nil {
			return err
		}
		res := tx.Model(&deliveryRow{}).Where("id = ? AND webhook_id = ?", deliveryID, webhookID).Updates(map[string]any{
			"status": string(domain.DeliveryPending), "next_attempt_at": s.now(), "claim": "", "final": true,
		})
		if res.Error == nil && res.RowsAffected == 0 {
			return domain.ErrDeliveryNotFound
		}
		return res.Error
	})
	if err == nil {
		s.wakeWorkers()
	}
	return err
}

// WakeWorkers is signalled after a commit that queued deliveries in this
// process, so workers need not wait for their next poll.
func (s Webhooks) WakeWorkers() <-chan struct{} { return s.wake }

// wakeWorkers signals WakeWorkers without blocking.
func (s *core) wakeWorkers() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// ClaimDeliveries claims up to n pending deliveries that are due, of
// enabled webhooks, for lease: they are not due again before it ends, so
// no other worker (of this process or another replica) sends them
// meanwhile. PostgreSQL skips rows other replicas are claiming (FOR UPDATE
// SKIP LOCKED); SQLite's single writer serializes claims. A webhook whose
// secret cannot be decrypted gets no delivery.
func (s Webhooks) ClaimDeliveries(ctx context.Context, n int, lease time.Duration) ([]domain.Job, error) {
	t := s.now()
	due := s.read(ctx).Model(&deliveryRow{}).Where("status = ? AND next_attempt_at <= ?", string(domain.DeliveryPending), t)
	var some []deliveryRow
	if err := due.Select("id").Limit(1).Find(&some).Error; err != nil || len(some) == 0 {
		return nil, wrap("claim deliveries", err) // nothing due: no write
	}
	claim, err := newClaim()
	if err != nil {
		return nil, wrap("claim deliveries", err)
	}
	lock := ""
	if s.postgres {
		lock = " FOR UPDATE OF d SKIP LOCKED"
	}
	var jobs []domain.Job
	err = s.write(ctx, "claim deliveries", func(tx *gorm.DB) error {
		var ids []string
		err := tx.Raw(`SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
			WHERE d.status = ? AND d.next_attempt_at <= ? AND w.enabled = ?
			ORDER BY d.next_attempt_at LIMIT ?`+lock, string(domain.DeliveryPending), t, true, n).Scan(&ids).Error
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := tx.Model(&deliveryRow{}).Where("id IN ?", ids).
			Updates(map[string]any{"next_attempt_at": t.Add(lease), "claim": claim}).Error; err != nil {
			return err
		}
		jobs, err = s.loadJobs(tx, ids, claim, t)
		return err
	})
	return jobs, err
}

// loadJobs reads the claimed deliveries with their events and webhooks.
func (s *core) loadJobs(tx *gorm.DB, ids []string, claim string, t time.Time) ([]domain.Job, error) {
	var rows []struct {
		ID, WebhookID, EventID, URL, Body, Secret, PrevSecret, TraceParent string
		PrevSecretUntil                                                    *time.Time
		Attempts                                                           int
		Final                                                              bool
	}
	err := tx.Raw(`SELECT d.id, d.webhook_id, d.event_id, w.url, e.body, e.trace_parent, w.secret, w.prev_secret, w.prev_secret_until,
		d.attempts, d.final
		FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN webhook_events e ON e.id = d.event_id
		WHERE d.id IN ?`, ids).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	jobs := make([]domain.Job, 0, len(rows))
	for _, r := range rows {
		job := domain.Job{DeliveryID: r.ID, WebhookID: r.WebhookID, EventID: r.EventID, URL: r.URL, Body: []byte(r.Body),
			Attempts: r.Attempts, Final: r.Final, Claim: claim, Origin: r.TraceParent}
		stored := []string{r.Secret}
		if r.PrevSecret != "" && r.PrevSecretUntil != nil && r.PrevSecretUntil.After(t) {
			stored = append(stored, r.PrevSecret)
		}
		// A secret that does not open leaves Secrets empty: the attempt
		// fails with a reason, and the other webhooks' deliveries go on.
		for _, sealed := range stored {
			secret, err := s.openSecret(sealed, r.WebhookID)
			if err != nil {
				job.Secrets = nil
				break
			}
			job.Secrets = append(job.Secrets, secret)
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// FinishAttempt records the outcome of an attempt of job. A job whose
// claim was lost (its lease ran out and another worker took it, or its
// webhook was deleted) records nothing. A delivery that fails for good
// disables its webhook when the webhook's last DisableAfter finished
// deliveries all failed.
func (s Webhooks) FinishAttempt(ctx context.Context, job domain.Job, a domain.Attempt) error {
	status, next := domain.DeliveryPending, msPtr(&a.RetryAt)
	switch {
	case a.Succeeded:
		status, next = domain.DeliverySucceeded, nil
	case a.RetryAt.IsZero():
		status, next = domain.DeliveryFailed, nil
	}
	at := a.At.UTC().Truncate(time.Millisecond)
	return s.write(ctx, "finish attempt", func(tx *gorm.DB) error {
		// A final failure locks its webhook first, so that failures finishing
		// together count one after the other: each counting only what was
		// committed, the last ones could all miss the DisableAfter-th.
		// Locking before the delivery row keeps the order DeleteWebhook takes.
		if status == domain.DeliveryFailed {
			var w webhookRow
			err := forUpdate(tx).Select("id").Take(&w, "id = ?", job.WebhookID).Error
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil // deleted: its deliveries are gone
			}
			if err != nil {
				return err
			}
		}
		res := tx.Model(&deliveryRow{}).Where("id = ? AND claim = ?", job.DeliveryID, job.Claim).Updates(map[string]any{
			"status": string(status), "attempts": gorm.Expr("attempts + 1"), "last_status_code": a.StatusCode,
			"last_error": a.Error, "last_attempt_at": at, "next_attempt_at": next, "claim": "",
		})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		err := tx.Create(&attemptRow{DeliveryID: ctext(job.DeliveryID), At: at, StatusCode: a.StatusCode,
			Error: a.Error, Millis: a.Duration.Milliseconds()}).Error
		if err != nil || status != domain.DeliveryFailed {
			return err
		}
		return disableIfFailing(tx, job.WebhookID)
	})
}

// disableIfFailing disables the webhook when its last DisableAfter
// finished deliveries all failed.
func disableIfFailing(tx *gorm.DB, webhookID string) error {
	var statuses []string
	err := tx.Model(&deliveryRow{}).Where("webhook_id = ? AND status <> ?", webhookID, string(domain.DeliveryPending)).
		Order("last_attempt_at DESC").Limit(DisableAfter).Pluck("status", &statuses).Error
	if err != nil || len(statuses) < DisableAfter {
		return err
	}
	for _, st := range statuses {
		if st != string(domain.DeliveryFailed) {
			return nil
		}
	}
	return tx.Model(&webhookRow{}).Where("id = ? AND enabled = ?", webhookID, true).Updates(map[string]any{
		"enabled": false, "disabled_reason": fmt.Sprintf("The last %d deliveries failed.", DisableAfter),
		"version": gorm.Expr("version + 1"),
	}).Error
}

// newClaim returns a random claim token.
func newClaim() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("claim token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func toDelivery(r deliveryRow) domain.Delivery {
	d := domain.Delivery{ID: string(r.ID), WebhookID: string(r.WebhookID), EventID: string(r.EventID), Type: domain.EventType(r.Type),
		Status: domain.DeliveryStatus(r.Status), Attempts: r.Attempts, LastStatusCode: r.LastStatusCode, LastError: r.LastError,
		CreatedAt: utc(r.CreatedAt)}
	if r.NextAttemptAt != nil && r.Status == string(domain.DeliveryPending) {
		d.NextAttemptAt = r.NextAttemptAt.UTC()
	}
	if r.LastAttemptAt != nil {
		d.LastAttemptAt = r.LastAttemptAt.UTC()
	}
	return d
}
