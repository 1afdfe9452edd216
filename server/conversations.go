package server

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/price"
)

// Analytics ranges: the bounds and default openapi.yaml states for Get
// Agent Analytics.
const (
	defaultAnalyticsRange = 24 * time.Hour
	maxHourlyRange        = 7 * 24 * time.Hour
	maxDailyRange         = 366 * 24 * time.Hour
)

// ListConversations returns a page of the agent's conversations.
func (s *Server) ListConversations(ctx context.Context, req gen.ListConversationsRequestObject) (gen.ListConversationsResponseObject, error) {
	p := req.Params
	page, limit := pageParams(p.Page, p.Limit)
	q := domain.ConversationQuery{Page: page, Limit: limit, UserID: deref(p.UserId), RoomID: deref(p.RoomId), Platform: deref(p.Platform),
		Text: deref(p.Q)}
	convs, total, err := s.cfg.Store.Conversations.ListConversations(ctx, principalFrom(ctx).Account.ID, req.AgentId, q)
	if err != nil {
		return nil, err
	}
	items := make([]gen.Conversation, len(convs))
	for i, c := range convs {
		items[i] = conversation(c)
	}
	return gen.ListConversations200JSONResponse{Body: gen.ConversationListEnvelope{Success: true, Data: gen.ConversationList{
		Items: items, Pagination: pagination(page, limit, total),
	}}}, nil
}

// GetConversation returns one conversation of the agent.
func (s *Server) GetConversation(ctx context.Context, req gen.GetConversationRequestObject) (gen.GetConversationResponseObject, error) {
	c, err := s.cfg.Store.Conversations.GetConversation(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.ConversationId)
	if err != nil {
		return nil, err
	}
	return gen.GetConversation200JSONResponse{Body: gen.ConversationEnvelope{Success: true, Data: conversation(c)}}, nil
}

// ListConversationMessages returns a page of a conversation's messages.
func (s *Server) ListConversationMessages(ctx context.Context, req gen.ListConversationMessagesRequestObject) (gen.ListConversationMessagesResponseObject, error) {
	page, limit := pageParams(req.Params.Page, req.Params.Limit)
	q := domain.MessageQuery{Page: page, Limit: limit, Desc: req.Params.Order != nil && *req.Params.Order == gen.Desc}
	msgs, total, err := s.cfg.Store.Conversations.ListMessages(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.ConversationId, q)
	if err != nil {
		return nil, err
	}
	items := make([]gen.ConversationMessage, len(msgs))
	for i, m := range msgs {
		items[i] = conversationMessage(m)
	}
	return gen.ListConversationMessages200JSONResponse{Body: gen.ConversationMessageListEnvelope{Success: true,
		Data: gen.ConversationMessageList{Items: items, Pagination: pagination(page, limit, total)}}}, nil
}

// DeleteConversation forgets a conversation and its messages.
func (s *Server) DeleteConversation(ctx context.Context, req gen.DeleteConversationRequestObject) (gen.DeleteConversationResponseObject, error) {
	n, err := s.cfg.Store.Conversations.DeleteConversation(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.ConversationId)
	if err != nil {
		return nil, err
	}
	return gen.DeleteConversation200JSONResponse{Body: gen.ConversationDeletedEnvelope{Success: true,
		Data: gen.ConversationDeleted{Id: req.ConversationId, MessagesDeleted: int(n)}}}, nil
}

// GetAgentAnalytics reports the agent's usage over a range.
func (s *Server) GetAgentAnalytics(ctx context.Context, req gen.GetAgentAnalyticsRequestObject) (gen.GetAgentAnalyticsResponseObject, error) {
	q, err := analyticsQuery(req.Params, time.Now())
	if err != nil {
		return nil, err
	}
	rep, err := s.cfg.Store.Analytics.AgentAnalytics(ctx, principalFrom(ctx).Account.ID, req.AgentId, q)
	if err != nil {
		return nil, err
	}
	series := make([]gen.AnalyticsBucket, len(rep.Series))
	for i, b := range rep.Series {
		series[i] = gen.AnalyticsBucket{Start: timestamp(b.Start), Messages: int(b.Messages),
			TokensUsed: int(b.TokensUsed), CostUsd: price.USD(b.CostMicros), Errors: int(b.Errors), ToolCalls: int(b.ToolCalls),
			P50ResponseTime: b.P50ResponseTime}
	}
	t := rep.Totals
	return gen.GetAgentAnalytics200JSONResponse{Body: gen.AnalyticsEnvelope{Success: true, Data: gen.Analytics{
		From: timestamp(q.From), To: timestamp(q.To), Interval: gen.AnalyticsInterval(q.Interval), Series: series,
		Totals: gen.AnalyticsTotals{Messages: int(t.Messages), Conversations: int(t.Conversations), Users: int(t.Users),
			TokensUsed: int(t.TokensUsed), Errors: int(t.Errors), ToolCalls: int(t.ToolCalls), ToolErrors: int(t.ToolErrors),
			MemoriesSaved: int(t.MemoriesSaved), InputTokens: int(t.InputTokens), OutputTokens: int(t.OutputTokens),
			CostUsd:      price.USD(t.CostMicros),
			ResponseTime: gen.ResponseTimeStats{Avg: round2(t.ResponseTime.Avg), P50: t.ResponseTime.P50, P95: t.ResponseTime.P95}},
	}}}, nil
}

