package store

import (
	"context"
	"strings"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ImportConversation stores msgs, oldest first, as the history of
// conversation conv of agent agentID of account accountID, in one
// transaction: the conversation is created when it does not exist, and the
// messages keep their roles, users, texts and times (zero times become
// now). Unlike SaveExchange it emits no event and counts no message on the
// agent's metrics: it moves history, it is not a turn. Empty msgs, more
// than domain.MaxImportedMessages, or a conv without a key is an ErrInvalid
// naming the field (messages, roomId); ErrNotFound for a missing agent or
// one of another account.
func (s Conversations) ImportConversation(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, msgs []domain.Message) error {
	switch {
	case conversationKey(conv) == "":
		return wrap("import conversation", fieldError("roomId", "a conversation needs a roomId or a userId"))
	case len(msgs) == 0 || len(msgs) > domain.MaxImportedMessages:
		return wrap("import conversation", fieldError("messages", "must hold 1 to 10000 messages"))
	}
	t := s.now()
	rows := make([]messageRow, len(msgs))
	speakers := map[string]bool{}
	title := ""
	for i, m := range msgs {
		m = fillMessage(domain.Message{Role: m.Role, UserID: m.UserID, Text: m.Text, Partial: m.Partial, CreatedAt: m.CreatedAt}, domain.RoleUser, t)
		rows[i] = fromMessage(m, "")
		if m.Role == domain.RoleUser && title == "" {
			title = domain.ConversationTitle(m.Text)
		}
		if m.Role == domain.RoleUser && m.UserID != "" {
			speakers[m.UserID] = true
		}
	}
	return s.write(ctx, "import conversation", func(tx *gorm.DB) error {
		if err := lockOwned(tx, accountID, agentID); err != nil {
			return err
		}
		convID, err := conversation(tx, accountID, agentID, conv, rows[0].CreatedAt)
		if err != nil {
			return err
		}
		for i := range rows {
			rows[i].ConversationID = convID
		}
		if err := tx.CreateInBatches(&rows, chunkInsertBatch).Error; err != nil {
			return err
		}
		if err := countOnConversation(tx, convID, len(rows), rows[len(rows)-1].CreatedAt, title); err != nil {
			return err
		}
		for user := range speakers {
			speaker := conversationUserRow{ConversationID: convID, UserID: ctext(user), AgentID: ctext(agentID)}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&speaker).Error; err != nil {
				return err
			}
		}
		return nil
	})
}

// KnowledgeText returns document docID of agent agentID of account
// accountID as its chunks hold it: their texts in order, joined by blank
// lines, which chunking a second time cuts the same way. ErrNotFound for a
// missing agent or one of another account.
func (s Knowledge) KnowledgeText(ctx context.Context, accountID, agentID, docID string) (string, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return "", wrap("knowledge text", err)
	}
	var texts []string
	err := db.Model(&knowledgeChunkRow{}).Where("document_id = ? AND agent_id = ?", docID, agentID).
		Order("seq").Pluck("text", &texts).Error
	if err != nil {
		return "", wrap("knowledge text", err)
	}
	return strings.Join(texts, "\n\n"), nil
}
