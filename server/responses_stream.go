package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/turn"
)

// A Responses stream is the run's kept events (detach keeps every API
// run's) told in OpenAI's terms by responseEvents. The telling is a
// function of the kept events alone, so each replay numbers the same
// events the same way: a stream resumes after any sequence_number, on any
// replica, for as long as the events are kept, without a log of its own.

// responseStream is the answer of a streamed Create Response: it starts
// the run and follows its events. A foreground stream ends with
// approval_required when the run comes to wait for a decision (the run
// goes on); a background one follows the run through its decisions.
type responseStream struct {
	s    *Server
	ctx  context.Context
	turn *turn.Turn
	resp domain.Response
	run  domain.Run
	// ignored is the agentd-ignored header, nil for none.
	ignored *string
}

var _ gen.CreateResponseResponseObject = (*responseStream)(nil)

// VisitCreateResponseResponse streams the response's events.
func (r *responseStream) VisitCreateResponseResponse(w http.ResponseWriter) error {
	live := r.s.detach(r.ctx, r.turn, !r.resp.Background)
	f, err := r.s.streams.Follow(r.ctx, live.key, 0)
	if err != nil {
		return err // only the stream of a run a message was merged into can be gone
	}
	if r.ignored != nil {
		w.Header().Set("agentd-ignored", *r.ignored)
	}
	return r.s.followResponse(r.ctx, w, newResponseEvents(r.resp, r.run, -1), f)
}

// responseReplay is the answer of Get Response with stream=true: the kept
// events after `starting_after`, then live; once they are no longer kept,
// the events the stored run tells, when it ended.
type responseReplay struct {
	s     *Server
	ctx   context.Context
	resp  domain.Response
	run   domain.Run
	after int
}

// VisitGetResponseResponse streams the response's events.
func (r *responseReplay) VisitGetResponseResponse(w http.ResponseWriter) error {
	events := newResponseEvents(r.resp, r.run, r.after)
	events.throughDecisions = true
	key := streamlog.Key{AccountID: r.run.AccountID, AgentID: r.run.AgentID, MessageID: r.run.MessageID}
	f, err := r.s.streams.Follow(r.ctx, key, 0)
	if err == nil {
		return r.s.followResponse(r.ctx, w, events, f)
	}
	if !errors.Is(err, streamlog.ErrNotFound) {
		return err
	}
	return r.s.tellStoredRun(r.ctx, w, events, r.run)
}

// followResponse writes the events f follows as the Responses events,
// with a ping comment while waiting, until the last or the client going
// away (which leaves the run going).
func (s *Server) followResponse(ctx context.Context, w http.ResponseWriter, events *responseEvents, f *streamlog.Follower) error {
	ctx, gone := context.WithCancel(ctx)
	defer gone()
	ev, err := s.openStream(w, gone)
	if err != nil {
		return nil // the client is gone before the first byte
	}
	events.write = ev.typedEvent
	err = f.Each(ctx, streamlog.Sink{Emit: events.tell, Ping: ev.ping, PingEvery: s.cfg.PingInterval})
	var waiting *awaitsDecision
	switch {
	case errors.As(err, &waiting):
		ae := approvalRequired(waiting.run)
		return events.fail(string(ae.openAI().Error.Code), ae.Message)
	case err != nil && ctx.Err() == nil:
		// Only reading another replica's events can fail here; the
		// client resumes again.
		s.cfg.Logger.WarnContext(ctx, "follow response stream", "request_id", requestIDFrom(ctx), "error", err)
	}
	return nil
}