// analyticsQuery applies the defaults and bounds of analytics ranges to the
// validated parameters; now is the default end.
func analyticsQuery(p gen.GetAgentAnalyticsParams, now time.Time) (domain.AnalyticsQuery, error) {
	q := domain.AnalyticsQuery{To: now.UTC(), Interval: domain.IntervalHour}
	if p.To != nil {
		q.To = p.To.UTC()
	}
	q.From = q.To.Add(-defaultAnalyticsRange)
	if p.From != nil {
		q.From = p.From.UTC()
	}
	if p.Interval != nil {
		q.Interval = domain.Interval(*p.Interval)
	}
	if err := checkYears("from", q.From, firstShownYear); err != nil {
		return q, err
	}
	if err := checkYears("to", q.To, firstShownYear); err != nil {
		return q, err
	}
	maxRange, unit := maxHourlyRange, "7 days of hours"
	if q.Interval == domain.IntervalDay {
		maxRange, unit = maxDailyRange, "366 days of days"
	}
	switch span := q.To.Sub(q.From); {
	case span < 0:
		return q, invalidRequest("from", "must not be after to")
	case span > maxRange:
		return q, invalidRequest("from", "must be at most "+unit+" before to")
	}
	return q, nil
}

// pageParams applies the list defaults (page 1, 20 items).
func pageParams(page, limit *int) (int, int) {
	p, l := 1, domain.DefaultPageLimit
	if page != nil {
		p = *page
	}
	if limit != nil {
		l = *limit
	}
	return p, l
}

// pagination is the contract's pagination of a page of total items.
func pagination(page, limit int, total int64) gen.Pagination {
	return gen.Pagination{CurrentPage: page, ItemsPerPage: limit, TotalItems: int(total),
		TotalPages: int((total + int64(limit) - 1) / int64(limit))}
}

func conversation(c domain.Conversation) gen.Conversation {
	out := gen.Conversation{Id: c.ID, AgentId: c.AgentID, Kind: gen.ConversationKind(c.Kind),
		Platform: gen.ConversationPlatform(c.Platform), MessageCount: int(c.MessageCount),
		StartedAt: timestamp(c.StartedAt), LastMessageAt: timestamp(c.LastMessageAt)}
	if c.RoomID != "" {
		out.RoomId = &c.RoomID
	}
	if c.UserID != "" {
		out.UserId = &c.UserID
	}
	out.Summary = optional[string](c.Summary)
	out.Title = optional[string](c.Title)
	return out
}

func conversationMessage(m domain.Message) gen.ConversationMessage {
	out := gen.ConversationMessage{MessageId: m.ID, Role: gen.MessageRoleUser, Text: m.Text, Timestamp: timestamp(m.CreatedAt)}
	if m.UserID != "" {
		out.UserId = &m.UserID
	}
	if m.Role == domain.RoleAssistant {
		out.Role = gen.MessageRoleAgent
		out.Metadata = new(messageMetadata(domain.ReplyMetadata{TokensUsed: m.TokensUsed, PromptTokens: m.PromptTokens,
			CompletionTokens: m.CompletionTokens, CostMicros: m.CostMicros, ResponseMillis: m.ResponseMillis, Model: m.Model,
			ToolCalls: m.ToolCalls}))
		if m.Partial {
			out.Partial = &m.Partial
		}
	}
	return out
}

// round2 rounds to two decimals, the precision figures are shown with.
func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
