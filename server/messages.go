package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/store"
)

// maxInFlightPerAgent caps simultaneous Send Message requests per agent.
const maxInFlightPerAgent = 10

// saveTimeout bounds the writes after the provider call, which go on when
// the client has gone away.
const saveTimeout = 5 * time.Second

// turnInput is a message to an agent, from the API or a platform.
type turnInput struct {
	accountID, agentID string
	text               string
	userID, roomID     string // "" when absent
	platform, channel  string // the prompt's context
	conv               store.ConversationRef
	// post asks for an original post: text is filled with the post
	// prompt from the character (llm.PostPrompt) once it is read.
	post     bool
	maxChars int // the platform's limit on a message, 0 for none
}

// turn is one message to an agent between the checks and the reply.
type turn struct {
	agent   store.Agent
	apiKey  string // the agent's own provider key, "" for the environment's
	in      turnInput
	llmReq  llm.Request
	start   time.Time
	release func()
}

// SendMessage answers with the agent's whole reply, or streams it when the
// body asks for `stream: true`.
func (s *Server) SendMessage(ctx context.Context, req gen.SendMessageRequestObject) (gen.SendMessageResponseObject, error) {
	t, err := s.prepareTurn(ctx, apiTurn(ctx, req.AgentId, req.Body), true)
	if err != nil {
		return nil, err
	}
	if req.Body.Stream != nil && *req.Body.Stream {
		return &sseResponse{s: s, ctx: ctx, turn: t}, nil
	}
	defer t.release()
	reply, err := s.cfg.Replier.Generate(ctx, t.llmReq)
	msg, err := s.finishTurn(ctx, t, reply, err)
	if err != nil {
		return nil, err
	}
	return gen.SendMessage200JSONResponse{Body: gen.MessageReplyEnvelope{Success: true, Data: msg}}, nil
}

// StreamMessage streams the agent's reply as server-sent events.
func (s *Server) StreamMessage(ctx context.Context, req gen.StreamMessageRequestObject) (gen.StreamMessageResponseObject, error) {
	t, err := s.prepareTurn(ctx, apiTurn(ctx, req.AgentId, req.Body), true)
	if err != nil {
		return nil, err
	}
	return &sseResponse{s: s, ctx: ctx, turn: t}, nil
}

var _ connect.Turner = (*Server)(nil)

// Turn answers a platform message through the path of Send Message, minus
// the HTTP limits: platform connections bound their own work (one turn at a
// time per chat, a bounded queue per connection).
func (s *Server) Turn(ctx context.Context, req connect.TurnRequest) (connect.TurnReply, error) {
	in := turnInput{accountID: req.AccountID, agentID: req.AgentID, text: req.Text, userID: req.UserID,
		roomID: req.Conv.RoomID, platform: req.Conv.Platform, channel: req.Channel, conv: req.Conv,
		post: req.Post, maxChars: req.MaxChars}
	t, err := s.prepareTurn(ctx, in, false)
	if err != nil {
		return connect.TurnReply{}, err
	}
	defer t.release()
	reply, err := s.cfg.Replier.Generate(ctx, t.llmReq)
	if in.maxChars > 0 { // shortened before it is stored: history keeps what the platform shows
		reply.Text = llm.Shorten(reply.Text, in.maxChars)
	}
	msg, err := s.finishTurn(ctx, t, reply, err)
	if err != nil {
		return connect.TurnReply{}, err
	}
	return connect.TurnReply{Text: msg.Response}, nil
}

// apiTurn is the turn of a Send Message body.
func apiTurn(ctx context.Context, agentID string, b *gen.MessageRequest) turnInput {
	in := turnInput{accountID: principalFrom(ctx).Account.ID, agentID: agentID, text: b.Text,
		userID: deref(b.UserId), roomID: deref(b.RoomId), conv: conversationRef(b)}
	if c := b.Context; c != nil {
		in.platform, in.channel = deref(c.Platform), deref(c.Channel)
	}
	return in
}

// prepareTurn does every check that can refuse a message before the
// provider is called, takes a concurrency slot when limited (messages
// through the API) and builds the provider request. The caller must call
// t.release.
func (s *Server) prepareTurn(ctx context.Context, in turnInput, limited bool) (*turn, error) {
	start := time.Now()
	if strings.TrimSpace(in.text) == "" && !in.post {
		return nil, fieldError(gen.INVALIDMESSAGE, "text", "must not be empty or only whitespace")
	}
	agent, err := s.cfg.Store.GetAgent(ctx, in.accountID, in.agentID)
	if err != nil {
		return nil, err
	}
	if err := refuseUnavailable(agent, start); err != nil {
		return nil, err
	}
	apiKey, err := s.agentAPIKey(agent)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Replier.Configured(agent.ModelProvider, apiKey); err != nil {
		return nil, s.providerFailure(ctx, agent, err)
	}
	release := func() {}
	if limited {
		var ok bool
		release, ok, err = s.cfg.Semaphore.TryAcquire(ctx, "agent:"+agent.ID, maxInFlightPerAgent)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errRateLimited(1, map[string]any{"limit": "concurrency"})
		}
	}
	t := &turn{agent: agent, apiKey: apiKey, in: in, start: start, release: release}
	if t.llmReq, err = s.providerRequest(ctx, t); err != nil {
		release()
		return nil, err
	}
	return t, nil
}