// tellStoredRun writes the events the stored run tells once it ended (its
// kept events are gone): its start, its reply as one fragment and its end.
func (s *Server) tellStoredRun(ctx context.Context, w http.ResponseWriter, events *responseEvents, run domain.Run) error {
	ctx, gone := context.WithCancel(ctx)
	defer gone()
	ev, err := s.openStream(w, gone)
	if err != nil {
		return nil
	}
	events.write = ev.typedEvent
	stop := ev.pingEvery(s.cfg.PingInterval)
	// WaitEnd, not a loop of Wait: Wait answers at once while the run
	// waits for decisions.
	ended, err := s.cfg.Turns.WaitEnd(ctx, run.AccountID, run.AgentID, run.ID)
	stop()
	if err != nil || ctx.Err() != nil {
		return nil // the client resumes again
	}
	told := []any{gen.StreamStartEvent{Type: gen.StreamEventTypeStart, MessageId: ended.MessageID}}
	if ended.Reply != nil && ended.Reply.Text != "" {
		told = append(told, gen.StreamTokenEvent{Type: gen.StreamEventTypeToken, Content: ended.Reply.Text})
	}
	for i, e := range append(told, runEnd(ended)) {
		if err := events.tell(streamlog.Event{ID: i + 1, Data: s.eventJSON(ctx, e)}); err != nil {
			return nil
		}
	}
	return nil
}

// awaitsDecision stops a foreground Responses stream whose run waits for
// a decision on its tool calls.
type awaitsDecision struct{ run domain.Run }

func (e *awaitsDecision) Error() string { return "server: the response's run waits for a decision" }

// responseEvents tells a run's kept events as the Responses API's, each
// numbered, writing those after `after`.
type responseEvents struct {
	resp domain.Response
	run  domain.Run
	// after is the last sequence number the client has; -1 for none.
	after int
	// throughDecisions follows a run through its decisions (a replay)
	// instead of ending at the first (a foreground create).
	throughDecisions bool
	write            func(name string, ev any) error

	seq                 int
	inProgress, started bool
	text                strings.Builder
}

func newResponseEvents(resp domain.Response, run domain.Run, after int) *responseEvents {
	return &responseEvents{resp: resp, run: run, after: after, throughDecisions: resp.Background}
}

// keptEvent is the members of a kept stream event that a response tells.
type keptEvent struct {
	Type     gen.StreamEventType `json:"type"`
	Content  string              `json:"content"`
	Metadata gen.MessageMetadata `json:"metadata"`
	Partial  *bool               `json:"partial"`
	Error    gen.Error           `json:"error"`
}

// tell writes the Responses events of kept event e.
func (t *responseEvents) tell(e streamlog.Event) error {
	var k keptEvent
	if json.Unmarshal(e.Data, &k) != nil {
		return nil
	}
	switch k.Type {
	case gen.StreamEventTypeStart:
		return t.created()
	case gen.StreamEventTypeToken:
		return t.delta(k.Content)
	case gen.StreamEventTypeRequiresAction:
		if !t.throughDecisions {
			return &awaitsDecision{run: t.run}
		}
		return t.progress()
	case gen.StreamEventTypeDone:
		return t.done(k)
	case gen.StreamEventTypeError:
		if err := t.progress(); err != nil {
			return err
		}
		return t.fail(strings.ToLower(string(k.Error.Code)), k.Error.Message)
	}
	return t.progress() // a tool call or result: the run is working
}

// created tells the response made: queued first in the background.
func (t *responseEvents) created() error {
	status := gen.ResponseStatusInProgress
	if t.resp.Background {
		status = gen.ResponseStatusQueued
	}
	if err := t.send(gen.ResponseStreamEvent{Type: gen.ResponseCreated, Response: t.response(status)}); err != nil {
		return err
	}
	if t.resp.Background {
		return t.send(gen.ResponseStreamEvent{Type: gen.ResponseQueued, Response: t.response(status)})
	}
	return t.progress()
}

// progress tells the response in progress, once.
func (t *responseEvents) progress() error {
	if t.inProgress {
		return nil
	}
	t.inProgress = true
	return t.send(gen.ResponseStreamEvent{Type: gen.ResponseInProgress, Response: t.response(gen.ResponseStatusInProgress)})
}

// open tells the output message and its text part begun, once.
func (t *responseEvents) open() error {
	if err := t.progress(); err != nil || t.started {
		return err
	}
	t.started = true
	item := outputMessage(t.run.MessageID, "", gen.ResponseItemStatusInProgress)
	item.Content = []gen.ResponseOutputText{}
	if err := t.send(gen.ResponseStreamEvent{Type: gen.ResponseOutputItemAdded, OutputIndex: new(0), Item: &item}); err != nil {
		return err
	}
	part := outputText("")
	return t.send(gen.ResponseStreamEvent{Type: gen.ResponseContentPartAdded, ItemId: &t.run.MessageID,
		OutputIndex: new(0), ContentIndex: new(0), Part: &part})
}

