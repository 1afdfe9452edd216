package store

import (
	"context"
	"encoding/json"
	"errors"

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
	// Unreadable lists the agents (and webhooks) with a secret that opened
	// under neither key; they were left as they were.
	Unreadable []string
}

// RotateSecrets rewrites every agent's secrets, and every webhook's signing
// secrets, under the newest configured key, bound to their owner and name:
// values sealed under old or under any configured key, and values stored
// before any key was set. Each agent is one transaction, so a run that
// stopped can be run again. It returns ErrInvalid when no key is
// configured.
func (s *Store) RotateSecrets(ctx context.Context, old *secretbox.Box) (RotateResult, error) {
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
			case errors.Is(err, ErrSecretUnreadable):
				res.Unreadable = append(res.Unreadable, id)
			case errors.Is(err, ErrNotFound): // deleted meanwhile
			case err != nil:
				return res, err
			case rewritten:
				res.Agents++
			}
		}
		if len(ids) < rotateBatch {
			return res, s.rotateWebhookSecrets(ctx, old, &res)
		}
		last = ids[len(ids)-1]
	}
}

// rotateAgent re-seals the secrets of agent id and reports whether it had
// any.
func (s *Store) rotateAgent(ctx context.Context, id string, old *secretbox.Box) (bool, error) {
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
			return nil, ErrSecretUnreadable
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
