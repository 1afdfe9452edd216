package store

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/price"
	"gorm.io/gorm"
)

// eventRow is a row of webhook_events: an event's body, written in the
// transaction of the change it reports, shared by its deliveries.
type eventRow struct {
	ID        ctext `gorm:"primaryKey"`
	AccountID ctext `gorm:"not null"`
	AgentID   ctext `gorm:"not null;default:'';index:idx_webhook_events_agent"`
	// ConversationID is the conversation a message.completed event quotes,
	// so deleting the conversation deletes its text here too.
	ConversationID ctext     `gorm:"not null;default:'';index:idx_webhook_events_conversation"`
	Type           string    `gorm:"not null"`
	Body           string    `gorm:"type:text;not null"`
	CreatedAt      time.Time `gorm:"not null;autoCreateTime:false"`
	// TraceParent is the traceparent of the traced request or turn that
	// made the event ('' when it was not traced): its deliveries' spans
	// link to it.
	TraceParent string `gorm:"not null;default:''"`
}

// TableName names the table.
func (eventRow) TableName() string { return "webhook_events" }

// emitFunc queues an event in the transaction it was handed with.
type emitFunc func(domain.Event) error

// writeEvents is write for changes that report events: fn gets an emit
// that writes each event and its deliveries in fn's transaction (the
// outbox), so a rolled-back change emits nothing and a committed one is
// never lost. After a commit that queued deliveries it wakes the delivery
// workers of this process.
//
// Code of this package that reports a change of its own (connection.changed)
// calls writeEvents in place of write and emit inside fn.
func (s *core) writeEvents(ctx context.Context, op string, fn func(tx *gorm.DB, emit emitFunc) error) error {
	return s.writeEventsVia(s.write, ctx, op, fn)
}

// writeEventsVia is writeEvents through the writer write (s.write or
// s.writeGrouped).
func (s *core) writeEventsVia(write func(context.Context, string, func(*gorm.DB) error) error, ctx context.Context, op string,
	fn func(tx *gorm.DB, emit emitFunc) error) error {
	queued := 0
	err := write(ctx, op, func(tx *gorm.DB) error {
		queued = 0 // a retried transaction starts over
		return fn(tx, func(ev domain.Event) error {
			n, err := s.emit(ctx, tx, ev)
			queued += n
			return err
		})
	})
	if err == nil && queued > 0 {
		s.wakeWorkers()
	}
	return err
}

// Emit reports ev in a transaction of its own, for callers outside the
// store whose change is not a store write.
func (s Webhooks) Emit(ctx context.Context, ev domain.Event) error {
	return s.writeEvents(ctx, "emit event", func(_ *gorm.DB, emit emitFunc) error { return emit(ev) })
}

// emit writes ev and one pending delivery per webhook it goes to, in tx,
// and returns how many deliveries it queued. An event no webhook wants is
// not stored. The event keeps the trace of ctx, when it is traced.
func (s *core) emit(ctx context.Context, tx *gorm.DB, ev domain.Event) (int, error) {
	var hooks []webhookRow
	q := tx.Select("id", "events")
	if ev.WebhookID != "" {
		q = q.Where("id = ? AND account_id = ?", ev.WebhookID, ev.AccountID)
	} else {
		q = q.Where("account_id = ? AND enabled = ? AND (agent_id = '' OR agent_id = ?)", ev.AccountID, true, ev.AgentID)
	}
	if err := q.Find(&hooks).Error; err != nil {
		return 0, err
	}
	if ev.WebhookID == "" {
		hooks = slices.DeleteFunc(hooks, func(h webhookRow) bool { return !subscribes(h.Events, ev.Type) })
	}
	if len(hooks) == 0 {
		return 0, nil
	}
	t := s.now()
	body, err := encodeJSON(struct {
		Type      domain.EventType `json:"type"`
		Timestamp string           `json:"timestamp"`
		Data      any              `json:"data"`
	}{ev.Type, timestamp(t), ev.Data})
	if err != nil {
		return 0, invalidf("encode %s event: %v", ev.Type, err)
	}
	row := eventRow{ID: ctext(newID("evt_", t)), AccountID: ctext(ev.AccountID), AgentID: ctext(ev.AgentID),
		ConversationID: ctext(ev.ConversationID), Type: string(ev.Type), Body: string(body), CreatedAt: t,
		TraceParent: traceParent(ctx)}
	if err := tx.Create(&row).Error; err != nil {
		return 0, err
	}
	deliveries := make([]deliveryRow, len(hooks))
	for i, h := range hooks {
		deliveries[i] = deliveryRow{ID: ctext(newID("whd_", t)), WebhookID: h.ID, EventID: row.ID, Type: string(ev.Type),
			Status: string(domain.DeliveryPending), NextAttemptAt: &t, CreatedAt: t}
	}
	return len(deliveries), tx.Create(&deliveries).Error
}

