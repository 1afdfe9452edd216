package store

import (
	"context"

	"gorm.io/gorm"
)

// ConversationQuery selects a page of an agent's conversations, the most
// recently active first.
type ConversationQuery struct {
	Page, Limit int    // 1-based page; < 1 means 1 and DefaultPageLimit
	UserID      string // conversations in which this user spoke
	RoomID      string // the conversation of this room
	Platform    string // conversations from this platform
}

// MessageQuery selects a page of a conversation's messages.
type MessageQuery struct {
	Page, Limit int  // as in ConversationQuery
	Desc        bool // newest first; oldest first otherwise
}

// ownedAgent checks that agent agentID belongs to account accountID:
// ErrNotFound otherwise.
func ownedAgent(db *gorm.DB, accountID, agentID string) error {
	return db.Model(&agentRow{}).Select("id").Where("id = ? AND account_id = ?", agentID, accountID).Take(&agentRow{}).Error
}

// pageBounds normalizes a page and size and reports whether the page lies
// past total items: then it is empty without a query, and checking first
// also keeps (page-1)*limit from overflowing for absurd page numbers.
func pageBounds(page, limit int, total int64) (int, int, bool) {
	page = max(page, 1)
	if limit < 1 {
		limit = DefaultPageLimit
	}
	pages := (total + int64(limit) - 1) / int64(limit)
	return page, limit, int64(page-1) >= pages
}

// ListConversations returns a page of the conversations of agent agentID
// of account accountID and how many match q. It returns ErrNotFound for a
// missing agent or one of another account.
func (s *Store) ListConversations(ctx context.Context, accountID, agentID string, q ConversationQuery) ([]Conversation, int64, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, 0, wrap("list conversations", err)
	}
	sel := db.Model(&conversationRow{}).Where("agent_id = ?", agentID)
	if q.UserID != "" {
		spoke := db.Model(&conversationUserRow{}).Select("conversation_id").Where("agent_id = ? AND user_id = ?", agentID, q.UserID)
		sel = sel.Where("id IN (?)", spoke)
	}
	if q.RoomID != "" {
		sel = sel.Where("key = ?", ConversationRef{RoomID: q.RoomID}.key())
	}
	if q.Platform != "" {
		sel = sel.Where("platform = ?", q.Platform)
	}
	sel = sel.Session(&gorm.Session{})
	var total int64
	if err := sel.Count(&total).Error; err != nil {
		return nil, 0, wrap("list conversations", err)
	}
	page, limit, past := pageBounds(q.Page, q.Limit, total)
	if past {
		return []Conversation{}, total, nil
	}
	var rows []conversationRow
	err := sel.Order("last_message_at DESC").Order("id DESC").Offset((page - 1) * limit).Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, 0, wrap("list conversations", err)
	}
	out := make([]Conversation, len(rows))
	for i, r := range rows {
		out[i] = toConversation(r)
	}
	return out, total, nil
}

// GetConversation returns conversation id of agent agentID of account
// accountID: ErrNotFound when the agent is not the account's,
// ErrConversationNotFound when the conversation is not the agent's.
func (s *Store) GetConversation(ctx context.Context, accountID, agentID, id string) (Conversation, error) {
	db := s.read(ctx)
	row, err := agentConversation(db, accountID, agentID, id)
	if err != nil {
		return Conversation{}, wrap("get conversation", err)
	}
	return toConversation(row), nil
}

// agentConversation reads one conversation of an account's agent.
func agentConversation(db *gorm.DB, accountID, agentID, id string) (conversationRow, error) {
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return conversationRow{}, err
	}
	var row conversationRow
	err := db.Take(&row, "id = ? AND agent_id = ?", id, agentID).Error
	if isNotFound(err) {
		err = ErrConversationNotFound
	}
	return row, err
}

// ListMessages returns a page of the messages of conversation id of agent
// agentID of account accountID, and how many it has. Errors as
// GetConversation.
func (s *Store) ListMessages(ctx context.Context, accountID, agentID, id string, q MessageQuery) ([]Message, int64, error) {
	db := s.read(ctx)
	conv, err := agentConversation(db, accountID, agentID, id)
	if err != nil {
		return nil, 0, wrap("list messages", err)
	}
	page, limit, past := pageBounds(q.Page, q.Limit, conv.MessageCount)
	if past {
		return []Message{}, conv.MessageCount, nil
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	var rows []messageRow
	err = db.Where("conversation_id = ?", id).Order("created_at" + dir).Order("id" + dir).
		Offset((page - 1) * limit).Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, 0, wrap("list messages", err)
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		out[i] = toMessage(r)
	}
	return out, conv.MessageCount, nil
}

// DeleteConversation forgets conversation id of agent agentID of account
// accountID and its messages, in one transaction, and returns how many
// messages went with it. The agent's lifetime counters and its analytics
// stay as they are; the next message of that room or user starts a new
// conversation. Errors as GetConversation.
func (s *Store) DeleteConversation(ctx context.Context, accountID, agentID, id string) (int64, error) {
	var deleted int64
	err := s.write(ctx, "delete conversation", func(tx *gorm.DB) error {
		if _, err := agentConversation(tx, accountID, agentID, id); err != nil {
			return err
		}
		res := tx.Where("conversation_id = ?", id).Delete(&messageRow{})
		if res.Error != nil {
			return res.Error
		}
		deleted = res.RowsAffected
		if err := tx.Where("conversation_id = ?", id).Delete(&conversationUserRow{}).Error; err != nil {
			return err
		}
		if err := tx.Where("id = ?", id).Delete(&conversationRow{}).Error; err != nil {
			return err
		}
		// After the conversation's row: on PostgreSQL that delete waits for
		// an exchange being saved in it to commit, so this statement sees
		// that exchange's event too.
		return deleteMessageEvents(tx, "conversation_id = ?", id)
	})
	return deleted, err
}
