package server

import (
	"context"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/price"
	"github.com/agentd/agentd/turn"
)

// SendMessage answers with the agent's whole reply, or streams it when the
// body asks for `stream: true`.
func (s *Server) SendMessage(ctx context.Context, req gen.SendMessageRequestObject) (gen.SendMessageResponseObject, error) {
	if b := req.Body; b.Background != nil && *b.Background {
		if b.Stream != nil && *b.Stream {
			return nil, invalidRequest("background", "must not be true together with stream")
		}
		return s.sendInBackground(ctx, req)
	}
	if req.Body.Stream != nil && *req.Body.Stream {
		r, err := s.streamReply(ctx, req.AgentId, req.Body)
		if err != nil {
			return nil, err // not a nil *sseResponse in the interface
		}
		return r, nil
	}
	in := apiTurn(ctx, req.AgentId, req.Body)
	in.StartAtOnce = true // the answer is its reply, or the run as it is after the wait
	t, err := s.cfg.Turns.Accept(ctx, in)
	if err != nil {
		return nil, err
	}
	// The run goes on without the request: a client that leaves, or waits
	// longer than RunWait, finds its reply in the run.
	accepted := t.Run() // before the run goes on its own
	o, ended, err := s.waitForRun(ctx, t)
	switch {
	case err != nil:
		return nil, err
	case !ended || goesOn(o.Err):
		return s.runAccepted(ctx, accepted)
	case o.Err != nil:
		return nil, o.Err
	}
	return gen.SendMessage200JSONResponse{Body: gen.MessageReplyEnvelope{Success: true, Data: messageReply(o.Result)}}, nil
}

// runAccepted is the 202 of a run that goes on, as it is now.
func (s *Server) runAccepted(ctx context.Context, accepted domain.Run) (gen.SendMessageResponseObject, error) {
	run, err := s.cfg.Store.Runs.GetRun(ctx, accepted.AccountID, accepted.AgentID, accepted.ID)
	if err != nil {
		return nil, err
	}
	location := runLocation(run)
	return gen.SendMessage202JSONResponse{Body: gen.RunEnvelope{Success: true, Data: runOut(run)},
		Headers: gen.SendMessage202ResponseHeaders{Location: &location}}, nil
}

// StreamMessage streams the agent's reply as server-sent events.
func (s *Server) StreamMessage(ctx context.Context, req gen.StreamMessageRequestObject) (gen.StreamMessageResponseObject, error) {
	r, err := s.streamReply(ctx, req.AgentId, req.Body)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// streamReply accepts the message as a run whose events the answer
// streams: refusals are errors before the stream, what happens to the
// run once accepted (queued, stopped, failed) is in its events.
func (s *Server) streamReply(ctx context.Context, agentID string, body *gen.MessageRequest) (*sseResponse, error) {
	t, err := s.cfg.Turns.Accept(ctx, apiTurn(ctx, agentID, body))
	if err != nil {
		return nil, err
	}
	return &sseResponse{s: s, ctx: ctx, turn: t}, nil
}

// sendInBackground accepts the message as a run that goes on without the
// client, which waits for a slot rather than being refused, and answers
// 202 with the run; its events stream as the run's.
func (s *Server) sendInBackground(ctx context.Context, req gen.SendMessageRequestObject) (gen.SendMessageResponseObject, error) {
	in := apiTurn(ctx, req.AgentId, req.Body)
	in.Slot = turn.SlotWait
	t, err := s.cfg.Turns.Accept(ctx, in)
	if err != nil {
		return nil, err
	}
	accepted := t.Run()     // before the run goes on its own
	s.detach(ctx, t, false) // nobody waits for its outcome
	return s.runAccepted(ctx, accepted)
}

// apiTurn is the turn of a Send Message body: limited by the agent's
// concurrency cap, stored in the room's conversation, else the user's
// direct one, else none.
func apiTurn(ctx context.Context, agentID string, b *gen.MessageRequest) turn.Input {
	in := turn.Input{AccountID: principalFrom(ctx).Account.ID, AgentID: agentID, Text: b.Text,
		UserID: deref(b.UserId), Slot: turn.SlotRefuseWhenFull, RequestID: requestIDFrom(ctx),
		Source: domain.SourceAPI, Strategy: domain.Strategy(deref(b.MultitaskStrategy)),
		Conv: domain.ConversationRef{RoomID: deref(b.RoomId), UserID: deref(b.UserId), Platform: domain.PlatformAPI}}
	if c := b.Context; c != nil {
		in.Platform, in.Channel = deref(c.Platform), deref(c.Channel)
	}
	return in
}

// messageReply renders a turn's result as the contract's reply.
func messageReply(r turn.Result) gen.MessageReply {
	return gen.MessageReply{
		MessageId: r.MessageID, RunId: optional[string](r.RunID), Response: r.Text, AgentId: r.AgentID,
		UserId: optional[string](r.UserID), RoomId: optional[string](r.RoomID),
		Timestamp: timestamp(r.CreatedAt),
		Metadata:  messageMetadata(r.Metadata),
	}
}

func messageMetadata(m turn.Metadata) gen.MessageMetadata {
	md := gen.MessageMetadata{TokensUsed: m.TokensUsed, InputTokens: m.PromptTokens, OutputTokens: m.CompletionTokens,
		CostUsd: price.USD(m.CostMicros), ResponseTime: m.ResponseMillis, Model: m.Model, ToolCalls: toolCalls(m.ToolCalls)}
	if m.Truncated {
		md.Truncated = &m.Truncated
	}
	return md
}

// toolCalls renders a turn's tool calls; nil (absent) for none.
func toolCalls(calls []domain.ToolCall) *[]gen.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]gen.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = gen.ToolCall{Id: c.ID, Name: c.Name, Arguments: gen.JSONObject(c.Arguments), Ok: c.OK,
			Result: c.Result, DurationMs: c.DurationMs, Approval: approvalOut(c.Approval)}
	}
	return &out
}

// approvalOut renders the decision on a call that waited; nil (absent)
// for one that did not.
func approvalOut(a *domain.Approval) *gen.ToolCallApproval {
	if a == nil {
		return nil
	}
	out := &gen.ToolCallApproval{Approved: a.Approved, By: a.By, ByName: optional[string](a.ByName),
		DecidedAt: timestamp(a.DecidedAt), Reason: optional[string](a.Reason)}
	return out
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