// subscribes reports whether a webhook's stored events list selects typ.
func subscribes(events string, typ domain.EventType) bool {
	var list []string
	if err := json.Unmarshal([]byte(events), &list); err != nil {
		return false
	}
	return slices.Contains(list, domain.AllEvents) || slices.Contains(list, string(typ))
}

// timestamp renders t as the contract's RFC 3339 UTC with milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// agentSummary is an agent as List Agents shows it: the `agent` of
// agent.created and agent.updated.
type agentSummary struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Status        domain.Status   `json:"status"`
	CreatedAt     string          `json:"createdAt"`
	UpdatedAt     string          `json:"updatedAt"`
	ModelProvider string          `json:"modelProvider"`
	Model         string          `json:"model"`
	Clients       json.RawMessage `json:"clients"`
}

func summaryOf(a domain.Agent) agentSummary {
	clients := a.Fields["clients"]
	if len(clients) == 0 || string(clients) == "null" {
		clients = json.RawMessage("[]")
	}
	return agentSummary{ID: a.ID, Name: a.Name, Status: a.Status, CreatedAt: timestamp(a.CreatedAt),
		UpdatedAt: timestamp(a.UpdatedAt), ModelProvider: a.ModelProvider, Model: a.Model, Clients: clients}
}

// agentEvent is the data of agent.created (Changes nil) and agent.updated.
type agentEvent struct {
	Agent   agentSummary `json:"agent"`
	Changes []string     `json:"changes,omitempty"`
}

// agentIDEvent is the data of agent.deleted.
type agentIDEvent struct {
	AgentID string `json:"agentId"`
}

// statusEvent is the data of agent.status_changed.
type statusEvent struct {
	AgentID string        `json:"agentId"`
	From    domain.Status `json:"from"`
	To      domain.Status `json:"to"`
	Reason  string        `json:"reason"`
}

// statusChanged is the agent.status_changed event of agent a moving from
// from to a.Status.
func statusChanged(accountID, agentID string, from, to domain.Status, reason string) domain.Event {
	return domain.Event{AccountID: accountID, AgentID: agentID, Type: domain.EventAgentStatusChanged,
		Data: statusEvent{AgentID: agentID, From: from, To: to, Reason: reason}}
}

// messageEvent is the data of message.completed.
type messageEvent struct {
	AgentID        string        `json:"agentId"`
	RunID          string        `json:"runId,omitempty"`
	ConversationID string        `json:"conversationId,omitempty"`
	Platform       string        `json:"platform"`
	UserID         string        `json:"userId,omitempty"`
	RoomID         string        `json:"roomId,omitempty"`
	Request        messageText   `json:"request"`
	Reply          replyDocument `json:"reply"`
}

type messageText struct {
	MessageID string `json:"messageId"`
	Text      string `json:"text"`
}

type replyDocument struct {
	MessageID string        `json:"messageId"`
	Text      string        `json:"text"`
	Metadata  replyMetadata `json:"metadata"`
	Partial   bool          `json:"partial"`
}

