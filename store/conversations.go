package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// conversationKey is the conversation's unique name within its agent; ""
// for none.
func conversationKey(c domain.ConversationRef) string {
	switch {
	case c.RoomID != "":
		return "room:" + c.RoomID
	case c.UserID != "":
		return "user:" + c.UserID
	}
	return ""
}

// toolErrors counts the failed calls.
func toolErrors(calls []domain.ToolCall) int {
	n := 0
	for _, c := range calls {
		if !c.OK {
			n++
		}
	}
	return n
}

// ConversationID returns the id of agent agentID's conversation conv, ""
// when it does not exist (yet) or conv names none.
func (s Conversations) ConversationID(ctx context.Context, accountID, agentID string, conv domain.ConversationRef) (string, error) {
	if conversationKey(conv) == "" {
		return "", nil
	}
	db := s.read(ctx)
	owned := db.Model(&agentRow{}).Select("id").Where("id = ? AND account_id = ?", agentID, accountID)
	var ids []string
	err := db.Model(&conversationRow{}).Where("agent_id = (?) AND key = ?", owned, conversationKey(conv)).Limit(1).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return "", wrap("conversation id", err)
	}
	return ids[0], nil
}

// OpenConversation returns the id of agent agentID's conversation conv,
// creating it (and counting it on the agent) when it does not exist yet, so
// that a turn knows its conversation from the moment it is accepted: its
// tool calls and memories name it in the first exchange too. "" when conv
// names none; ErrNotFound for a missing agent or one of another account.
// Most turns go to a conversation that exists, so it is read first, off
// the writer.
func (s Conversations) OpenConversation(ctx context.Context, accountID, agentID string, conv domain.ConversationRef) (string, error) {
	if id, err := s.ConversationID(ctx, accountID, agentID, conv); id != "" || err != nil || conversationKey(conv) == "" {
		return id, err
	}
	var id ctext
	err := s.write(ctx, "open conversation", func(tx *gorm.DB) error {
		if err := lockOwned(tx, accountID, agentID); err != nil {
			return err
		}
		var err error
		id, err = conversation(tx, accountID, agentID, conv, s.now())
		return err
	})
	return string(id), err
}

// History returns the last limit messages of conversation conv of agent
// agentID of account accountID, oldest first. A missing conversation, an
// agent of another account, or a limit below 1, gives no messages and no
// error.
func (s Conversations) History(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, limit int) ([]domain.Message, error) {
	if limit < 1 || conversationKey(conv) == "" {
		return []domain.Message{}, nil
	}
	db := s.read(ctx)
	owned := db.Model(&agentRow{}).Select("id").Where("id = ? AND account_id = ?", agentID, accountID)
	convID := db.Model(&conversationRow{}).Select("id").Where("agent_id = (?) AND key = ?", owned, conversationKey(conv))
	var rows []messageRow
	err := db.Where("conversation_id = (?)", convID).
		Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, wrap("history", err)
	}
	out := make([]domain.Message, len(rows))
	for i, r := range rows {
		out[len(rows)-1-i] = toMessage(r)
	}
	return out, nil
}

// SaveExchange stores the user's message and the agent's reply in one
// transaction and returns the stored reply and its conversation's id ("" for
// none). It creates the conversation conv when needed, adds both messages to
// its count and moves its last activity, counts the reply on the agent (and
// the conversation, when new), and adds the exchange to the agent's hourly
// analytics and, when the reply names its run, to the run's cost (see
// addRunCost). Empty IDs and zero times are filled in (now), empty roles
// default to user and assistant, and the reply is made at least 1 ms younger
// than the user message so History keeps their order. It returns
// ErrNotFound if the agent is gone or belongs to another account. It emits
// message.completed in the same transaction.
func (s Conversations) SaveExchange(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, user, reply domain.Message) (domain.Message, string, error) {
	stored, convID, _, err := s.saveExchange(ctx, accountID, agentID, conv, user, reply, nil)
	return stored, convID, err
}

// FinishExchange is SaveExchange that also ends the reply's run
// (reply.RunID) as end says, in the same transaction, as FinishRun would:
// a reply is never stored without its run's end, nor the run ended
// without it. It returns the stored reply and the run as it ended; a zero
// run when it is gone (its conversation was deleted meanwhile), the
// exchange stored all the same.
func (s Conversations) FinishExchange(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, user, reply domain.Message, end domain.RunEnd) (domain.Message, domain.Run, error) {
	if reply.RunID == "" {
		return domain.Message{}, domain.Run{}, wrap("finish exchange", invalidf("the reply names no run"))
	}
	stored, _, run, err := s.saveExchange(ctx, accountID, agentID, conv, user, reply, &end)
	if err != nil || run.ID == "" {
		return stored, domain.Run{}, err
	}
	return stored, toRun(run), nil
}

