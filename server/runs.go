package server

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/oapi-codegen/nullable"
)

// ListAgentRuns answers a page of the agent's runs, newest first.
func (s *Server) ListAgentRuns(ctx context.Context, req gen.ListAgentRunsRequestObject) (gen.ListAgentRunsResponseObject, error) {
	accountID := principalFrom(ctx).Account.ID
	if _, err := s.cfg.Store.Agents.GetAgent(ctx, accountID, req.AgentId); err != nil {
		return nil, err
	}
	p := req.Params
	list, err := s.runList(ctx, p.Page, p.Limit, domain.RunQuery{AgentID: req.AgentId,
		ConversationID: deref(p.ConversationId), Status: domain.RunStatus(deref(p.Status)), Source: domain.RunSource(deref(p.Source))})
	if err != nil {
		return nil, err
	}
	return gen.ListAgentRuns200JSONResponse{Body: gen.RunListEnvelope{Success: true, Data: list}}, nil
}

// ListRuns answers a page of the account's runs, newest first.
func (s *Server) ListRuns(ctx context.Context, req gen.ListRunsRequestObject) (gen.ListRunsResponseObject, error) {
	p := req.Params
	list, err := s.runList(ctx, p.Page, p.Limit, domain.RunQuery{AgentID: deref(p.AgentId),
		ConversationID: deref(p.ConversationId), Status: domain.RunStatus(deref(p.Status)), Source: domain.RunSource(deref(p.Source))})
	if err != nil {
		return nil, err
	}
	return gen.ListRuns200JSONResponse{Body: gen.RunListEnvelope{Success: true, Data: list}}, nil
}

// runList is one page of the runs q selects.
func (s *Server) runList(ctx context.Context, page, limit *int, q domain.RunQuery) (gen.RunList, error) {
	q.Page, q.Limit = pageParams(page, limit)
	runs, total, err := s.cfg.Store.Runs.ListRuns(ctx, principalFrom(ctx).Account.ID, q)
	if err != nil {
		return gen.RunList{}, err
	}
	items := make([]gen.Run, len(runs))
	for i, r := range runs {
		items[i] = runOut(r)
	}
	return gen.RunList{Items: items, Pagination: pagination(q.Page, q.Limit, total)}, nil
}

// GetRun answers the run, once it ended or waits for an approval when
// `wait` asks to wait for that.
func (s *Server) GetRun(ctx context.Context, req gen.GetRunRequestObject) (gen.GetRunResponseObject, error) {
	accountID := principalFrom(ctx).Account.ID
	var run domain.Run
	var err error
	if w := req.Params.Wait; w != nil {
		run, err = s.cfg.Turns.Wait(ctx, accountID, req.AgentId, req.RunId, time.Duration(*w)*time.Second)
	} else {
		run, err = s.cfg.Store.Runs.GetRun(ctx, accountID, req.AgentId, req.RunId)
	}
	if err != nil {
		return nil, err
	}
	return gen.GetRun200JSONResponse{Body: gen.RunEnvelope{Success: true, Data: runOut(run)}}, nil
}

// CancelRun ends the run as cancelled unless it has ended.
func (s *Server) CancelRun(ctx context.Context, req gen.CancelRunRequestObject) (gen.CancelRunResponseObject, error) {
	run, err := s.cfg.Turns.Cancel(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.RunId)
	if err != nil {
		return nil, err
	}
	return gen.CancelRun200JSONResponse{Body: gen.RunEnvelope{Success: true, Data: runOut(run)}}, nil
}

// runLocation is where a run is read.
func runLocation(r domain.Run) string {
	return "/v1/agents/" + r.AgentID + "/runs/" + r.ID
}

// runOut renders a run as the contract's Run.
func runOut(r domain.Run) gen.Run {
	out := gen.Run{Id: r.ID, AgentId: r.AgentID, Source: gen.RunSource(r.Source), Status: gen.RunStatus(r.Status),
		Input: gen.RunInput{Text: r.Text}, MessageId: r.MessageID, MultitaskStrategy: gen.MultitaskStrategy(r.Strategy),
		Attempts: r.Attempts, CreatedAt: timestamp(r.CreatedAt),
		ConversationId: nullString(r.ConversationID), UserId: nullString(r.UserID), RoomId: nullString(r.RoomID),
		ParentRunId: nullString(r.ParentRunID), ScheduleId: nullString(r.ScheduleID),
		StartedAt: nullTime(r.StartedAt), FinishedAt: nullTime(r.FinishedAt),
		Reply: nullable.NewNullNullable[gen.MessageReply](), Error: nullable.NewNullNullable[gen.RunError](),
		RequiredAction: nullable.NewNullNullable[map[string]any](), CostUsd: nullable.NewNullNullable[float64]()}
	if r.Reply != nil {
		out.Reply.Set(messageReply(*r.Reply))
	}
	if r.ErrorCode != "" {
		out.Error.Set(gen.RunError{Code: r.ErrorCode, Message: r.ErrorMessage})
	}
	return out
}

// nullString is null for "", else v.
func nullString(v string) nullable.Nullable[string] {
	if v == "" {
		return nullable.NewNullNullable[string]()
	}
	return nullable.NewNullableWithValue(v)
}

// nullTime is null for the zero time, else t as a timestamp.
func nullTime(t time.Time) nullable.Nullable[gen.Timestamp] {
	if t.IsZero() {
		return nullable.NewNullNullable[gen.Timestamp]()
	}
	return nullable.NewNullableWithValue(timestamp(t))
}
