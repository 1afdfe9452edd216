package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Role says who wrote a message.
type Role string

// The message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one stored message of a conversation.
type Message struct {
	ID               string // "msg_" + lowercase ULID; assigned by SaveExchange when empty
	Role             Role
	UserID           string // the user who wrote it, or whom the reply answers
	Text             string
	Model            string // the model that wrote a reply
	PromptTokens     int
	CompletionTokens int
	CreatedAt        time.Time // UTC, millisecond precision
}

// History returns the last limit messages of the conversation key of agent
// agentID of account accountID, oldest first. A missing conversation, an
// agent of another account, or a limit below 1, gives no messages and no
// error.
func (s *Store) History(ctx context.Context, accountID, agentID, conversationKey string, limit int) ([]Message, error) {
	if limit < 1 {
		return []Message{}, nil
	}
	db := s.read(ctx)
	owned := db.Model(&agentRow{}).Select("id").Where("id = ? AND account_id = ?", agentID, accountID)
	conv := db.Model(&conversationRow{}).Select("id").Where("agent_id = (?) AND key = ?", owned, conversationKey)
	var rows []messageRow
	err := db.Where("conversation_id = (?)", conv).
		Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, wrap("history", err)
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		out[len(rows)-1-i] = toMessage(r)
	}
	return out, nil
}

// SaveExchange stores the user's message and the agent's reply in one
// transaction and returns the stored reply. It creates the conversation
// conversationKey when needed ("" = no conversation: nothing is stored but
// the reply still counts), adds one to the agent's answered messages and,
// when it creates the conversation, one to its conversations. Empty IDs and
// zero times are filled in (now), empty roles default to user and assistant,
// and the reply is made at least 1 ms younger than the user message so
// History keeps their order. It returns ErrNotFound if the agent is gone or
// belongs to another account than accountID.
func (s *Store) SaveExchange(ctx context.Context, accountID, agentID, conversationKey string, user, reply Message) (Message, error) {
	t := s.now()
	user = fillMessage(user, RoleUser, t)
	reply = fillMessage(reply, RoleAssistant, t)
	if !reply.CreatedAt.After(user.CreatedAt) {
		reply.CreatedAt = user.CreatedAt.Add(time.Millisecond)
	}
	err := s.write(ctx, "save exchange", func(tx *gorm.DB) error {
		if err := bumpAgent(tx, accountID, agentID, "total_messages"); err != nil {
			return err
		}
		if conversationKey == "" {
			return nil
		}
		convID, err := conversation(tx, accountID, agentID, conversationKey, t)
		if err != nil {
			return err
		}
		msgs := []messageRow{fromMessage(user, convID), fromMessage(reply, convID)}
		return tx.Create(&msgs).Error
	})
	if err != nil {
		return Message{}, err
	}
	return reply, nil
}

// conversation returns the id of the agent's conversation key, creating it
// (and counting it on the agent) when it does not exist. ON CONFLICT DO
// NOTHING keeps concurrent first messages of one conversation from failing.
func conversation(tx *gorm.DB, accountID, agentID, key string, t time.Time) (ctext, error) {
	row := conversationRow{ID: ctext(newID("conv_", t)), AgentID: ctext(agentID), Key: ctext(key), CreatedAt: t}
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if res.Error != nil {
		return "", res.Error
	}
	if res.RowsAffected == 1 {
		return row.ID, bumpAgent(tx, accountID, agentID, "total_conversations")
	}
	var existing conversationRow
	err := tx.Select("id").Take(&existing, "agent_id = ? AND key = ?", agentID, key).Error
	return existing.ID, err
}

// bumpAgent adds one to a counter column of the agent; ErrNotFound if the
// agent does not exist in account accountID. On PostgreSQL it also locks the
// agent row, so a concurrent DeleteAgent waits or wins cleanly.
func bumpAgent(tx *gorm.DB, accountID, agentID, column string) error {
	res := tx.Model(&agentRow{}).Where("id = ? AND account_id = ?", agentID, accountID).
		UpdateColumn(column, gorm.Expr(column+" + 1"))
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// fillMessage fills the defaults of a message being saved.
func fillMessage(m Message, role Role, t time.Time) Message {
	if m.ID == "" {
		m.ID = newID("msg_", t)
	}
	if m.Role == "" {
		m.Role = role
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = t
	}
	m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Millisecond)
	return m
}

func fromMessage(m Message, convID ctext) messageRow {
	return messageRow{
		ID: ctext(m.ID), ConversationID: convID, Role: string(m.Role), UserID: m.UserID, Text: m.Text,
		Model: m.Model, PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens, CreatedAt: m.CreatedAt,
	}
}

func toMessage(r messageRow) Message {
	return Message{
		ID: string(r.ID), Role: Role(r.Role), UserID: r.UserID, Text: r.Text, Model: r.Model,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, CreatedAt: utc(r.CreatedAt),
	}
}
