package store

import (
	"context"
	"strings"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

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
		limit = domain.DefaultPageLimit
	}
	pages := (total + int64(limit) - 1) / int64(limit)
	return page, limit, int64(page-1) >= pages
}

// ListConversations returns a page of the conversations of agent agentID
// of account accountID and how many match q. It returns ErrNotFound for a
// missing agent or one of another account.
func (s Conversations) ListConversations(ctx context.Context, accountID, agentID string, q domain.ConversationQuery) ([]domain.Conversation, int64, error) {
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
		sel = sel.Where("key = ?", conversationKey(domain.ConversationRef{RoomID: q.RoomID}))
	}
	if q.Platform != "" {
		sel = sel.Where("platform = ?", q.Platform)
	}
	if q.Text != "" {
		said := db.Model(&messageRow{}).Select("1").
			Where("messages.conversation_id = conversations.id AND lower(messages.text) LIKE ? ESCAPE '\\'", "%"+likeEscape(strings.ToLower(q.Text))+"%")
		sel = sel.Where("EXISTS (?)", said)
	}
	sel = sel.Session(&gorm.Session{})
	var total int64
	if err := sel.Count(&total).Error; err != nil {
		return nil, 0, wrap("list conversations", err)
	}
	page, limit, past := pageBounds(q.Page, q.Limit, total)
	if past {
		return []domain.Conversation{}, total, nil
	}
	var rows []conversationRow
	err := sel.Order("last_message_at DESC").Order("id DESC").Offset((page - 1) * limit).Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, 0, wrap("list conversations", err)
	}
	out := make([]domain.Conversation, len(rows))
	for i, r := range rows {
		out[i] = toConversation(r)
	}
	return out, total, nil
}

// likeEscape escapes LIKE's wildcards and its escape (a backslash) in s,
// so s matches only itself.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// GetConversation returns conversation id of agent agentID of account
// accountID: ErrNotFound when the agent is not the account's,
// ErrConversationNotFound when the conversation is not the agent's.
func (s Conversations) GetConversation(ctx context.Context, accountID, agentID, id string) (domain.Conversation, error) {
	db := s.read(ctx)
	row, err := agentConversation(db, accountID, agentID, id)
	if err != nil {
		return domain.Conversation{}, wrap("get conversation", err)
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
		err = domain.ErrConversationNotFound
	}
	return row, err
}

// ListMessages returns a page of the messages of conversation id of agent
// agentID of account accountID, and how many it has. Errors as
// GetConversation.
func (s Conversations) ListMessages(ctx context.Context, accountID, agentID, id string, q domain.MessageQuery) ([]domain.Message, int64, error) {
	db := s.read(ctx)
	conv, err := agentConversation(db, accountID, agentID, id)
	if err != nil {
		return nil, 0, wrap("list messages", err)
	}
	page, limit, past := pageBounds(q.Page, q.Limit, conv.MessageCount)
	if past {
		return []domain.Message{}, conv.MessageCount, nil
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
	out := make([]domain.Message, len(rows))
	for i, r := range rows {
		out[i] = toMessage(r)
	}
	return out, conv.MessageCount, nil
}

// DeleteConversation forgets conversation id of agent agentID of account
// accountID and its messages (and, for an A2A room, the tasks of its
// context), in one transaction, and returns how many
// messages went with it. The agent's lifetime counters and its analytics
// stay as they are; the next message of that room or user starts a new
// conversation. Errors as GetConversation.
func (s Conversations) DeleteConversation(ctx context.Context, accountID, agentID, id string) (int64, error) {
	var deleted int64
	err := s.write(ctx, "delete conversation", func(tx *gorm.DB) error {
		conv, err := agentConversation(tx, accountID, agentID, id)
		if err != nil {
			return err
		}
		if err := deleteA2ATasksOfRoom(tx, agentID, conv.RoomID); err != nil {
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

// MaxSummaryText is the longest conversation summary, in characters.
const MaxSummaryText = 2000

// ConversationSummary returns the summary of conversation conv of agent
// agentID of account accountID and how many of its oldest messages it
// covers: "" and 0 when it has none, or conv names no stored conversation.
// ErrNotFound for a missing agent or one of another account.
func (s Conversations) ConversationSummary(ctx context.Context, accountID, agentID string, conv domain.ConversationRef) (string, int, error) {
	// One query: the agent's row tells a missing agent from a missing
	// conversation, whose columns the outer join leaves NULL.
	var got []struct {
		Summary    string
		Summarized int
	}
	err := s.read(ctx).Raw(`SELECT COALESCE(c.summary, '') AS summary, COALESCE(c.summarized, 0) AS summarized
		FROM agents a LEFT JOIN conversations c ON c.agent_id = a.id AND c.key = ?
		WHERE a.id = ? AND a.account_id = ?`, conversationKey(conv), agentID, accountID).Scan(&got).Error
	switch {
	case err != nil:
		return "", 0, wrap("conversation summary", err)
	case len(got) == 0:
		return "", 0, wrap("conversation summary", domain.ErrNotFound)
	}
	return got[0].Summary, got[0].Summarized, nil
}

// SaveSummary stores summary as that of conversation conv of agent agentID
// of account accountID, covering its oldest summarized messages, unless
// the stored one covers as many or more (two turns summarising at once
// never move it backwards) or the conversation has fewer messages than
// that (it was deleted and started afresh since the caller read it: the
// old messages must not come back through their summary). A summary over
// MaxSummaryText characters is ErrInvalid; ErrNotFound for a missing agent
// or one of another account, ErrConversationNotFound when conv names no
// stored conversation.
func (s Conversations) SaveSummary(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, summary string, summarized int) error {
	if !validLength(summary, 0, MaxSummaryText) {
		return wrap("save summary", fieldError("summary", "must be at most 2000 characters"))
	}
	return s.write(ctx, "save summary", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		var row conversationRow
		err := tx.Select("id").Take(&row, "agent_id = ? AND key = ?", agentID, conversationKey(conv)).Error
		if isNotFound(err) {
			return domain.ErrConversationNotFound
		}
		if err != nil {
			return err
		}
		return tx.Model(&conversationRow{}).Where("id = ? AND summarized < ? AND message_count >= ?", row.ID, summarized, summarized).
			Updates(map[string]any{"summary": summary, "summarized": summarized}).Error
	})
}

// MessagesRange returns messages [from, to) of conversation conv of agent
// agentID of account accountID, oldest first (by time, then id), for
// folding into its summary: none when the range is empty or conv names no
// stored conversation. ErrNotFound for a missing agent or one of another
// account.
func (s Conversations) MessagesRange(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, from, to int) ([]domain.Message, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, wrap("messages range", err)
	}
	from = max(from, 0)
	if to <= from || conversationKey(conv) == "" {
		return []domain.Message{}, nil
	}
	convID := db.Model(&conversationRow{}).Select("id").Where("agent_id = ? AND key = ?", agentID, conversationKey(conv))
	var rows []messageRow
	err := db.Where("conversation_id = (?)", convID).Order("created_at").Order("id").
		Offset(from).Limit(to - from).Find(&rows).Error
	if err != nil {
		return nil, wrap("messages range", err)
	}
	out := make([]domain.Message, len(rows))
	for i, r := range rows {
		out[i] = toMessage(r)
	}
	return out, nil
}