// errSecretKeyReason is the reason of the 503 for an agent whose secrets do
// not decrypt; it names the setting to fix and no secret.
const errSecretKeyReason = "The agent's secrets cannot be decrypted: AGENTD_SECRET_KEY is not set or is not the key they were written with."

// agentAPIKey returns the agent's own key for its provider (the secret
// named like the provider's variable, e.g. OPENAI_API_KEY), "" when it has
// none. Secrets that do not decrypt refuse the call with 503 without
// putting the agent in error: the fix is the server's key, not the provider.
func (s *Server) agentAPIKey(agent store.Agent) (string, error) {
	secrets, err := s.cfg.Store.Secrets(agent)
	if errors.Is(err, store.ErrSecretUnreadable) {
		s.cfg.Logger.Warn("agent secrets cannot be decrypted", "agent", agent.ID, "error", err)
		return "", errUnavailable(agent.Status, errSecretKeyReason)
	}
	if err != nil {
		return "", err
	}
	return secrets.String(llm.APIKeyVar(agent.ModelProvider)), nil
}

// refuseUnavailable refuses inactive agents, and agents in error until their
// cool-down has passed.
func refuseUnavailable(a store.Agent, now time.Time) error {
	switch {
	case a.Status == store.StatusInactive:
		return errUnavailable(store.StatusInactive, "The agent is inactive; set its status to active to talk to it.")
	case a.Status == store.StatusError && now.Before(a.RetryAt):
		return errUnavailable(store.StatusError, a.StatusReason)
	}
	return nil
}

// conversationRef names the conversation a message through the API belongs
// to: its room, else its user's direct conversation, else none.
func conversationRef(b *gen.MessageRequest) store.ConversationRef {
	return store.ConversationRef{RoomID: deref(b.RoomId), UserID: deref(b.UserId), Platform: store.PlatformAPI}
}

// providerRequest shapes the provider call from the agent's character, the
// conversation's recent history and the message.
func (s *Server) providerRequest(ctx context.Context, t *turn) (llm.Request, error) {
	doc, err := json.Marshal(t.agent.Fields)
	if err != nil {
		return llm.Request{}, fmt.Errorf("server: encode agent: %w", err)
	}
	var ch llm.Character
	if err := json.Unmarshal(doc, &ch); err != nil {
		return llm.Request{}, fmt.Errorf("server: decode character: %w", err)
	}
	if t.in.post {
		t.in.text = llm.PostPrompt(ch, t.in.maxChars)
	}
	cx := llm.Context{Platform: t.in.platform, Channel: t.in.channel}
	req := llm.Request{
		Provider: t.agent.ModelProvider, Model: t.agent.Model, APIKey: t.apiKey,
		System: llm.BuildSystemPrompt(ch, cx), Text: speaker(t.in) + t.in.text,
		Options: ch.Options(), MaxReplyChars: ch.MaxReplyChars(),
	}
	if window := ch.HistoryWindow(); window > 0 {
		history, err := s.cfg.Store.History(ctx, t.agent.AccountID, t.agent.ID, t.in.conv, window)
		if err != nil {
			return llm.Request{}, err
		}
		req.History = llmHistory(history, t.in.roomID != "")
	}
	return req, nil
}

// speaker prefixes room messages with their author, so the model can tell
// the people of a room apart.
func speaker(in turnInput) string {
	if in.roomID != "" && in.userID != "" {
		return in.userID + ": "
	}
	return ""
}

func llmHistory(msgs []store.Message, room bool) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		out[i] = llm.Message{Role: llm.Role(m.Role), Content: m.Text}
		if room && m.Role == store.RoleUser && m.UserID != "" {
			out[i].Content = m.UserID + ": " + m.Text
		}
	}
	return out
}

