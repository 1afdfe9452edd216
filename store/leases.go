package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ConnKey names one agent's connection to one platform.
type ConnKey struct {
	AgentID  string
	Platform string
}

// HeldLease is a lease as a batch renewal found it: still its owner's.
type HeldLease struct {
	ConnKey
	Epoch int64
}

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
func (s *Store) RenewLeases(ctx context.Context, owner string, ttl time.Duration) ([]HeldLease, error) {
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
	out := make([]HeldLease, len(held))
	for i, h := range held {
		out[i] = HeldLease{ConnKey{h.AgentID, h.Platform}, h.LeaseEpoch}
	}
	return out, err
}

// Heartbeat records owner as a live replica until now+ttl and returns how
// many replicas are live, owner included. Replicas gone for an hour are
// forgotten.
func (s *Store) Heartbeat(ctx context.Context, owner string, ttl time.Duration) (int, error) {
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
func (s *Store) LeaveReplicas(ctx context.Context, owner string) error {
	return s.write(ctx, "leave replicas", func(tx *gorm.DB) error {
		return tx.Where("owner = ?", owner).Delete(&replicaRow{}).Error
	})
}

// FreeConnections returns up to limit connections whose lease no other
// owner than owner holds, leaving out those disabled or in error (they
// wait for their configuration to change). Connections never run have no
// row and are not among them.
func (s *Store) FreeConnections(ctx context.Context, owner string, limit int) ([]ConnKey, error) {
	var rows []ConnKey
	err := s.read(ctx).Model(&connectionRow{}).Select("agent_id, platform").
		Where("(lease_expires_at IS NULL OR lease_expires_at < ? OR lease_owner = ?) AND state NOT IN ?",
			s.now(), owner, []string{string(ConnDisabled), string(ConnError)}).
		Limit(limit).Scan(&rows).Error
	return rows, wrap("free connections", err)
}
