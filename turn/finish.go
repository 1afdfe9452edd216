package turn

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/price"
)

// finish turns the provider's outcome into the turn's Result: it stores
// the exchange, moves the agent in and out of `error`, and classifies
// provider failures. A reply cut short (ctx ended: the caller cancelled it;
// or the provider failed after it started) is stored as partial when it
// has any text and returned with the error (Partial set when it is stored,
// and always for a cut by ctx, whose error is ctx's). Its writes do not end with ctx: a reply the provider has given
// (and billed) is never lost.
func (s *Service) finish(ctx context.Context, t *Turn, reply llm.Reply, calls []domain.ToolCall, callErr error) (Result, error) {
	s.metrics.observe(t.agent.ModelProvider, callErr, time.Since(t.start))
	s.metrics.observeUsage(t.agent.ModelProvider, reply.Usage, calls)
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if t.in.Shape.MaxChars > 0 {
		reply.Text = llm.ShortenBy(reply.Text, t.in.Shape.MaxChars, t.in.Shape.Length)
	}
	meta := s.metadata(t, reply)
	meta.ToolCalls = calls
	if callErr != nil {
		cut := Result{}
		if (reply.Text != "" || t.interrupted()) && !t.discards() {
			stored, err := s.saveExchange(saveCtx, t, reply, meta, true, nil)
			if err != nil {
				return Result{}, err
			}
			cut = s.result(t, stored, reply, meta)
		}
		if ctx.Err() != nil {
			cut.MessageID, cut.Partial, cut.Metadata = t.replyID, true, meta
			return cut, ctx.Err()
		}
		return cut, s.providerFailure(ctx, t.in.RequestID, t.agent, callErr)
	}
	if t.agent.Status == domain.StatusError {
		if err := s.cfg.Stores.Agents.MarkAgentRecovered(saveCtx, t.agent.AccountID, t.agent.ID); err != nil {
			return Result{}, err
		}
	}
	// The run ends with the exchange, as settle would end it after.
	end := &domain.RunEnd{Status: domain.RunCompleted, Reply: s.result(t, domain.Message{}, reply, meta)}
	end.Reply.RunID = t.runID
	stored, err := s.saveExchange(saveCtx, t, reply, meta, false, end)
	if err != nil {
		return Result{}, err
	}
	s.summarizeLater(t)
	return s.result(t, stored, reply, meta), nil
}

// result is the Result of the stored reply.
func (s *Service) result(t *Turn, stored domain.Message, reply llm.Reply, meta Metadata) Result {
	return Result{MessageID: stored.ID, Text: reply.Text, AgentID: t.agent.ID, UserID: t.in.UserID,
		RoomID: t.in.Conv.RoomID, CreatedAt: stored.CreatedAt, Metadata: meta, Partial: stored.Partial}
}

// metadata describes the reply of t's run, priced once here: what is
// stored with the exchange, the run and the rollups, and what the caller
// is answered, all come from this one figure.
func (s *Service) metadata(t *Turn, reply llm.Reply) Metadata {
	tokens := reply.Usage.TotalTokens
	if tokens == 0 {
		tokens = reply.Usage.PromptTokens + reply.Usage.CompletionTokens
	}
	return Metadata{
		TokensUsed:       tokens,
		PromptTokens:     reply.Usage.PromptTokens,
		CompletionTokens: reply.Usage.CompletionTokens,
		CostMicros:       s.priceOf(t.agent, reply.Model).Cost(reply.Usage.PromptTokens, reply.Usage.CompletionTokens),
		ResponseMillis:   float64(time.Since(t.start).Microseconds()) / 1000,
		Model:            reply.Model,
		Truncated:        reply.Cut,
	}
}

// priceOf is what agent's calls cost: its modelSettings.price, else the
// table's price of the model it names, else that of the model the
// provider says answered (a dated snapshot of an alias, say), else 0.
func (s *Service) priceOf(agent domain.Agent, answered string) price.Price {
	var ms struct {
		Price *price.Price `json:"price"`
	}
	if ok, err := agent.Fields.Decode("modelSettings", &ms); ok && err == nil && ms.Price != nil {
		return *ms.Price
	}
	if p, ok := s.cfg.Prices.Lookup(agent.ModelProvider, agent.Model); ok {
		return p
	}
	p, _ := s.cfg.Prices.Lookup(agent.ModelProvider, answered)
	return p
}

