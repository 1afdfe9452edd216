package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/price"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/turn"
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
	out := runOut(run)
	if out.Children, err = s.runChildren(ctx, run); err != nil {
		return nil, err
	}
	return gen.GetRun200JSONResponse{Body: gen.RunEnvelope{Success: true, Data: out}}, nil
}

// runChildren are the asks run made: its local child runs, then its
// remote asks.
func (s *Server) runChildren(ctx context.Context, run domain.Run) (*[]gen.RunChild, error) {
	runs, err := s.cfg.Store.Runs.ChildRuns(ctx, run.AccountID, run.ID)
	if err != nil {
		return nil, err
	}
	out := make([]gen.RunChild, 0, len(runs))
	for _, c := range runs {
		out = append(out, gen.RunChild{Id: nullString(c.ID), AgentId: nullString(c.AgentID),
			Agent: nullable.NewNullNullable[string](), Status: gen.RunStatus(c.Status),
			CostUsd: nullable.NewNullableWithValue(price.USD(c.CostMicros))})
	}
	var remotes map[string]agent.RemoteSettings
	if !run.Status.Final() { // an ask going on is known by the remote it names
		a, err := s.cfg.Store.Agents.GetAgent(ctx, run.AccountID, run.AgentID)
		if err != nil {
			return nil, err
		}
		remotes = agent.Document(a.Fields).Asks().Remote
	}
	for _, r := range turn.RemoteAsks(run, remotes) {
		out = append(out, gen.RunChild{Id: nullable.NewNullNullable[string](), AgentId: nullable.NewNullNullable[string](),
			Agent: nullString(r.Agent), Status: gen.RunStatus(r.Status), CostUsd: nullable.NewNullNullable[float64]()})
	}
	return &out, nil
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
		RequiredAction: nullable.NewNullNullable[gen.RequiredAction](), InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CostUsd: nullable.NewNullableWithValue(price.USD(r.CostMicros))}
	if a := r.RequiredAction(); a != nil {
		out.RequiredAction.Set(gen.RequiredAction{Type: "approve_tool_calls", ToolCalls: waitingCalls(a.ToolCalls),
			ExpiresAt: timestamp(a.ExpiresAt)})
	}
	if r.Reply != nil {
		out.Reply.Set(messageReply(*r.Reply))
	}
	if r.ErrorCode != "" {
		out.Error.Set(gen.RunError{Code: r.ErrorCode, Message: r.ErrorMessage})
	}
	return out
}

// waitingCalls renders the calls a run waits for.
func waitingCalls(calls []domain.WaitingCall) []gen.WaitingToolCall {
	out := make([]gen.WaitingToolCall, len(calls))
	for i, c := range calls {
		out[i] = gen.WaitingToolCall{Id: c.ID, Name: c.Name, Arguments: gen.JSONObject(c.Arguments)}
	}
	return out
}

// DecideApprovals decides every call the run waits for; the run goes on.
func (s *Server) DecideApprovals(ctx context.Context, req gen.DecideApprovalsRequestObject) (gen.DecideApprovalsResponseObject, error) {
	p := principalFrom(ctx)
	now := time.Now()
	decisions := make([]domain.Decision, len(req.Body.Decisions))
	for i, d := range req.Body.Decisions {
		decisions[i] = domain.Decision{CallID: d.CallId, Approve: d.Approve, Reason: deref(d.Reason), By: p.Key.Prefix, DecidedAt: now}
		if d.Arguments == nil {
			continue
		}
		if !d.Approve {
			return nil, invalidRequest(fmt.Sprintf("decisions[%d].arguments", i), "must not be given with approve: false")
		}
		decisions[i].Arguments, _ = json.Marshal(*d.Arguments) // decoded from JSON
	}
	run, err := s.cfg.Turns.Decide(ctx, p.Account.ID, req.AgentId, req.RunId, decisions, true)
	if err != nil {
		return nil, err
	}
	return gen.DecideApprovals200JSONResponse{Body: gen.RunEnvelope{Success: true, Data: runOut(run)}}, nil
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

// StreamRun follows the run's events: the kept events of a run of the API
// (detach keeps every one's) after Last-Event-ID, then live; any other
// run's end (a platform's, or one whose events are no longer kept), once
// it ended, as one done or error event built from the stored run.
func (s *Server) StreamRun(ctx context.Context, req gen.StreamRunRequestObject) (gen.StreamRunResponseObject, error) {
	accountID := principalFrom(ctx).Account.ID
	run, err := s.cfg.Store.Runs.GetRun(ctx, accountID, req.AgentId, req.RunId)
	if err != nil {
		return nil, err
	}
	after := 0
	if id := req.Params.LastEventID; id != nil {
		after, _ = strconv.Atoi(*id) // the spec allows digits alone
	}
	key := streamlog.Key{AccountID: accountID, AgentID: run.AgentID, MessageID: run.MessageID}
	f, err := s.streams.Follow(ctx, key, after)
	if err == nil {
		return runStream{s: s, ctx: ctx, follower: f}, nil
	}
	if !errors.Is(err, streamlog.ErrNotFound) {
		return nil, err
	}
	return runStream{s: s, ctx: ctx, run: run}, nil
}

// runStream is the answer of StreamRun: a follower of the run's kept
// events, or the run, whose end it sends once it ended.
type runStream struct {
	s        *Server
	ctx      context.Context
	follower *streamlog.Follower
	run      domain.Run
}

// VisitStreamRunResponse streams the events.
func (r runStream) VisitStreamRunResponse(w http.ResponseWriter) error {
	if r.follower != nil {
		return r.s.followStream(r.ctx, w, r.follower)
	}
	ctx, gone := context.WithCancel(r.ctx)
	defer gone()
	ev, err := r.s.openStream(w, gone)
	if err != nil {
		return nil // the client is gone before the first byte
	}
	stop := ev.pingEvery(r.s.cfg.PingInterval)
	// WaitEnd, not a loop of Wait: Wait answers at once while the run
	// waits for decisions, which would spin here.
	run, err := r.s.cfg.Turns.WaitEnd(ctx, r.run.AccountID, r.run.AgentID, r.run.ID)
	stop()
	if err != nil {
		return nil // the client resumes again
	}
	if ctx.Err() != nil {
		return nil
	}
	return ev.logEvent(streamlog.Event{ID: 1, Data: r.s.eventJSON(ctx, runEnd(run))})
}

// runEnd is the last stream event of an ended run: error with the error
// of a failed one, else done with its reply (partial for a run stopped
// before it completed, as a cancelled message stream ends).
func runEnd(run domain.Run) any {
	if run.Status == domain.RunFailed {
		return gen.StreamErrorEvent{Type: gen.StreamEventTypeError,
			Error: gen.Error{Code: gen.ErrorCode(run.ErrorCode), Message: run.ErrorMessage}}
	}
	done := gen.StreamDoneEvent{Type: gen.StreamEventTypeDone, MessageId: run.MessageID}
	if run.Reply != nil {
		done.Metadata = messageMetadata(run.Reply.Metadata)
	}
	if run.Status != domain.RunCompleted {
		partial := true
		done.Partial = &partial
	}
	return done
}
