package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/secretbox"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// IdempotencyRetention is how long a finished keyed request is answered
// again from what it stored.
const IdempotencyRetention = 24 * time.Hour

// idempotencyPruneBatch bounds the expired keys one claim deletes.
const idempotencyPruneBatch = 100

// The states of an idempotency key.
const (
	idempotencyInFlight = "in_flight"
	idempotencyDone     = "done"
)

// idempotencyKeyRow is a row of idempotency_keys.
type idempotencyKeyRow struct {
	AccountID   ctext     `gorm:"primaryKey"`
	IdemKey     ctext     `gorm:"primaryKey"`
	Fingerprint string    `gorm:"not null"`
	State       string    `gorm:"not null"`
	Owner       string    `gorm:"not null"`
	Status      int       `gorm:"not null"`
	Header      []byte    `gorm:"not null"`
	Body        []byte    `gorm:"not null"`
	LeaseUntil  time.Time `gorm:"not null"`
	CreatedAt   time.Time `gorm:"not null;autoCreateTime:false"`
	ExpiresAt   time.Time `gorm:"not null;index:idx_idempotency_keys_expires"`
}

// TableName names the table.
func (idempotencyKeyRow) TableName() string { return "idempotency_keys" }

// ClaimIdempotencyKey claims r.Key of account r.AccountID for the request
// r.Fingerprint. The claim is one INSERT ... ON CONFLICT, so two replicas
// racing for a key get one winner. A key already claimed answers
// ErrIdempotencyKeyInUse while its request runs, then the stored answer
// (Replay) for the same fingerprint and ErrIdempotencyKeyReused for
// another. A key past IdempotencyRetention, or in flight past its
// lease, is taken over. Each claim also deletes a bounded batch of expired
// keys.
func (s Idempotency) ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRequest) (domain.IdempotencyClaim, error) {
	at := s.now()
	fresh := idempotencyKeyRow{
		AccountID: ctext(r.AccountID), IdemKey: ctext(r.Key), Fingerprint: r.Fingerprint,
		State: idempotencyInFlight, Owner: newID("idem_", at), Header: []byte("{}"), Body: []byte{},
		LeaseUntil: at.Add(r.Lease), CreatedAt: at, ExpiresAt: at.Add(IdempotencyRetention),
	}
	var claim domain.IdempotencyClaim
	err := s.write(ctx, "claim idempotency key", func(tx *gorm.DB) error {
		expired := tx.Model(&idempotencyKeyRow{}).Select("account_id, idem_key").
			Where("expires_at <= ?", at).Limit(idempotencyPruneBatch)
		if err := tx.Where("(account_id, idem_key) IN (?)", expired).Delete(&idempotencyKeyRow{}).Error; err != nil {
			return err
		}
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&fresh)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			claim.Token = fresh.Owner
			return nil
		}
		var row idempotencyKeyRow
		if err := tx.Where("account_id = ? AND idem_key = ?", r.AccountID, r.Key).Take(&row).Error; err != nil {
			return err
		}
		takeOver := func() error {
			if err := takeOverKey(tx, row.Owner, fresh); err != nil {
				return err
			}
			claim.Token = fresh.Owner
			return nil
		}
		if !row.ExpiresAt.After(at) || (row.State == idempotencyInFlight && !row.LeaseUntil.After(at)) {
			// Its owner died, or it is past its retention: take it over,
			// unless another request did first.
			return takeOver()
		}
		switch {
		case row.State == idempotencyInFlight:
			return domain.ErrIdempotencyKeyInUse
		case row.Fingerprint != r.Fingerprint:
			return domain.ErrIdempotencyKeyReused
		}
		answer, err := s.storedAnswer(row)
		if errors.Is(err, domain.ErrSecretUnreadable) {
			// Sealed under a key no longer configured (dropped without a
			// rotation): the answer is lost, so the key is treated as
			// expired and the request runs afresh; failing every retry
			// until the retention ends would help no one.
			return takeOver()
		}
		if err != nil {
			return err
		}
		claim.Replay = &answer
		return nil
	})
	return claim, err
}

// takeOverKey gives the key of fresh to fresh's request, unless another
// request took it from its owner (prevOwner) first: then
// ErrIdempotencyKeyInUse.
func takeOverKey(tx *gorm.DB, prevOwner string, fresh idempotencyKeyRow) error {
	res := tx.Model(&idempotencyKeyRow{}).
		Where("account_id = ? AND idem_key = ? AND owner = ?", fresh.AccountID, fresh.IdemKey, prevOwner).
		Updates(map[string]any{
			"fingerprint": fresh.Fingerprint, "state": fresh.State, "owner": fresh.Owner,
			"status": 0, "header": fresh.Header, "body": fresh.Body, "lease_until": fresh.LeaseUntil,
			"created_at": fresh.CreatedAt, "expires_at": fresh.ExpiresAt,
		})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return domain.ErrIdempotencyKeyInUse
	}
	return nil
}