type replyMetadata struct {
	TokensUsed   int               `json:"tokensUsed"`
	InputTokens  int               `json:"inputTokens"`
	OutputTokens int               `json:"outputTokens"`
	CostUSD      float64           `json:"costUsd"`
	ResponseTime float64           `json:"responseTime"`
	Model        string            `json:"model"`
	ToolCalls    []domain.ToolCall `json:"toolCalls,omitempty"`
}

// eventMetadata is a reply's metadata as events carry it.
func eventMetadata(m domain.ReplyMetadata) replyMetadata {
	return replyMetadata{TokensUsed: m.TokensUsed, InputTokens: m.PromptTokens, OutputTokens: m.CompletionTokens,
		CostUSD: price.USD(m.CostMicros), ResponseTime: m.ResponseMillis, Model: m.Model, ToolCalls: m.ToolCalls}
}

// messageCompleted is the message.completed event of a stored exchange.
func messageCompleted(accountID, agentID string, conv domain.ConversationRef, convID string, user, reply domain.Message) domain.Event {
	platform := conv.Platform
	if platform == "" {
		platform = domain.PlatformAPI
	}
	return domain.Event{AccountID: accountID, AgentID: agentID, ConversationID: convID, Type: domain.EventMessageCompleted, Data: messageEvent{
		AgentID: agentID, RunID: reply.RunID, ConversationID: convID, Platform: platform, UserID: conv.UserID, RoomID: conv.RoomID,
		Request: messageText{MessageID: user.ID, Text: user.Text},
		Reply: replyDocument{MessageID: reply.ID, Text: reply.Text, Partial: reply.Partial,
			Metadata: eventMetadata(domain.ReplyMetadata{TokensUsed: reply.TokensUsed, PromptTokens: reply.PromptTokens,
				CompletionTokens: reply.CompletionTokens, CostMicros: reply.CostMicros, ResponseMillis: reply.ResponseMillis,
				Model: reply.Model, ToolCalls: reply.ToolCalls})},
	}}
}

// quotingEvents are the event types whose bodies quote messages: a
// message's text and its run's input and reply.
var quotingEvents = []string{string(domain.EventMessageCompleted), string(domain.EventRunCompleted),
	string(domain.EventRunFailed), string(domain.EventRunCancelled), string(domain.EventRunRequiresAction)}

// deleteMessageEvents deletes the events quoting messages (quotingEvents)
// matching where (their bodies quote messages being deleted), with their
// deliveries and the deliveries' attempts, so no retry can send the text
// again.
func deleteMessageEvents(tx *gorm.DB, where string, args ...any) error {
	events := tx.Model(&eventRow{}).Select("id").Where("type IN ?", quotingEvents).Where(where, args...)
	deliveries := tx.Model(&deliveryRow{}).Select("id").Where("event_id IN (?)", events)
	if err := tx.Where("delivery_id IN (?)", deliveries).Delete(&attemptRow{}).Error; err != nil {
		return err
	}
	if err := tx.Where("event_id IN (?)", events).Delete(&deliveryRow{}).Error; err != nil {
		return err
	}
	return tx.Where("type IN ?", quotingEvents).Where(where, args...).Delete(&eventRow{}).Error
}

// MaxEventReply is the most characters of a run's reply a run event
// quotes.
const MaxEventReply = 2000

// runEvent is the data of the run.* events: the Run as the contract shows
// it, its reply's response cut to MaxEventReply characters.
type runEvent struct {
	Run runDocument `json:"run"`
}

