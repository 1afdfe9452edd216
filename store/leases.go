package store

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// replicaRow is a row of replicas: one running service that holds, or may
// hold, connection leases; it is live until ExpiresAt.
type replicaRow struct {
	Owner     ctext     `gorm:"primaryKey"`
	ExpiresAt time.Time `gorm:"not null;autoCreateTime:false"`
}

// TableName names the table.
func (replicaRow) TableName() string { return "replicas" }

// RenewLeases extends every lease owner still holds until now+ttl, in one
// statement however many there are, and returns them: a lease of owner's
// missing from the answer has expired or was taken over.
func (s Connections) RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]domain.HeldLease, error) {
	t := s.now()
	var held []struct {
		AgentID    string
		Platform   string
		LeaseEpoch int64
	}
	err := s.write(ctx, "renew leases", func(tx *gorm.DB) error {
		return tx.Raw(`UPDATE connections SET lease_expires_at = ? WHERE lease_owner = ? AND lease_expires_at >= ?
			RETURNING agent_id, platform, lease_epoch`, t.Add(ttl), owner, t).Scan(&held).Error
	})
	out := make([]domain.HeldLease, len(held))
	for i, h := range held {
		out[i] = domain.HeldLease{ConnKey: domain.ConnKey{AgentID: h.AgentID, Platform: h.Platform}, Epoch: h.LeaseEpoch}
	}
	return out, err
}

// Heartbeat records owner as a live replica until now+ttl and returns how
// many replicas are live, owner included. Replicas gone for an hour are
// forgotten.
func (s Connections) Heartbeat(ctx context.Context, owner string, ttl time.Duration) (int, error) {
	t := s.now()
	var live int64
	err := s.write(ctx, "heartbeat", func(tx *gorm.DB) error {
		err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "owner"}}, DoUpdates: clause.AssignmentColumns([]string{"expires_at"})}).
			Create(&replicaRow{Owner: ctext(owner), ExpiresAt: t.Add(ttl)}).Error
		if err != nil {
			return err
		}
		if err := tx.Where("expires_at < ?", t.Add(-time.Hour)).Delete(&replicaRow{}).Error; err != nil {
			return err
		}
		return tx.Model(&replicaRow{}).Where("expires_at >= ?", t).Count(&live).Error
	})
	return int(live), err
}

// LeaveReplicas forgets owner as a replica, so the others count it out at
// once when it stops.
func (s Connections) LeaveReplicas(ctx context.Context, owner string) error {
	return s.write(ctx, "leave replicas", func(tx *gorm.DB) error {
		return tx.Where("owner = ?", owner).Delete(&replicaRow{}).Error
	})
}

// LeasedElsewhere returns the connections whose live lease another owner
// than owner holds: the ones owner need not try to acquire.
func (s Connections) LeasedElsewhere(ctx context.Context, owner string) ([]domain.ConnKey, error) {
	var rows []domain.ConnKey
	err := s.read(ctx).Model(&connectionRow{}).Select("agent_id, platform").
		Where("lease_owner <> ? AND lease_expires_at >= ?", owner, s.now()).Scan(&rows).Error
	return rows, wrap("leased elsewhere", err)
}

// ConnectionHolder is the owner of the live lease on the agent's
// connection to platform: the replica running it now; "" when none does.
func (s Connections) ConnectionHolder(ctx context.Context, agentID, platform string) (string, error) {
	var owners []string
	err := s.read(ctx).Model(&connectionRow{}).Where("agent_id = ? AND platform = ? AND lease_expires_at >= ?", agentID, platform, s.now()).
		Pluck("lease_owner", &owners).Error
	if err != nil || len(owners) == 0 {
		return "", wrap("connection holder", err)
	}
	return owners[0], nil
}

// ReleaseLeases frees every lease owner still holds, in one statement,
// leaving the connections' states as they are: a stopping replica's last
// word for the leases its runners could not release in time.
func (s Connections) ReleaseLeases(ctx context.Context, owner string) error {
	return s.write(ctx, "release leases", func(tx *gorm.DB) error {
		return tx.Model(&connectionRow{}).Where("lease_owner = ? AND lease_expires_at IS NOT NULL", owner).
			Update("lease_expires_at", nil).Error
	})
}