// storedAnswer reads the answer stored in row, opening a sealed body;
// ErrSecretUnreadable when it opens under no configured key.
func (s *core) storedAnswer(row idempotencyKeyRow) (domain.IdempotentAnswer, error) {
	answer := domain.IdempotentAnswer{Status: row.Status, Body: row.Body}
	if err := json.Unmarshal(row.Header, &answer.Header); err != nil {
		return answer, err
	}
	body, err := s.openAnswer(string(row.AccountID), string(row.IdemKey), row.Body, nil)
	answer.Body = body
	return answer, err
}

// openAnswer opens the stored body of key of account accountID under the
// configured keys, else under old (when given); a body stored plain is
// returned as is. ErrSecretUnreadable when it opens under neither.
func (s *core) openAnswer(accountID, key string, body []byte, old *secretbox.Box) ([]byte, error) {
	if !secretbox.Sealed(string(body)) {
		return body, nil
	}
	var err error
	for _, box := range []*secretbox.Box{s.box, old} {
		if box == nil {
			continue
		}
		var plain []byte
		if plain, err = box.Open(string(body), accountID, idempotencySecretName(key)); err == nil {
			return plain, nil
		}
	}
	if err == nil {
		err = errors.New("no secret key is configured")
	}
	return nil, fmt.Errorf("%w: %v", domain.ErrSecretUnreadable, err)
}

// CompleteIdempotencyKey stores a, the answer of the request that holds the
// claim token on key of account accountID, for IdempotencyRetention from
// now. CodeLeaseLost when the claim was taken over meanwhile.
func (s Idempotency) CompleteIdempotencyKey(ctx context.Context, accountID, key, token string, a domain.IdempotentAnswer) error {
	header, err := json.Marshal(a.Header)
	if err != nil {
		return wrap("complete idempotency key", err)
	}
	if a.Body == nil {
		a.Body = []byte{}
	}
	// An answer may hold a secret shown once (a webhook's): it is sealed
	// like every secret at rest.
	if s.box != nil {
		sealed, err := s.box.Seal(a.Body, accountID, idempotencySecretName(key))
		if err != nil {
			return wrap("complete idempotency key", err)
		}
		a.Body = []byte(sealed)
	}
	at := s.now()
	return s.write(ctx, "complete idempotency key", func(tx *gorm.DB) error {
		return updateClaim(tx, accountID, key, token, map[string]any{"state": idempotencyDone, "status": a.Status,
			"header": header, "body": a.Body, "expires_at": at.Add(IdempotencyRetention)})
	})
}

// RenewIdempotencyKey extends the lease of the claim token on key of
// account accountID to lease from now: a request that runs longer than one
// lease (a turn of several provider and tool calls) keeps its key, while a
// replica that dies stops renewing and its keys are taken over one lease
// later. CodeLeaseLost when the claim was taken over or settled.
func (s Idempotency) RenewIdempotencyKey(ctx context.Context, accountID, key, token string, lease time.Duration) error {
	return s.write(ctx, "renew idempotency key", func(tx *gorm.DB) error {
		// Counted from when the write runs, not from when it queued.
		return updateClaim(tx, accountID, key, token, map[string]any{"lease_until": s.now().Add(lease)})
	})
}

// updateClaim sets values on key of account accountID while token holds
// it in flight; CodeLeaseLost when it does not.
func updateClaim(tx *gorm.DB, accountID, key, token string, values map[string]any) error {
	res := tx.Model(&idempotencyKeyRow{}).
		Where("account_id = ? AND idem_key = ? AND owner = ? AND state = ?", accountID, key, token, idempotencyInFlight).
		Updates(values)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return &domain.Error{Code: domain.CodeLeaseLost, Resource: "idempotency_key"}
	}
	return nil
}

// idempotencySecretName binds a sealed answer to its key.
func idempotencySecretName(key string) string { return "idempotency-key:" + key }

// ReleaseIdempotencyKey gives up the claim token on key of account
// accountID (its request failed and changed nothing), so that a retry runs
// the request afresh. Nothing happens when the claim was taken over.
func (s Idempotency) ReleaseIdempotencyKey(ctx context.Context, accountID, key, token string) error {
	return s.write(ctx, "release idempotency key", func(tx *gorm.DB) error {
		return tx.Where("account_id = ? AND idem_key = ? AND owner = ? AND state = ?", accountID, key, token, idempotencyInFlight).
			Delete(&idempotencyKeyRow{}).Error
	})
}