// saveExchange stores the message and the reply described by meta, under
// the turn's reply id; partial marks a reply cut short. With end, the run
// ends as it says in the same write (its reply's id, time and partial flag
// the stored reply's): its end is then stored (t.ended) and its lane
// woken.
func (s *Service) saveExchange(ctx context.Context, t *Turn, reply llm.Reply, meta Metadata, partial bool, end *domain.RunEnd) (domain.Message, error) {
	// The message dates from when its run started, so a conversation's
	// history keeps the order its runs ran in.
	asked := t.start
	if started := t.Run().StartedAt; started.After(asked) {
		asked = started
	}
	// Both messages carry the prompt's tokens: the user's as round 1 had
	// it, the reply's so that it tells its whole usage on its own.
	user := domain.Message{Role: domain.RoleUser, UserID: t.in.UserID, Text: t.in.Text,
		PromptTokens: reply.Usage.PromptTokens, CreatedAt: asked}
	answer := domain.Message{ID: t.replyID, Role: domain.RoleAssistant, UserID: t.in.UserID, Text: reply.Text, Model: meta.Model,
		PromptTokens: reply.Usage.PromptTokens, CompletionTokens: reply.Usage.CompletionTokens, TokensUsed: meta.TokensUsed,
		CostMicros: meta.CostMicros, ResponseMillis: meta.ResponseMillis,
		Partial: partial, ToolCalls: meta.ToolCalls, RunID: t.runID}
	if at, ok := t.stoppedAt.Load().(time.Time); ok {
		answer.CreatedAt = at
	}
	var stored domain.Message
	var err error
	if end == nil || t.ended.Load() {
		stored, _, err = s.cfg.Stores.Conversations.SaveExchange(ctx, t.agent.AccountID, t.agent.ID, t.in.Conv, user, answer)
	} else {
		stored, err = s.finishExchange(ctx, t, user, answer, *end)
	}
	if err == nil && meta.CostMicros > 0 {
		s.alertSpend(ctx, t, meta.CostMicros)
	}
	return stored, err
}

// finishExchange stores the exchange and the end of t's run together.
// A run gone meanwhile leaves its end to settle, which reports it.
func (s *Service) finishExchange(ctx context.Context, t *Turn, user, answer domain.Message, end domain.RunEnd) (domain.Message, error) {
	stored, run, err := s.cfg.Stores.Conversations.FinishExchange(ctx, t.agent.AccountID, t.agent.ID, t.in.Conv, user, answer, end)
	if err != nil || run.ID == "" || t.ended.Swap(true) {
		return stored, err
	}
	t.setRun(run)
	s.board.runEnded(t.lane())
	return stored, nil
}

// providerFailure handles a failed provider call: failures of the provider
// itself put the agent in `error` for a cool-down (the provider's
// Retry-After when it gave one), failures about this request and a missing
// key leave its status alone. It returns a *ProviderError, or err itself
// when it is not the provider's (the caller went away, an internal
// failure). The error's fixed Reason is what clients and the stored status
// get; the provider's own (masked) text goes to the log only.
func (s *Service) providerFailure(ctx context.Context, requestID string, agent domain.Agent, err error) error {
	var le *llm.Error
	if !errors.As(err, &le) {
		return err
	}
	s.cfg.Logger.WarnContext(ctx, "model provider call failed", "request_id", requestID, "agent", agent.ID,
		"provider", le.Provider, "kind", le.Kind.String(), "status", le.Status, "reason", le.Reason, "detail", le.Detail)
	// The writes below must happen whether or not the caller waits.
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	s.recordTurnError(writeCtx, requestID, agent, le)
	switch le.Kind {
	case llm.KindNotConfigured, llm.KindRequest:
		return &ProviderError{Err: le, Status: agent.Status}
	}
	cooldown := s.cfg.ErrorCooldown
	if le.RetryAfter > 0 {
		cooldown = le.RetryAfter
	}
	status, err := s.cfg.Stores.Agents.MarkAgentError(writeCtx, agent.AccountID, agent.ID, le.Reason, time.Now().Add(cooldown))
	if err != nil {
		return err
	}
	pe := &ProviderError{Err: le, Status: status}
	if status == domain.StatusError {
		pe.RetryAfter = cooldown
	}
	return pe
}

// recordTurnError counts the failed turn in the agent's analytics, best
// effort: the caller's answer does not depend on it.
func (s *Service) recordTurnError(ctx context.Context, requestID string, agent domain.Agent, le *llm.Error) {
	if err := s.cfg.Stores.Analytics.RecordTurnError(ctx, agent.AccountID, agent.ID, le.Kind.String(), time.Now()); err != nil {
		s.cfg.Logger.WarnContext(ctx, "record failed turn", "request_id", requestID, "agent", agent.ID, "error", err)
	}
}