type runDocument struct {
	ID                string          `json:"id"`
	AgentID           string          `json:"agentId"`
	ConversationID    *string         `json:"conversationId"`
	UserID            *string         `json:"userId"`
	RoomID            *string         `json:"roomId"`
	Source            string          `json:"source"`
	Status            string          `json:"status"`
	Input             messageInput    `json:"input"`
	MessageID         string          `json:"messageId"`
	Reply             *runReply       `json:"reply"`
	RequiredAction    json.RawMessage `json:"requiredAction"`
	Error             *runError       `json:"error"`
	ParentRunID       *string         `json:"parentRunId"`
	ScheduleID        *string         `json:"scheduleId"`
	MultitaskStrategy string          `json:"multitaskStrategy"`
	Attempts          int             `json:"attempts"`
	InputTokens       int             `json:"inputTokens"`
	OutputTokens      int             `json:"outputTokens"`
	CostUSD           float64         `json:"costUsd"`
	CreatedAt         string          `json:"createdAt"`
	StartedAt         *string         `json:"startedAt"`
	FinishedAt        *string         `json:"finishedAt"`
}

type messageInput struct {
	Text string `json:"text"`
}

type runError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// runReply is a reply as Send Message answers it.
type runReply struct {
	MessageID string        `json:"messageId"`
	RunID     string        `json:"runId"`
	Response  string        `json:"response"`
	AgentID   string        `json:"agentId"`
	UserID    string        `json:"userId,omitempty"`
	RoomID    string        `json:"roomId,omitempty"`
	Timestamp string        `json:"timestamp"`
	Metadata  replyMetadata `json:"metadata"`
}

// runEnded is the run.* event of r, which just reached its status.
func runEnded(r domain.Run) domain.Event {
	types := map[domain.RunStatus]domain.EventType{domain.RunCompleted: domain.EventRunCompleted,
		domain.RunFailed: domain.EventRunFailed, domain.RunRequiresAction: domain.EventRunRequiresAction}
	typ, ok := types[r.Status]
	if !ok {
		typ = domain.EventRunCancelled // cancelled, interrupted, rolled back
	}
	doc := runDocument{ID: r.ID, AgentID: r.AgentID, ConversationID: orNull(r.ConversationID), UserID: orNull(r.UserID),
		RoomID: orNull(r.RoomID), Source: string(r.Source), Status: string(r.Status), Input: messageInput{Text: r.Text},
		MessageID: r.MessageID, RequiredAction: json.RawMessage("null"), ParentRunID: orNull(r.ParentRunID),
		ScheduleID: orNull(r.ScheduleID), MultitaskStrategy: string(r.Strategy), Attempts: r.Attempts,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: price.USD(r.CostMicros),
		CreatedAt: timestamp(r.CreatedAt), StartedAt: stampOrNull(r.StartedAt), FinishedAt: stampOrNull(r.FinishedAt)}
	if r.ErrorCode != "" {
		doc.Error = &runError{Code: r.ErrorCode, Message: r.ErrorMessage}
	}
	if a := r.RequiredAction(); a != nil {
		doc.RequiredAction, _ = json.Marshal(requiredAction(*a)) // plain structs
	}
	if p := r.Reply; p != nil {
		doc.Reply = &runReply{MessageID: p.MessageID, RunID: r.ID, Response: domain.CutText(p.Text, MaxEventReply),
			AgentID: r.AgentID, UserID: p.UserID, RoomID: p.RoomID, Timestamp: timestamp(p.CreatedAt),
			Metadata: eventMetadata(p.Metadata)}
	}
	return domain.Event{AccountID: r.AccountID, AgentID: r.AgentID, ConversationID: r.ConversationID, Type: typ,
		Data: runEvent{Run: doc}}
}

// requiredActionDocument is the contract's RequiredAction.
type requiredActionDocument struct {
	Type      string            `json:"type"`
	ToolCalls []waitingDocument `json:"toolCalls"`
	ExpiresAt string            `json:"expiresAt"`
}

type waitingDocument struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func requiredAction(a domain.RequiredAction) requiredActionDocument {
	out := requiredActionDocument{Type: "approve_tool_calls", ToolCalls: []waitingDocument{}, ExpiresAt: timestamp(a.ExpiresAt)}
	for _, c := range a.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, waitingDocument{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return out
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func stampOrNull(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timestamp(t)
	return &s
}
