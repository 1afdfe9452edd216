package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/secretbox"
	"gorm.io/gorm"
)

// rotateBatch is how many agent ids RotateSecrets reads at a time.
const rotateBatch = 200

// RotateResult is what RotateSecrets did.
type RotateResult struct {
	// Agents counts the agents whose secrets were rewritten.
	Agents int
	// Webhooks counts the webhooks whose signing secrets were rewritten.
	Webhooks int
	// Answers counts the stored answers of idempotency keys rewritten.
	Answers int
	// Unreadable lists the agents (and webhooks) with a secret that opened
	// under neither key; they were left as they were.
	Unreadable []string
}

// RotateSecrets rewrites every agent's secrets, every webhook's signing
// secrets and every stored answer of an idempotency key (which may hold a
// secret shown once) under the newest configured key, bound to their owner and name:
// values sealed under old or under any configured key, and values stored
// before any key was set. Each agent is one transaction, so a run that
// stopped can be run again. It returns ErrInvalid when no key is
// configured.
func (s Agents) RotateSecrets(ctx context.Context, old *secretbox.Box) (RotateResult, error) {
	var res RotateResult
	if s.box == nil {
		return res, wrap("rotate secrets", invalidf("no secret key is configured"))
	}
	last := ""
	for {
		var ids []string
		err := s.read(ctx).Model(&agentRow{}).Where("id > ?", last).Order("id").Limit(rotateBatch).Pluck("id", &ids).Error
		if err != nil {
			return res, wrap("rotate secrets", err)
		}
		for _, id := range ids {
			rewritten, err := s.rotateAgent(ctx, id, old)
			switch {
			case errors.Is(err, domain.ErrSecretUnreadable):
				res.Unreadable = append(res.Unreadable, id)
			case errors.Is(err, domain.ErrNotFound): // deleted meanwhile
			case err != nil:
				return res, err
			case rewritten:
				res.Agents++
			}
		}
		if len(ids) < rotateBatch {
			if err := s.rotateWebhookSecrets(ctx, old, &res); err != nil {
				return res, err
			}
			return res, s.rotateIdempotentAnswers(ctx, old, &res)
		}
		last = ids[len(ids)-1]
	}
}

// rotateAgent re-seals the secrets of agent id and reports whether it had
// any.
func (s *core) rotateAgent(ctx context.Context, id string, old *secretbox.Box) (bool, error) {
	rewritten := false
	err := s.write(ctx, "rotate secrets", func(tx *gorm.DB) error {
		row, err := lockAgent(tx, "id = ?", id)
		if err != nil {
			return err
		}
		stored, err := decodeFields(row.Fields)
		if err != nil {
			return err
		}
		if !hasSecrets(stored) {
			return nil
		}
		plain, err := mapSecrets(stored, func(name string, v json.RawMessage) (json.RawMessage, error) {
			sealed, ok := sealedString(v)
			if !ok {
				return v, nil
			}
			if p, err := s.box.Open(sealed, id, name); err == nil {
				return p, nil
			}
			if p, err := old.Open(sealed, id, name); err == nil {
				return p, nil
			}
			return nil, domain.ErrSecretUnreadable
		})
		if err != nil {
			return err
		}
		resealed, err := s.sealAll(plain, id)
		if err != nil {
			return err
		}
		if err := setFields(&row, resealed); err != nil {
			return err
		}
		rewritten = true
		return tx.Model(&agentRow{}).Where("id = ?", id).Update("fields", row.Fields).Error
	})
	return rewritten, err
}

// rotateIdempotentAnswers re-seals, a batch at a time, the stored answers
// not sealed under the newest key. An answer that opens under no key is
// left as it is, and not counted Unreadable: it is lost anyway, and
// ClaimIdempotencyKey takes its key for expired, so it must not fail the
// rotation of the secrets that matter.
func (s *core) rotateIdempotentAnswers(ctx context.Context, old *secretbox.Box, res *RotateResult) error {
	var lastAccount, lastKey string
	for {
		var rows []idempotencyKeyRow
		err := s.read(ctx).Select("account_id, idem_key, body").Where("(account_id, idem_key) > (?, ?)", lastAccount, lastKey).
			Order("account_id, idem_key").Limit(rotateBatch).Find(&rows).Error
		if err != nil {
			return wrap("rotate secrets", err)
		}
		for _, row := range rows {
			if err := s.rotateIdempotentAnswer(ctx, row, old, res); err != nil {
				return err
			}
		}
		if len(rows) < rotateBatch {
			return nil
		}
		lastAccount, lastKey = string(rows[len(rows)-1].AccountID), string(rows[len(rows)-1].IdemKey)
	}
}

// rotateIdempotentAnswer re-seals the answer of row, unless a request
// changed it since it was read (the update matches the body read).
func (s *core) rotateIdempotentAnswer(ctx context.Context, row idempotencyKeyRow, old *secretbox.Box, res *RotateResult) error {
	account, key := string(row.AccountID), string(row.IdemKey)
	if len(row.Body) == 0 || s.box.Current(string(row.Body)) {
		return nil
	}
	plain, err := s.openAnswer(account, key, row.Body, old)
	if errors.Is(err, domain.ErrSecretUnreadable) {
		return nil
	}
	if err != nil {
		return err
	}
	sealed, err := s.box.Seal(plain, account, idempotencySecretName(key))
	if err != nil {
		return wrap("rotate secrets", err)
	}
	var n int64
	err = s.write(ctx, "rotate secrets", func(tx *gorm.DB) error {
		r := tx.Model(&idempotencyKeyRow{}).Where("account_id = ? AND idem_key = ? AND body = ?", account, key, row.Body).
			Update("body", []byte(sealed))
		n = r.RowsAffected
		return r.Error
	})
	res.Answers += int(n)
	return err
}