// delta tells a fragment of the reply.
func (t *responseEvents) delta(text string) error {
	if text == "" {
		return nil
	}
	if err := t.open(); err != nil {
		return err
	}
	t.text.WriteString(text)
	return t.send(gen.ResponseStreamEvent{Type: gen.ResponseOutputTextDelta, ItemId: &t.run.MessageID,
		OutputIndex: new(0), ContentIndex: new(0), Delta: &text, Logprobs: &[]map[string]any{}})
}

// done tells the reply's end and the response's: completed, incomplete (a
// reply stopped for its length), or cancelled (a partial reply; OpenAI's
// stream has no event of its own for that, so it ends as failed does,
// with the response's status saying why).
func (t *responseEvents) done(k keptEvent) error {
	if err := t.open(); err != nil {
		return err
	}
	text := t.text.String()
	part := outputText(text)
	truncated := k.Metadata.Truncated != nil && *k.Metadata.Truncated
	status := gen.ResponseItemStatusCompleted
	if truncated {
		status = gen.ResponseItemStatusIncomplete
	}
	item := outputMessage(t.run.MessageID, text, status)
	for _, e := range []gen.ResponseStreamEvent{
		{Type: gen.ResponseOutputTextDone, ItemId: &t.run.MessageID, OutputIndex: new(0), ContentIndex: new(0), Text: &text, Logprobs: &[]map[string]any{}},
		{Type: gen.ResponseContentPartDone, ItemId: &t.run.MessageID, OutputIndex: new(0), ContentIndex: new(0), Part: &part},
		{Type: gen.ResponseOutputItemDone, OutputIndex: new(0), Item: &item},
	} {
		if err := t.send(e); err != nil {
			return err
		}
	}
	run := t.run
	run.Status, run.Reply = domain.RunCompleted, &domain.Reply{MessageID: t.run.MessageID, Text: text,
		Metadata: domain.ReplyMetadata{TokensUsed: k.Metadata.TokensUsed, PromptTokens: k.Metadata.InputTokens,
			CompletionTokens: k.Metadata.OutputTokens, Truncated: truncated}}
	kind := gen.ResponseCompleted
	switch {
	case k.Partial != nil && *k.Partial:
		run.Status, kind = domain.RunCancelled, gen.ResponseFailed
	case truncated:
		kind = gen.ResponseIncomplete
	}
	final := responseOut(t.resp, run)
	return t.send(gen.ResponseStreamEvent{Type: kind, Response: &final})
}

// fail tells the response failed with code, or stopped short of an end
// (approval_required: the run goes on, in progress).
func (t *responseEvents) fail(code, message string) error {
	run := t.run
	run.Status, run.ErrorCode, run.ErrorMessage = domain.RunFailed, code, message
	final := responseOut(t.resp, run)
	if code == string(gen.OpenAIErrorCodeApprovalRequired) {
		final.Status = gen.ResponseStatusInProgress
	}
	return t.send(gen.ResponseStreamEvent{Type: gen.ResponseFailed, Response: &final})
}

// response is the response without its reply yet, in status st.
func (t *responseEvents) response(st gen.ResponseStatus) *gen.Response {
	r := responseOut(t.resp, domain.Run{ID: t.run.ID, AgentID: t.run.AgentID})
	r.Status = st
	return &r
}

// send numbers e and writes it when the client does not have it yet.
func (t *responseEvents) send(e gen.ResponseStreamEvent) error {
	e.SequenceNumber = t.seq
	t.seq++
	if e.SequenceNumber <= t.after {
		return nil
	}
	return t.write(string(e.Type), e)
}

// typedEvent writes one `event: <name>` and `data: <json>` event and
// flushes it.
func (e *eventWriter) typedEvent(name string, ev any) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return e.write("event: " + name + "\ndata: " + string(b) + "\n\n")
}
