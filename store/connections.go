package store

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// connectionRow is a row of connections: the lease, the cursor and the
// state of one agent's connection to one platform.
type connectionRow struct {
	AgentID        ctext `gorm:"primaryKey"`
	Platform       ctext `gorm:"primaryKey;index:idx_connections_platform_bot,priority:1"`
	BotID          ctext `gorm:"not null;default:'';index:idx_connections_platform_bot,priority:2"`
	BotUsername    string
	State          string    `gorm:"not null"`
	Reason         string    `gorm:"not null;default:''"`
	Since          time.Time `gorm:"not null;autoCreateTime:false"`
	LastEventAt    *time.Time
	MessagesIn     int64  `gorm:"not null;default:0"`
	MessagesOut    int64  `gorm:"not null;default:0"`
	Cursor         string `gorm:"not null;default:''"`
	LeaseOwner     string `gorm:"not null;default:'';index:idx_connections_lease_owner"`
	LeaseEpoch     int64  `gorm:"not null;default:0"`
	LeaseExpiresAt *time.Time
}

// TableName names the table.
func (connectionRow) TableName() string { return "connections" }

// platformMessageRow records a platform message an agent has taken to
// answer; its key makes each one answered at most once.
type platformMessageRow struct {
	AgentID   ctext     `gorm:"primaryKey"`
	Platform  ctext     `gorm:"primaryKey"`
	MessageID ctext     `gorm:"primaryKey"`
	CreatedAt time.Time `gorm:"not null;autoCreateTime:false;index:idx_platform_messages_created"`
}

// TableName names the table.
func (platformMessageRow) TableName() string { return "platform_messages" }

// connectionModels are the tables of platform connections, deleted with
// their agent.
func connectionModels() []any {
	return []any{&connectionRow{}, &platformMessageRow{}, &inboxRow{}, &contactRow{}}
}

// AcquireLease gives owner the lease of agentID's connection to platform
// until now+ttl when it is free, expired or already owner's, with a new
// epoch; ok is false when another owner holds it. The lease's clock is the
// replicas' own (kept in step by NTP). It returns ErrNotFound when the agent
// does not exist.
func (s Connections) AcquireLease(ctx context.Context, agentID, platform, owner string, ttl time.Duration) (domain.Lease, bool, error) {
	t := s.now()
	var row connectionRow
	acquired := false
	err := s.write(ctx, "acquire lease", func(tx *gorm.DB) error {
		// Created only while the agent exists, so a runner late for a
		// delete cannot bring its row back.
		res := tx.Exec(`INSERT INTO connections (agent_id, platform, bot_id, state, reason, since, messages_in, messages_out, cursor, lease_owner, lease_epoch)
			SELECT ?, ?, '', ?, '', ?, 0, 0, '', '', 0 WHERE EXISTS (SELECT 1 FROM agents WHERE id = ?)
			ON CONFLICT DO NOTHING`, agentID, platform, string(domain.ConnConnecting), t, agentID)
		if res.Error != nil {
			return res.Error
		}
		res = tx.Model(&connectionRow{}).
			Where("agent_id = ? AND platform = ? AND (lease_expires_at IS NULL OR lease_expires_at < ? OR lease_owner = ?)",
				agentID, platform, t, owner).
			Updates(map[string]any{"lease_owner": owner, "lease_epoch": gorm.Expr("lease_epoch + 1"), "lease_expires_at": t.Add(ttl)})
		if res.Error != nil {
			return res.Error
		}
		acquired = res.RowsAffected == 1
		return tx.Take(&row, "agent_id = ? AND platform = ?", agentID, platform).Error
	})
	if err != nil || !acquired {
		return domain.Lease{}, false, err
	}
	return leaseOf(row), true, nil
}

func leaseOf(r connectionRow) domain.Lease {
	l := domain.Lease{AgentID: string(r.AgentID), Platform: string(r.Platform), Owner: r.LeaseOwner, Epoch: r.LeaseEpoch, Cursor: r.Cursor}
	if r.LeaseExpiresAt != nil {
		l.ExpiresAt = r.LeaseExpiresAt.UTC()
	}
	return l
}