// finishTurn turns the provider's outcome into the reply of the contract:
// it stores the exchange (the partial reply too when the client went away),
// moves the agent in and out of `error`, and maps provider failures. Its
// writes do not end with the request: a client leaving right after the last
// token must not lose a reply the provider has already given (and billed).
func (s *Server) finishTurn(ctx context.Context, t *turn, reply llm.Reply, callErr error) (gen.MessageReply, error) {
	s.metrics.observeProvider(t.agent.ModelProvider, callErr, time.Since(t.start))
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	meta := metadata(t, reply)
	if callErr != nil {
		if ctx.Err() != nil && reply.Text != "" {
			_, _ = s.saveExchange(saveCtx, t, reply, meta, true)
		}
		return gen.MessageReply{}, s.providerFailure(ctx, t.agent, callErr)
	}
	if t.agent.Status == store.StatusError {
		if err := s.cfg.Store.MarkAgentRecovered(saveCtx, t.agent.AccountID, t.agent.ID); err != nil {
			return gen.MessageReply{}, err
		}
	}
	stored, err := s.saveExchange(saveCtx, t, reply, meta, false)
	if err != nil {
		return gen.MessageReply{}, err
	}
	return gen.MessageReply{
		MessageId: stored.ID, Response: reply.Text, AgentId: t.agent.ID,
		UserId: optional[string](t.in.userID), RoomId: optional[string](t.in.roomID),
		Timestamp: timestamp(stored.CreatedAt),
		Metadata:  meta,
	}, nil
}

func metadata(t *turn, reply llm.Reply) gen.MessageMetadata {
	tokens := reply.Usage.TotalTokens
	if tokens == 0 {
		tokens = reply.Usage.PromptTokens + reply.Usage.CompletionTokens
	}
	return gen.MessageMetadata{
		TokensUsed:   tokens,
		ResponseTime: float64(time.Since(t.start).Microseconds()) / 1000,
		Model:        reply.Model,
	}
}

// saveExchange stores the message and the reply described by meta; partial
// marks a reply its client did not wait for.
func (s *Server) saveExchange(ctx context.Context, t *turn, reply llm.Reply, meta gen.MessageMetadata, partial bool) (store.Message, error) {
	user := store.Message{Role: store.RoleUser, UserID: t.in.userID, Text: t.in.text,
		PromptTokens: reply.Usage.PromptTokens, CreatedAt: t.start}
	answer := store.Message{Role: store.RoleAssistant, UserID: t.in.userID, Text: reply.Text, Model: meta.Model,
		CompletionTokens: reply.Usage.CompletionTokens, TokensUsed: meta.TokensUsed, ResponseMillis: meta.ResponseTime,
		Partial: partial}
	stored, _, err := s.cfg.Store.SaveExchange(ctx, t.agent.AccountID, t.agent.ID, t.in.conv, user, answer)
	return stored, err
}

// providerFailure handles a failed provider call: failures of the provider
// itself put the agent in `error` for a cool-down (503), failures about this
// request are 502 MODEL_ERROR, a missing key is 503 without a state change.
// Clients and the stored status get the error's fixed Reason; the
// provider's own (masked) text goes to the log only.
func (s *Server) providerFailure(ctx context.Context, agent store.Agent, err error) error {
	var le *llm.Error
	if !errors.As(err, &le) {
		return err // the client went away, or an internal failure
	}
	s.cfg.Logger.Warn("model provider call failed", "request_id", requestIDFrom(ctx), "agent", agent.ID,
		"provider", le.Provider, "kind", le.Kind.String(), "status", le.Status, "reason", le.Reason, "detail", le.Detail)
	// The writes below must happen whether or not the client waits.
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	s.recordTurnError(writeCtx, agent, le)
	switch le.Kind {
	case llm.KindNotConfigured, llm.KindRequest:
		return providerError(le, agent.Status)
	}
	cooldown := s.cfg.ErrorCooldown
	if le.RetryAfter > 0 {
		cooldown = le.RetryAfter
	}
	status, err := s.cfg.Store.MarkAgentError(writeCtx, agent.AccountID, agent.ID, le.Reason, time.Now().Add(cooldown))
	if err != nil {
		return err
	}
	return providerError(le, status)
}

// recordTurnError counts the failed turn in the agent's analytics, best
// effort: the client's answer does not depend on it.
func (s *Server) recordTurnError(ctx context.Context, agent store.Agent, le *llm.Error) {
	if err := s.cfg.Store.RecordTurnError(ctx, agent.AccountID, agent.ID, le.Kind.String(), time.Now()); err != nil {
		s.cfg.Logger.Warn("record failed turn", "request_id", requestIDFrom(ctx), "agent", agent.ID, "error", err)
	}
}

// optional is nil for "", else a pointer to v.
func optional[T ~string](v string) *T {
	if v == "" {
		return nil
	}
	p := T(v)
	return &p
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}
