package store

import (
	"context"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
)

// contactRow is a platform user who wrote to an agent's bot in private:
// a settings.<platform>.adminUsers entry that names a username finds the
// user (and so the private chat) through it, since no platform resolves a
// username to a user for a bot. Username is lower-cased, without '@'.
type contactRow struct {
	AgentID  ctext     `gorm:"primaryKey;index:idx_platform_contacts_username,priority:1"`
	Platform ctext     `gorm:"primaryKey;index:idx_platform_contacts_username,priority:2"`
	UserID   ctext     `gorm:"primaryKey"`
	Username ctext     `gorm:"not null;index:idx_platform_contacts_username,priority:3"`
	SeenAt   time.Time `gorm:"not null;autoCreateTime:false"`
}

// TableName names the table.
func (contactRow) TableName() string { return "platform_contacts" }

// contactName is a username as stored and looked up.
func contactName(username string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimSpace(username), "@"))
}

// RememberContact records that platform user userID, named username,
// wrote to agentID's bot in private (its username moves with it).
// ErrNotFound when the agent is gone.
func (s Connections) RememberContact(ctx context.Context, agentID, platform, userID, username string) error {
	// Written only while the agent exists (as a connection is), so none
	// outlives its agent's delete.
	res := s.w.WithContext(ctx).Exec(`INSERT INTO platform_contacts (agent_id, platform, user_id, username, seen_at)
		SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM agents WHERE id = ?)
		ON CONFLICT (agent_id, platform, user_id) DO UPDATE SET username = excluded.username, seen_at = excluded.seen_at`,
		agentID, platform, userID, contactName(username), s.now(), agentID)
	if res.Error == nil && res.RowsAffected == 0 {
		return wrap("remember contact", domain.ErrNotFound)
	}
	return wrap("remember contact", res.Error)
}

// ContactByUsername returns the id of the platform user named username
// (with or without '@', any case) who wrote to agentID's bot in private,
// the one seen last should two have held the name. ErrNotFound when none
// did.
func (s Connections) ContactByUsername(ctx context.Context, agentID, platform, username string) (string, error) {
	var row contactRow
	err := s.read(ctx).Where("agent_id = ? AND platform = ? AND username = ?", agentID, platform, contactName(username)).
		Order("seen_at DESC").Take(&row).Error
	if err != nil {
		return "", wrap("contact by username", err)
	}
	return string(row.UserID), nil
}
