package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/turn"
)

// OpenAI's Responses API over runs: a response is a run (source openai),
// made by the turn of Send Message, waited for as Chat Completions waits
// (awaitReply), or left to go on in the background; what the request said
// that the run does not keep is kept beside it (Stores.Responses), so any
// replica reads, continues and lists it. Errors are the contract's,
// rendered in OpenAI's shape (openAIPath).

// responseMembers are the members of a Responses request agentd honours;
// any other member a client sets is ignored and named in agentd-ignored.
var responseMembers = map[string]bool{
	"model": true, "input": true, "instructions": true, "user": true, "safety_identifier": true,
	"previous_response_id": true, "max_output_tokens": true, "temperature": true, "metadata": true,
	"store": true, "stream": true, "background": true,
}

// ignoredResponseMember reports whether a Responses request's member is
// one agentd ignores.
func ignoredResponseMember(name string) bool { return !responseMembers[name] }

// CreateResponse makes a run of the agent `model` for the request's input
// and answers the response once the run ended (as Chat Completions waits),
// at once when it goes on in the background, or as its events when
// streamed.
func (s *Server) CreateResponse(ctx context.Context, req gen.CreateResponseRequestObject) (gen.CreateResponseResponseObject, error) {
	b := req.Body
	rt, err := s.responseTurn(ctx, b)
	if err != nil {
		return nil, err
	}
	background := flag(b.Background)
	if background {
		rt.in.Slot = turn.SlotWait // a background response waits for a slot, as a background message does
	}
	t, err := s.cfg.Turns.Accept(ctx, rt.in)
	if errors.Is(err, turn.ErrEmptyText) {
		return nil, invalidRequest(rt.textField, "must hold text, not only whitespace")
	}
	if err != nil {
		return nil, err
	}
	run := t.Run() // before the run goes on its own
	rt.resp.RunID, rt.resp.AgentID, rt.resp.CreatedAt, rt.resp.Background = run.ID, run.AgentID, run.CreatedAt, background
	if keep, err := b.Store.Get(); err != nil || keep {
		if err := s.cfg.Store.Responses.CreateResponse(ctx, rt.resp); err != nil {
			t.Release()
			return nil, err
		}
	}
	ignored := ignoredHeader(ctx)
	switch {
	case flag(b.Stream):
		return &responseStream{s: s, ctx: ctx, turn: t, resp: rt.resp, run: run, ignored: ignored}, nil
	case background:
		s.detach(ctx, t, false) // nobody waits for its outcome
		return gen.CreateResponse200JSONResponse{Body: responseOut(rt.resp, run),
			Headers: gen.CreateResponse200ResponseHeaders{AgentdIgnored: ignored}}, nil
	}
	res, err := s.awaitReply(ctx, t)
	if err != nil {
		return nil, err
	}
	run.Status, run.Reply = domain.RunCompleted, &res
	return gen.CreateResponse200JSONResponse{Body: responseOut(rt.resp, run),
		Headers: gen.CreateResponse200ResponseHeaders{AgentdIgnored: ignored}}, nil
}

// GetResponse answers the response as its run is now, or streams its
// events when asked.
func (s *Server) GetResponse(ctx context.Context, req gen.GetResponseRequestObject) (gen.GetResponseResponseObject, error) {
	resp, run, err := s.findResponse(ctx, req.ResponseId)
	if err != nil {
		return nil, err
	}
	if p := req.Params; p.Stream != nil && *p.Stream {
		after := -1 // from the first event
		if p.StartingAfter != nil {
			after = *p.StartingAfter
		}
		return &responseReplay{s: s, ctx: ctx, resp: resp, run: run, after: after}, nil
	}
	return gen.GetResponse200JSONResponse{Body: responseOut(resp, run)}, nil
}