// held selects the row of l while l is still its lease.
func (s *core) held(tx *gorm.DB, l domain.Lease) *gorm.DB {
	return tx.Model(&connectionRow{}).Where("agent_id = ? AND platform = ? AND lease_owner = ? AND lease_epoch = ? AND lease_expires_at >= ?",
		l.AgentID, l.Platform, l.Owner, l.Epoch, s.now())
}

// updateHeld applies cols to the row of l; ErrLeaseLost when l is no
// longer held.
func (s *core) updateHeld(ctx context.Context, op string, l domain.Lease, cols map[string]any) error {
	return s.write(ctx, op, func(tx *gorm.DB) error { return updateHeldTx(s.held(tx, l), cols) })
}

func updateHeldTx(q *gorm.DB, cols map[string]any) error {
	res := q.Updates(cols)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return domain.ErrLeaseLost
	}
	return nil
}

// ReleaseLease frees l so another runner may take over at once, and stores
// state as the connection's state (see SetConnectionState). Releasing a
// lease already lost does nothing.
func (s Connections) ReleaseLease(ctx context.Context, l domain.Lease, state domain.ConnState, reason string) error {
	err := s.writeEvents(ctx, "release lease", func(tx *gorm.DB, emit emitFunc) error {
		if err := s.setConnectionState(tx, emit, l, state, reason); err != nil {
			return err
		}
		return tx.Model(&connectionRow{}).Where("agent_id = ? AND platform = ? AND lease_owner = ? AND lease_epoch = ?",
			l.AgentID, l.Platform, l.Owner, l.Epoch).Update("lease_expires_at", nil).Error
	})
	if errors.Is(err, domain.ErrLeaseLost) {
		return nil
	}
	return err
}

// SaveCursor stores the platform's cursor under l; ErrLeaseLost when l is
// no longer held.
func (s Connections) SaveCursor(ctx context.Context, l domain.Lease, cursor string) error {
	return s.updateHeld(ctx, "save cursor", l, map[string]any{"cursor": cursor})
}

// SetConnectionState stores the state of l's connection with its reason;
// Since moves only when the state or the reason changes, and then
// connection.changed is emitted in the same transaction. ErrLeaseLost when
// l is no longer held.
func (s Connections) SetConnectionState(ctx context.Context, l domain.Lease, state domain.ConnState, reason string) error {
	return s.writeEvents(ctx, "set connection state", func(tx *gorm.DB, emit emitFunc) error {
		return s.setConnectionState(tx, emit, l, state, reason)
	})
}

// setConnectionState is the one place a connection's state changes: it
// writes state and reason under l and reports a change to the account's
// webhooks.
func (s *core) setConnectionState(tx *gorm.DB, emit emitFunc, l domain.Lease, state domain.ConnState, reason string) error {
	var cur connectionRow
	if err := s.held(tx, l).Select("state", "reason").Take(&cur).Error; err != nil {
		if isNotFound(err) {
			return domain.ErrLeaseLost
		}
		return err
	}
	if cur.State == string(state) && cur.Reason == reason {
		return nil
	}
	err := updateHeldTx(s.held(tx, l), map[string]any{"since": s.now(), "state": string(state), "reason": reason})
	if err != nil {
		return err
	}
	var agent agentRow
	if err := tx.Select("account_id").Take(&agent, "id = ?", l.AgentID).Error; err != nil {
		return err
	}
	return emit(domain.Event{AccountID: string(agent.AccountID), AgentID: l.AgentID, Type: domain.EventConnectionChanged,
		Data: map[string]string{"agentId": l.AgentID, "platform": l.Platform, "state": string(state), "reason": reason}})
}