// saveExchange is SaveExchange, and FinishExchange when end is set.
func (s Conversations) saveExchange(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, user, reply domain.Message,
	end *domain.RunEnd) (domain.Message, string, runRow, error) {
	t := s.now()
	user = fillMessage(user, domain.RoleUser, t)
	reply = fillMessage(reply, domain.RoleAssistant, t)
	if !reply.CreatedAt.After(user.CreatedAt) {
		reply.CreatedAt = user.CreatedAt.Add(time.Millisecond)
	}
	var convID ctext
	var run runRow
	err := s.writeEventsVia(s.writeGrouped, ctx, "save exchange", func(tx *gorm.DB, emit emitFunc) error {
		convID, run = "", runRow{}
		known := true // no conversation: none to open
		if conversationKey(conv) != "" {
			var err error
			if convID, known, err = findConversation(tx, agentID, conv); err != nil {
				return err
			}
		}
		webhooks, err := countExchange(tx, accountID, agentID, !known)
		if err != nil {
			return err
		}
		if conversationKey(conv) != "" {
			if convID, err = addToConversation(tx, accountID, agentID, conv, convID, user, reply); err != nil {
				return err
			}
		}
		if err := recordExchange(tx, agentID, convID, user, reply); err != nil {
			return err
		}
		if err := addRunCost(tx, reply.RunID, reply.PromptTokens, reply.CompletionTokens, reply.CostMicros); err != nil {
			return err
		}
		if webhooks == 0 {
			emit = nil // no webhook to deliver to: none to look for
		} else if err := emit(messageCompleted(accountID, agentID, conv, string(convID), user, reply)); err != nil {
			return err
		}
		if end == nil {
			return nil
		}
		kept := end.Reply
		kept.MessageID, kept.CreatedAt, kept.Partial = reply.ID, reply.CreatedAt, reply.Partial
		run, err = s.finishRun(tx, emit, reply.RunID, end.Status, &kept, end.ErrorCode, end.ErrorMessage)
		if errors.Is(err, domain.ErrRunNotFound) {
			run, err = runRow{}, nil // the exchange is kept, as it would be without its run
		}
		return err
	})
	if err != nil {
		return domain.Message{}, "", runRow{}, err
	}
	return reply, string(convID), run, nil
}

// findConversation returns the id of the agent's conversation conv and
// true, or "" and false when it does not exist yet.
func findConversation(tx *gorm.DB, agentID string, conv domain.ConversationRef) (ctext, bool, error) {
	id, err := conversationID(tx, agentID, conv)
	if isNotFound(err) {
		return "", false, nil
	}
	return id, err == nil, err
}

// countExchange counts an exchange on the agent, and a conversation when
// it opens one, and returns how many webhooks the account has;
// ErrNotFound if the agent does not exist in account accountID. On
// PostgreSQL it also locks the agent row, so a concurrent DeleteAgent
// waits or wins cleanly.
func countExchange(tx *gorm.DB, accountID, agentID string, opens bool) (webhooks int64, err error) {
	opened := 0
	if opens {
		opened = 1
	}
	var rows []struct{ WebhookCount int64 }
	err = tx.Raw(`UPDATE agents SET total_messages = total_messages + 1, total_conversations = total_conversations + ?
		WHERE id = ? AND account_id = ?
		RETURNING (SELECT webhook_count FROM accounts WHERE accounts.id = agents.account_id) AS webhook_count`,
		opened, agentID, accountID).Scan(&rows).Error
	switch {
	case err != nil:
		return 0, err
	case len(rows) == 0:
		return 0, domain.ErrNotFound
	}
	return rows[0].WebhookCount, nil
}

// addToConversation stores both messages in the conversation conv, whose
// id is convID ("" when it did not exist, and then countExchange counted
// it as opened), and returns its id. A new conversation is created with
// its count and last activity; when a concurrent first message created it
// meanwhile (PostgreSQL), that one counted it and this count is undone.
func addToConversation(tx *gorm.DB, accountID, agentID string, conv domain.ConversationRef, convID ctext, user, reply domain.Message) (ctext, error) {
	msgs := []messageRow{fromMessage(user, ""), fromMessage(reply, "")}
	title := domain.ConversationTitle(user.Text)
	fresh := false
	if convID == "" {
		var err error
		if convID, fresh, err = createConversation(tx, agentID, conv, user.CreatedAt, len(msgs), reply.CreatedAt, title); err != nil {
			return "", err
		}
		if !fresh {
			if err := countOnAgent(tx, agentID, "total_conversations", -1); err != nil {
				return "", err
			}
		}
	}
	for i := range msgs {
		msgs[i].ConversationID = convID
	}
	if err := tx.Exec(insertExchangeSQL, append(msgs[0].values(), msgs[1].values()...)...).Error; err != nil {
		return "", err
	}
	if !fresh {
		if err := countOnConversation(tx, convID, len(msgs), reply.CreatedAt, title); err != nil {
			return "", err
		}
	}
	if user.UserID == "" {
		return convID, nil
	}
	return convID, tx.Exec(addSpeakerSQL, convID, ctext(user.UserID), ctext(agentID)).Error
}