// CancelResponse cancels the response's run unless it ended, and answers
// the response as it is then.
func (s *Server) CancelResponse(ctx context.Context, req gen.CancelResponseRequestObject) (gen.CancelResponseResponseObject, error) {
	resp, run, err := s.findResponse(ctx, req.ResponseId)
	if err != nil {
		return nil, err
	}
	if !run.Status.Final() {
		cancelled, err := s.cfg.Turns.Cancel(ctx, run.AccountID, run.AgentID, run.ID)
		switch {
		case err == nil:
			run = cancelled
		case errors.Is(err, domain.ErrRunFinished): // it ended meanwhile: answered as it is
			if run, err = s.cfg.Store.Runs.GetRun(ctx, run.AccountID, run.AgentID, run.ID); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
	return gen.CancelResponse200JSONResponse{Body: responseOut(resp, run)}, nil
}

// DeleteResponse deletes the response; its run and history stay.
func (s *Server) DeleteResponse(ctx context.Context, req gen.DeleteResponseRequestObject) (gen.DeleteResponseResponseObject, error) {
	runID, err := responseRunID(req.ResponseId)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Store.Responses.DeleteResponse(ctx, principalFrom(ctx).Account.ID, runID); err != nil {
		return nil, err
	}
	return gen.DeleteResponse200JSONResponse{Body: gen.ResponseDeleted{Id: req.ResponseId,
		Object: gen.ResponseObjectResponse, Deleted: true}}, nil
}

// defaultItemsLimit is the page size of input items when none is asked,
// OpenAI's.
const defaultItemsLimit = 20

// ListResponseInputItems answers a page of the response's input items,
// newest first unless `order=asc`.
func (s *Server) ListResponseInputItems(ctx context.Context, req gen.ListResponseInputItemsRequestObject) (gen.ListResponseInputItemsResponseObject, error) {
	resp, _, err := s.findResponse(ctx, req.ResponseId)
	if err != nil {
		return nil, err
	}
	items := inputItemsOut(resp)
	if p := req.Params.Order; p == nil || *p == gen.Desc {
		slices.Reverse(items)
	}
	if after := req.Params.After; after != nil {
		i := slices.IndexFunc(items, func(it gen.ResponseInputMessage) bool { return it.Id == *after })
		if i < 0 {
			return nil, invalidRequest("after", "must be the id of an input item of the response")
		}
		items = items[i+1:]
	}
	limit := defaultItemsLimit
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	list := gen.ResponseItemList{Object: gen.List, Data: items[:min(limit, len(items))], HasMore: len(items) > limit}
	if n := len(list.Data); n > 0 {
		list.FirstId, list.LastId = nullString(list.Data[0].Id), nullString(list.Data[n-1].Id)
	} else {
		list.FirstId, list.LastId = nullString(""), nullString("")
	}
	return gen.ListResponseInputItems200JSONResponse{Body: list}, nil
}

// responseID is the id of the response of run runID.
func responseID(runID string) string { return "resp_" + strings.TrimPrefix(runID, "run_") }

// responseRunID is the run of response id; errResponseNotFound for an id
// no response can have.
func responseRunID(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, "resp_")
	if !ok || rest == "" {
		return "", errResponseNotFound
	}
	return "run_" + rest, nil
}

// findResponse reads the caller's response id and its run; a response
// whose run is gone (past its retention) is not found either.
func (s *Server) findResponse(ctx context.Context, id string) (domain.Response, domain.Run, error) {
	runID, err := responseRunID(id)
	if err != nil {
		return domain.Response{}, domain.Run{}, err
	}
	accountID := principalFrom(ctx).Account.ID
	resp, err := s.cfg.Store.Responses.GetResponse(ctx, accountID, runID)
	if err != nil {
		return domain.Response{}, domain.Run{}, err
	}
	run, err := s.cfg.Store.Runs.GetRun(ctx, accountID, resp.AgentID, runID)
	if errors.Is(err, domain.ErrRunNotFound) || errors.Is(err, domain.ErrNotFound) {
		return domain.Response{}, domain.Run{}, errResponseNotFound
	}
	return resp, run, err
}

// inputItemID is the id of a response's input item i.
func inputItemID(runID string, i int) string {
	return fmt.Sprintf("msg_%s_%d", strings.TrimPrefix(runID, "run_"), i)
}

// inputItemsOut renders a response's input items in request order.
func inputItemsOut(r domain.Response) []gen.ResponseInputMessage {
	out := make([]gen.ResponseInputMessage, len(r.Input))
	for i, it := range r.Input {
		kind := gen.InputText
		if it.Role == string(gen.ResponseInputRoleAssistant) {
			kind = gen.OutputText
		}
		out[i] = gen.ResponseInputMessage{Type: gen.Message, Id: inputItemID(r.RunID, i), Role: gen.ResponseInputRole(it.Role),
			Status: gen.ResponseItemStatusCompleted, Content: []gen.ResponseInputText{{Type: kind, Text: it.Text}}}
	}
	return out
}