// ClaimBot records botID (with its username) as the account of l's
// connection. It returns ErrBotInUse when a live lease of another agent
// holds the same bot on the same platform, ErrLeaseLost when l is lost.
func (s Connections) ClaimBot(ctx context.Context, l domain.Lease, botID, username string) error {
	return s.write(ctx, "claim bot", func(tx *gorm.DB) error {
		var n int64
		err := tx.Model(&connectionRow{}).Where("platform = ? AND bot_id = ? AND agent_id <> ? AND lease_expires_at >= ?",
			l.Platform, botID, l.AgentID, s.now()).Count(&n).Error
		if err != nil {
			return err
		}
		if n > 0 {
			return domain.ErrBotInUse
		}
		return updateHeldTx(s.held(tx, l), map[string]any{"bot_id": botID, "bot_username": username})
	})
}

// CountConnectionMessage counts one message received (in) or sent by l's
// connection and moves its last event time. It returns domain.ErrLeaseLost
// when l is no longer held.
func (s Connections) CountConnectionMessage(ctx context.Context, l domain.Lease, in bool) error {
	col := "messages_out"
	if in {
		col = "messages_in"
	}
	return s.updateHeld(ctx, "count connection message", l, map[string]any{
		col: gorm.Expr(col + " + 1"), "last_event_at": s.now(),
	})
}

// ListConnections returns the stored connections of agent agentID of
// account accountID; ErrNotFound for a missing agent or another account's.
func (s Connections) ListConnections(ctx context.Context, accountID, agentID string) ([]domain.Connection, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, wrap("list connections", err)
	}
	var rows []connectionRow
	if err := db.Where("agent_id = ?", agentID).Order("platform").Find(&rows).Error; err != nil {
		return nil, wrap("list connections", err)
	}
	out := make([]domain.Connection, len(rows))
	now := s.now()
	for i, r := range rows {
		out[i] = domain.Connection{
			AgentID: string(r.AgentID), Platform: string(r.Platform), State: domain.ConnState(r.State), Reason: r.Reason,
			BotID: string(r.BotID), BotUsername: r.BotUsername, Since: utc(r.Since), LastEventAt: utcPtr(r.LastEventAt),
			MessagesIn: r.MessagesIn, MessagesOut: r.MessagesOut,
		}
		if orphaned(r, now) {
			out[i].State, out[i].Reason = domain.ConnDisconnected, orphanedReason
		}
	}
	return out, nil
}

// orphanedReason is shown for a connection no replica holds any more.
const orphanedReason = "No replica holds this connection (its lease expired: the replica that ran it stopped " +
	"without releasing it); it resumes when a replica takes it over."

// orphaned reports a connection stored as connecting or connected whose
// lease has expired: the runner that wrote that state died without
// releasing it (a crash), so the state no longer says what happens.
func orphaned(r connectionRow, now time.Time) bool {
	live := domain.ConnState(r.State) == domain.ConnConnected || domain.ConnState(r.State) == domain.ConnConnecting
	return live && (r.LeaseExpiresAt == nil || r.LeaseExpiresAt.Before(now))
}

// idleBatch bounds the rows one statement or transaction of
// SetIdleConnections touches.
const idleBatch = 500