// The statements of an exchange's messages, written out: GORM's Create
// and Take built them from the row types on every exchange. With the
// analytics' statements, the conversation's lookup and its count written
// out too, BenchmarkSaveExchange takes 40% less time and a quarter fewer
// allocations.
const (
	// insertExchangeSQL inserts two messages, each as messageRow.values.
	insertExchangeSQL = `INSERT INTO messages (id, conversation_id, role, user_id, text, model, prompt_tokens, completion_tokens,
		tokens_used, cost_micros, response_millis, partial, created_at, tool_calls) VALUES
		(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// createConversationSQL creates a conversation unless the agent has
	// one of its key already.
	createConversationSQL = `INSERT INTO conversations (id, agent_id, key, kind, room_id, user_id, platform, title,
		message_count, created_at, last_message_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	// addSpeakerSQL notes a user (conversation, user, agent) as one who
	// spoke in a conversation.
	addSpeakerSQL = `INSERT INTO conversation_users (conversation_id, user_id, agent_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
)

// values are r's columns in insertExchangeSQL's order.
func (r messageRow) values() []any {
	return []any{r.ID, r.ConversationID, r.Role, r.UserID, r.Text, r.Model, r.PromptTokens, r.CompletionTokens,
		r.TokensUsed, r.CostMicros, r.ResponseMillis, r.Partial, r.CreatedAt, r.ToolCalls}
}

// countOnConversation adds n messages to the conversation id, the last
// at last, and gives it title unless it has one ("" gives none).
func countOnConversation(tx *gorm.DB, id ctext, n int, last time.Time, title string) error {
	return tx.Exec(`UPDATE conversations SET message_count = message_count + ?, last_message_at = ?,
		title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?`, n, last, title, id).Error
}

// conversation returns the id of the agent's conversation conv, creating it
// (and counting it on the agent) when it does not exist. Most messages go
// to a conversation that exists, so it is looked for first.
func conversation(tx *gorm.DB, accountID, agentID string, conv domain.ConversationRef, t time.Time) (ctext, error) {
	if id, err := conversationID(tx, agentID, conv); err == nil || !isNotFound(err) {
		return id, err
	}
	id, fresh, err := createConversation(tx, agentID, conv, t, 0, t, "")
	if err != nil || !fresh {
		return id, err
	}
	return id, countOnAgent(tx, agentID, "total_conversations", 1)
}

// createConversation creates the agent's conversation conv at t holding
// messages messages, the last at last, titled title, and returns its id
// and true; or,
// when a concurrent first message created it meanwhile, its id and false.
// ON CONFLICT DO NOTHING keeps such messages from failing: the one that
// did not create it looks for it again.
func createConversation(tx *gorm.DB, agentID string, conv domain.ConversationRef, t time.Time, messages int, last time.Time, title string) (ctext, bool, error) {
	row := conversationRow{ID: ctext(newID("conv_", t)), AgentID: ctext(agentID), Key: ctext(conversationKey(conv)),
		Kind: string(domain.KindDirect), UserID: conv.UserID, Platform: ctext(conv.Platform), MessageCount: int64(messages),
		Title: title, CreatedAt: t, LastMessageAt: last}
	if conv.RoomID != "" {
		row.Kind, row.RoomID, row.UserID = string(domain.KindRoom), conv.RoomID, ""
	}
	if row.Platform == "" {
		row.Platform = domain.PlatformAPI
	}
	res := tx.Exec(createConversationSQL, row.ID, row.AgentID, row.Key, row.Kind, row.RoomID, row.UserID, row.Platform,
		row.Title, row.MessageCount, row.CreatedAt, row.LastMessageAt)
	if res.Error != nil {
		return "", false, res.Error
	}
	if res.RowsAffected == 1 {
		return row.ID, true, nil
	}
	id, err := conversationID(tx, agentID, conv)
	return id, false, err
}

// conversationID reads the id of the agent's conversation conv; a GORM
// not-found error when there is none.
func conversationID(tx *gorm.DB, agentID string, conv domain.ConversationRef) (ctext, error) {
	var ids []ctext
	err := tx.Raw("SELECT id FROM conversations WHERE agent_id = ? AND key = ?", agentID, conversationKey(conv)).Scan(&ids).Error
	if err == nil && len(ids) == 0 {
		err = gorm.ErrRecordNotFound
	}
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// countOnAgent adds delta to a counter column of the agent.
func countOnAgent(tx *gorm.DB, agentID, column string, delta int) error {
	return tx.Model(&agentRow{}).Where("id = ?", agentID).UpdateColumn(column, gorm.Expr(column+" + ?", delta)).Error
}

// fillMessage fills the defaults of a message being saved.
func fillMessage(m domain.Message, role domain.Role, t time.Time) domain.Message {
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

func fromMessage(m domain.Message, convID ctext) messageRow {
	return messageRow{
		ID: ctext(m.ID), ConversationID: convID, Role: string(m.Role), UserID: m.UserID, Text: m.Text,
		Model: m.Model, PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens,
		TokensUsed: m.TokensUsed, CostMicros: m.CostMicros, ResponseMillis: m.ResponseMillis, Partial: m.Partial, CreatedAt: m.CreatedAt,
		ToolCalls: encodeToolCalls(m.ToolCalls),
	}
}

func toMessage(r messageRow) domain.Message {
	return domain.Message{
		ID: string(r.ID), Role: domain.Role(r.Role), UserID: r.UserID, Text: r.Text, Model: r.Model,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
		TokensUsed: r.TokensUsed, CostMicros: r.CostMicros, ResponseMillis: r.ResponseMillis, Partial: r.Partial, CreatedAt: utc(r.CreatedAt),
		ToolCalls: decodeToolCalls(r.ToolCalls),
	}
}

// encodeToolCalls is the stored form of a reply's tool calls: "" for none,
// so the many replies without tools cost no bytes.
func encodeToolCalls(calls []domain.ToolCall) string {
	if len(calls) == 0 {
		return ""
	}
	raw, _ := json.Marshal(calls) // plain structs with raw JSON arguments that were checked
	return string(raw)
}

// decodeToolCalls reads the stored form; "" (or a row written before
// tools) is none.
func decodeToolCalls(stored string) []domain.ToolCall {
	var calls []domain.ToolCall
	if stored != "" {
		_ = json.Unmarshal([]byte(stored), &calls) // written by encodeToolCalls
	}
	return calls
}

func toConversation(r conversationRow) domain.Conversation {
	return domain.Conversation{
		ID: string(r.ID), AgentID: string(r.AgentID), Kind: domain.ConversationKind(r.Kind), RoomID: r.RoomID,
		UserID: r.UserID, Platform: string(r.Platform), Title: r.Title, MessageCount: r.MessageCount,
		StartedAt: utc(r.CreatedAt), LastMessageAt: utc(r.LastMessageAt), Summary: r.Summary, Summarized: r.Summarized,
	}
}

// ReplyPartial is the partial flag of the agent's stored reply id in the
// account; ErrNotFound (resource "message") when there is none.
func (s Conversations) ReplyPartial(ctx context.Context, accountID, agentID, id string) (bool, error) {
	var partial []bool
	err := s.read(ctx).Model(&messageRow{}).
		Joins("JOIN conversations ON conversations.id = messages.conversation_id").
		Joins("JOIN agents ON agents.id = conversations.agent_id").
		Where("messages.id = ? AND messages.role = ? AND conversations.agent_id = ? AND agents.account_id = ?",
			id, domain.RoleAssistant, agentID, accountID).
		Pluck("messages.partial", &partial).Error
	if err != nil {
		return false, wrap("read reply", err)
	}
	if len(partial) == 0 {
		return false, &domain.Error{Code: domain.CodeNotFound, Resource: "message"}
	}
	return partial[0], nil
}

// FindConversation returns the conversation conv of agent agentID of
// account accountID; ErrConversationNotFound when it has none, and
// domain.ErrNotFound for a missing agent or one of another account.
func (s Conversations) FindConversation(ctx context.Context, accountID, agentID string, conv domain.ConversationRef) (domain.Conversation, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return domain.Conversation{}, wrap("find conversation", err)
	}
	var row conversationRow
	err := db.Take(&row, "agent_id = ? AND key = ?", agentID, conversationKey(conv)).Error
	if isNotFound(err) {
		err = domain.ErrConversationNotFound
	}
	if err != nil {
		return domain.Conversation{}, wrap("find conversation", err)
	}
	return toConversation(row), nil
}