// SetIdleConnections stores the states of connections no runner holds,
// writing only those that changed, and emits connection.changed for each
// change in the same transaction. A connection under a live lease is left
// to its runner. Agents that are gone are skipped. It serves the supervisor,
// which may list every agent of the service at once: rows are read and
// written in batches.
func (s Connections) SetIdleConnections(ctx context.Context, idle []domain.IdleConnection) error {
	for start := 0; start < len(idle); start += idleBatch {
		batch := idle[start:min(start+idleBatch, len(idle))]
		changed, err := s.changedIdle(ctx, batch)
		if err != nil {
			return wrap("set idle connections", err)
		}
		if len(changed) == 0 {
			continue
		}
		err = s.writeEvents(ctx, "set idle connections", func(tx *gorm.DB, emit emitFunc) error {
			return writeIdle(tx, emit, changed, s.now())
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// changedIdle returns the connections of batch whose stored state differs.
func (s *core) changedIdle(ctx context.Context, batch []domain.IdleConnection) ([]domain.IdleConnection, error) {
	ids := make([]string, len(batch))
	for i, c := range batch {
		ids[i] = c.AgentID
	}
	var rows []connectionRow
	err := s.read(ctx).Select("agent_id", "platform", "state", "reason").Where("agent_id IN ?", ids).Find(&rows).Error
	if err != nil {
		return nil, err
	}
	stored := make(map[[2]string]connectionRow, len(rows))
	for _, r := range rows {
		stored[[2]string{string(r.AgentID), string(r.Platform)}] = r
	}
	var changed []domain.IdleConnection
	for _, c := range batch {
		r, ok := stored[[2]string{c.AgentID, c.Platform}]
		if !ok || r.State != string(c.State) || r.Reason != c.Reason {
			changed = append(changed, c)
		}
	}
	return changed, nil
}

// writeIdle writes each idle state unless a live lease holds its row, and
// tells the agent's account of each state it changed when it has webhooks.
// The states of accounts without webhooks need no answer row by row: they
// go in multi-row statements (a first sync writes one for each of a
// service's idle connections).
func writeIdle(tx *gorm.DB, emit emitFunc, idle []domain.IdleConnection, t time.Time) error {
	owners, err := agentOwners(tx, idle)
	if err != nil {
		return err
	}
	upsert := idleUpsert(t)
	var quiet []connectionRow
	for _, c := range idle {
		owner, ok := owners[c.AgentID]
		if !ok {
			continue // deleted since it was read
		}
		row := connectionRow{AgentID: ctext(c.AgentID), Platform: ctext(c.Platform), State: string(c.State), Reason: c.Reason, Since: t}
		if owner.WebhookCount == 0 {
			quiet = append(quiet, row)
			continue
		}
		res := tx.Clauses(upsert).Create(&row)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			continue
		}
		err := emit(domain.Event{AccountID: owner.AccountID, AgentID: c.AgentID, Type: domain.EventConnectionChanged,
			Data: map[string]string{"agentId": c.AgentID, "platform": c.Platform, "state": string(c.State), "reason": c.Reason}})
		if err != nil {
			return err
		}
	}
	for start := 0; start < len(quiet); start += idleInsertRows {
		if err := tx.Clauses(upsert).Create(quiet[start:min(start+idleInsertRows, len(quiet))]).Error; err != nil {
			return err
		}
	}
	return nil
}

// idleInsertRows bounds the rows of one multi-row insert of idle states,
// within the bound variables SQLite and PostgreSQL take.
const idleInsertRows = 200

// idleUpsert writes an idle state at t over the stored one unless a live
// lease holds the row or the state and reason are the same.
func idleUpsert(t time.Time) clause.OnConflict {
	return clause.OnConflict{
		Columns:   []clause.Column{{Name: "agent_id"}, {Name: "platform"}},
		DoUpdates: clause.AssignmentColumns([]string{"state", "reason", "since"}),
		Where: clause.Where{Exprs: []clause.Expression{gorm.Expr(
			"(connections.lease_expires_at IS NULL OR connections.lease_expires_at < ?) AND "+
				"(connections.state <> excluded.state OR connections.reason <> excluded.reason)", t)}},
	}
}

// agentOwner is an agent's account and how many webhooks it has.
type agentOwner struct {
	AgentID      string
	AccountID    string
	WebhookCount int64
}

// agentOwners reads, in one query, the owners of the agents of idle that
// still exist. The webhook count is read in the writing transaction: a
// webhook created while it runs may miss the change, as it would had the
// change come a moment earlier.
func agentOwners(tx *gorm.DB, idle []domain.IdleConnection) (map[string]agentOwner, error) {
	ids := make([]string, len(idle))
	for i, c := range idle {
		ids[i] = c.AgentID
	}
	var rows []agentOwner
	err := tx.Table("agents").Select("agents.id AS agent_id, agents.account_id, accounts.webhook_count").
		Joins("JOIN accounts ON accounts.id = agents.account_id").Where("agents.id IN ?", ids).Scan(&rows).Error
	owners := make(map[string]agentOwner, len(rows))
	for _, r := range rows {
		owners[r.AgentID] = r
	}
	return owners, err
}
