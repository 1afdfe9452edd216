package a2a

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/renew"
	"github.com/agentd/agentd/turn"
)

// Turns runs an agent's turns: *turn.Service's methods, but Detach, which
// the server gives (it keeps a detached run's events for the run's
// stream, as for every run of the API).
type Turns interface {
	Prepare(ctx context.Context, in turn.Input) (*turn.Turn, error)
	Accept(ctx context.Context, in turn.Input) (*turn.Turn, error)
	// Detach runs t's run on its own, whoever waits for it: ctx ending
	// does not stop it.
	Detach(ctx context.Context, t *turn.Turn) <-chan turn.Outcome
	Stream(ctx context.Context, t *turn.Turn, emit func(turn.Event) error) (turn.Result, error)
	// WaitEnd returns the run once it ended, decisions on its tool calls
	// included.
	WaitEnd(ctx context.Context, accountID, agentID, id string) (domain.Run, error)
}

// Tasks keeps the tasks; the store's Tasks face implements it. Each returns
// domain.ErrNotFound for a missing agent or one of another account;
// GetA2ATask and FinishA2ATask domain.ErrA2ATaskNotFound for a task the
// agent lacks.
type Tasks interface {
	CreateA2ATask(ctx context.Context, accountID string, t domain.A2ATask) (domain.A2ATask, error)
	FinishA2ATask(ctx context.Context, accountID string, t domain.A2ATask) (domain.A2ATask, error)
	GetA2ATask(ctx context.Context, accountID, agentID, id string) (domain.A2ATask, error)
	// RenewA2ATask and FailAbandonedA2ATask: see store.
	RenewA2ATask(ctx context.Context, agentID, id string) error
	FailAbandonedA2ATask(ctx context.Context, accountID, agentID, id string, since time.Time, reason string) (domain.A2ATask, error)
}

// Problem is an error as agentd's API reports it: its code (such as
// AGENT_NOT_FOUND or INVALID_MESSAGE), message and details.
type Problem struct {
	Code    string
	Message string
	Details map[string]any
}

// Config is what a Handler needs.
type Config struct {
	Turns Turns
	Tasks Tasks
	// Explain puts an error of a turn or of the store in the API's terms
	// (server/'s one mapping), logging the internal ones under requestID.
	Explain func(err error, requestID string) Problem
	Logger  *slog.Logger
	// TaskLease is how long a working task's replica may go without
	// renewing it (every third of it, while the turn runs) before a read
	// of the task fails it, its replica taken for dead (20s).
	TaskLease time.Duration
	// RunWait is how long a blocking send waits for its run (queue
	// included) before it answers the task working, its run going on:
	// twice the provider timeout, as Send Message waits (2m).
	RunWait time.Duration
}

// Handler answers the A2A JSON-RPC calls of every agent. It is safe for
// concurrent use.
type Handler struct{ cfg Config }

// New returns a Handler; Turns, Tasks and Explain are required.
func New(cfg Config) (*Handler, error) {
	if cfg.Turns == nil || cfg.Tasks == nil || cfg.Explain == nil {
		return nil, errors.New("a2a: Turns, Tasks and Explain are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TaskLease <= 0 {
		cfg.TaskLease = 20 * time.Second
	}
	if cfg.RunWait <= 0 {
		cfg.RunWait = 2 * time.Minute
	}
	return &Handler{cfg: cfg}, nil
}

// Call is one JSON-RPC request to an agent, its caller authenticated.
type Call struct {
	AccountID, AgentID string
	// RequestID names the request in the log.
	RequestID string
	// Version is the request's A2A-Version, "" when it names none.
	Version string
	// Body is the request body as received.
	Body []byte
}

// Reply is the answer to a Call: one JSON-RPC response (Body), or for the
// streaming methods a stream of them. Exactly one of Stream and Cancel must
// be called when Stream is set: Stream writes each response through emit
// (one server-sent event each) and returns after the last; Cancel, when
// the stream cannot be opened, gives up the turn.
type Reply struct {
	Body   any
	Stream func(ctx context.Context, emit func(any) error)
	Cancel func()
}

// dialect speaks one version of the protocol: it reads a method's params
// and renders results and errors in that version's shapes.
type dialect interface {
	parseSend(raw json.RawMessage) (sendRequest, *rpcError)
	parseGet(raw json.RawMessage) (getRequest, *rpcError)
	sendResult(t domain.A2ATask, historyLength *int) any
	getResult(t domain.A2ATask, historyLength *int) any
	started(t domain.A2ATask) any
	chunk(t domain.A2ATask, text string, appended, last bool) any
	finished(t domain.A2ATask) any
	errorData(e *rpcError) any
}

// sendRequest is a message to the agent as either version sends it.
type sendRequest struct {
	MessageID, ContextID, TaskID, Text string
	HistoryLength                      *int
	OutputModes                        []string
	Push                               bool // asks for push notifications
	// Immediate asks for the task at once, its run going on
	// (returnImmediately in 1.0, blocking: false in 0.3).
	Immediate bool
	// AskDepth is the runs of another agentd's chain of asks that led to
	// the message (its metadata's AskDepthKey).
	AskDepth int
}

// getRequest names a task.
type getRequest struct {
	ID            string
	HistoryLength *int
}

// methodKind is what a method does.
type methodKind int

const (
	methodSend methodKind = iota
	methodStream
	methodGet
	methodCancel
)

type method struct {
	d    dialect
	kind methodKind
}

// methods are the methods agentd answers, by name: 1.0's and 0.3's.
var methods = map[string]method{
	"SendMessage": {v1{}, methodSend}, "SendStreamingMessage": {v1{}, methodStream},
	"GetTask": {v1{}, methodGet}, "CancelTask": {v1{}, methodCancel},
	"message/send": {v03{}, methodSend}, "message/stream": {v03{}, methodStream},
	"tasks/get": {v03{}, methodGet}, "tasks/cancel": {v03{}, methodCancel},
}

// unsupported are the protocol's methods agentd does not offer, with the
// error the protocol gives for them: no push notifications (its card says
// so), no task listing, resubscription or extended card.
var unsupported = map[string]int{
	"ListTasks": CodeUnsupportedOperation, "SubscribeToTask": CodeUnsupportedOperation,
	"GetExtendedAgentCard": CodeUnsupportedOperation, "tasks/resubscribe": CodeUnsupportedOperation,
	"agent/getAuthenticatedExtendedCard": CodeUnsupportedOperation,
	"CreateTaskPushNotificationConfig":   CodePushNotSupported, "GetTaskPushNotificationConfig": CodePushNotSupported,
	"ListTaskPushNotificationConfigs": CodePushNotSupported, "DeleteTaskPushNotificationConfig": CodePushNotSupported,
	"tasks/pushNotificationConfig/set": CodePushNotSupported, "tasks/pushNotificationConfig/get": CodePushNotSupported,
	"tasks/pushNotificationConfig/list": CodePushNotSupported, "tasks/pushNotificationConfig/delete": CodePushNotSupported,
}

// Serve answers one JSON-RPC call.
func (h *Handler) Serve(ctx context.Context, c Call) Reply {
	req, rerr := parseRequest(c.Body)
	d := dialectOf(req.Method)
	if rerr != nil {
		return errorReply(d, req.ID, rerr)
	}
	if v := strings.TrimSpace(c.Version); v != "" && v != version10 && v != version03 {
		return errorReply(d, req.ID, &rpcError{Code: CodeVersionNotSupported, Message: fmt.Sprintf(
			"A2A version %q is not supported; this agent speaks %s and %s.", v, version10, version03),
			Reason: "VERSION_NOT_SUPPORTED", Domain: protocolDomain, Metadata: map[string]string{"version": v}})
	}
	m, ok := methods[req.Method]
	if !ok {
		return errorReply(d, req.ID, unknownMethod(req.Method))
	}
	switch m.kind {
	case methodSend:
		return h.send(ctx, c, req, m.d)
	case methodStream:
		return h.stream(ctx, c, req, m.d)
	case methodCancel:
		return h.cancel(ctx, c, req, m.d)
	}
	return h.get(ctx, c, req, m.d)
}

// dialectOf is the version a method name belongs to: 0.3's names have a
// slash, 1.0's do not.
func dialectOf(method string) dialect {
	if strings.Contains(method, "/") {
		return v03{}
	}
	return v1{}
}

func unknownMethod(name string) *rpcError {
	if code, ok := unsupported[name]; ok {
		msg := "Push notifications are not supported."
		if code == CodeUnsupportedOperation {
			msg = fmt.Sprintf("%s is not supported by this agent.", name)
		}
		return &rpcError{Code: code, Message: msg}
	}
	return &rpcError{Code: CodeMethodNotFound, Message: fmt.Sprintf("Method %q not found.", name)}
}

// send answers SendMessage and message/send: the task once its run
// ended, completed (or failed); or, when the run is still going after
// RunWait, waits for a decision on its tool calls, or at once for a send
// that asked not to wait, the task working, its run going on without the
// client. GetTask follows it.
func (h *Handler) send(ctx context.Context, c Call, req rpcRequest, d dialect) Reply {
	in, rerr := h.parse(ctx, c, req.Params, d)
	var t *turn.Turn
	var task domain.A2ATask
	if rerr == nil {
		t, task, rerr = h.begin(ctx, c, in, h.cfg.Turns.Accept)
	}
	switch {
	case rerr != nil:
		return errorReply(d, req.ID, rerr)
	case t == nil: // refused: the task failed already
		return resultReply(req.ID, d.sendResult(task, in.HistoryLength))
	}
	ended, deciding := make(chan domain.A2ATask, 1), make(chan struct{})
	outcome := h.cfg.Turns.Detach(ctx, t)
	go func() { // the task's lease and end follow the run
		ctx := context.WithoutCancel(ctx)
		unhold := h.hold(ctx, c, task)
		o := <-outcome
		if waiting := (*turn.AwaitingDecisionError)(nil); errors.As(o.Err, &waiting) {
			// The task stays working: the decision is the operator's,
			// not the A2A client's input.
			close(deciding)
			o = h.decided(ctx, c, waiting.Run)
		}
		unhold()
		ended <- h.finish(ctx, c, task, o.Result, o.Err, false)
	}()
	wait := h.cfg.RunWait
	if in.Immediate {
		wait = 0
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case task = <-ended:
	case <-deciding:
	case <-timer.C:
	case <-ctx.Done():
	}
	return resultReply(req.ID, d.sendResult(task, in.HistoryLength))
}

// stream answers SendStreamingMessage and message/stream: the task, the
// reply's fragments, then the task's final status.
func (h *Handler) stream(ctx context.Context, c Call, req rpcRequest, d dialect) Reply {
	in, rerr := h.parse(ctx, c, req.Params, d)
	var t *turn.Turn
	var task domain.A2ATask
	if rerr == nil {
		t, task, rerr = h.begin(ctx, c, in, h.cfg.Turns.Prepare)
	}
	switch {
	case rerr != nil:
		return errorReply(d, req.ID, rerr)
	case t == nil: // refused: the task failed already
		return Reply{Stream: func(_ context.Context, emit func(any) error) {
			if emit(resultReply(req.ID, d.started(task)).Body) == nil {
				_ = emit(resultReply(req.ID, d.finished(task)).Body)
			}
		}, Cancel: func() {}}
	}
	return Reply{
		Stream: func(ctx context.Context, emit func(any) error) { h.run(ctx, c, req.ID, d, t, task, emit) },
		Cancel: func() {
			t.Release()
			h.finish(ctx, c, task, turn.Result{}, errClientGone, true)
		},
	}
}

// decided is the outcome of run, which waited for decisions on its tool
// calls, once decided and ended: its reply, or why it has none.
func (h *Handler) decided(ctx context.Context, c Call, run domain.Run) turn.Outcome {
	run, err := h.cfg.Turns.WaitEnd(ctx, c.AccountID, c.AgentID, run.ID)
	switch {
	case err != nil:
		return turn.Outcome{Err: err}
	case run.Status == domain.RunCompleted && run.Reply != nil:
		return turn.Outcome{Result: *run.Reply}
	}
	return turn.Outcome{Err: &runEndedError{run: run}}
}

// runEndedError fails the task of a run that ended without a reply after
// a wait for decisions, with the run's own error.
type runEndedError struct{ run domain.Run }

func (e *runEndedError) Error() string { return e.reason() }

// reason is the run's error message, or its status when it has none
// (cancelled).
func (e *runEndedError) reason() string {
	if e.run.ErrorMessage != "" {
		return e.run.ErrorMessage
	}
	return "The run ended " + string(e.run.Status) + "."
}

// errClientGone fails a stream whose client went away.
var errClientGone = errors.New("a2a: the client went away")

// run streams one turn. Each token is held until the next one comes, so
// that the last fragment can say it is the last.
func (h *Handler) run(ctx context.Context, c Call, id json.RawMessage, d dialect, t *turn.Turn, task domain.A2ATask, emit func(any) error) {
	gone := false
	send := func(v any) error {
		err := emit(resultReply(id, v).Body)
		gone = gone || err != nil
		return err
	}
	if send(d.started(task)) != nil {
		t.Release()
		h.finish(ctx, c, task, turn.Result{}, errClientGone, true)
		return
	}
	var held *string
	var sent strings.Builder // the text of the chunks sent
	appended := false
	unhold := h.hold(ctx, c, task)
	defer unhold()
	res, err := h.cfg.Turns.Stream(ctx, t, func(e turn.Event) error {
		if e.Kind != turn.EventToken {
			return nil
		}
		if held != nil {
			if err := send(d.chunk(task, *held, appended, false)); err != nil {
				return err
			}
			sent.WriteString(*held)
			appended = true
		}
		token := e.Token
		held = &token
		return nil
	})
	if waiting := (*turn.AwaitingDecisionError)(nil); errors.As(err, &waiting) {
		// The task stays working while a person decides (the operator's
		// input, not this client's); the run goes on wherever the
		// decision is made, so the rest of the reply comes as one chunk.
		o := h.decided(ctx, c, waiting.Run)
		if res, err = o.Result, o.Err; err == nil {
			rest := strings.TrimPrefix(res.Text, sent.String())
			held = &rest
		}
	}
	if err == nil {
		last := res.Text // a reply that came in no fragment
		if held != nil {
			last = *held
		}
		_ = send(d.chunk(task, last, appended, true)) // the reply is stored: the task completed either way
	}
	task = h.finish(ctx, c, task, res, err, gone)
	_ = send(d.finished(task))
}

// parse reads and checks a message.
func (h *Handler) parse(ctx context.Context, c Call, params json.RawMessage, d dialect) (sendRequest, *rpcError) {
	in, rerr := d.parseSend(params)
	if rerr == nil {
		rerr = h.check(ctx, c, &in)
	}
	return in, rerr
}

// begin makes the turn of a checked message with prepare (Prepare, which
// takes a concurrency slot once its run may start; or Accept, which
// queues the run) and its task. The caller must end the turn. A message a
// spent budget refused has no turn: its task comes back failed.
func (h *Handler) begin(ctx context.Context, c Call, in sendRequest,
	prepare func(context.Context, turn.Input) (*turn.Turn, error)) (*turn.Turn, domain.A2ATask, *rpcError) {
	slot := turn.SlotRefuseWhenFull
	if in.Immediate {
		slot = turn.SlotWait // a run nobody waits for waits for a slot
	}
	t, err := prepare(ctx, turn.Input{AccountID: c.AccountID, AgentID: c.AgentID, Text: in.Text,
		Slot: slot, RequestID: c.RequestID, Source: domain.SourceA2A, AskDepth: in.AskDepth,
		Conv: domain.ConversationRef{RoomID: domain.A2ARoom(in.ContextID), Platform: domain.PlatformAPI}})
	refused := errors.As(err, new(*domain.BudgetExceededError))
	if err != nil && !refused {
		return nil, domain.A2ATask{}, h.explain(err, c.RequestID)
	}
	task, terr := h.cfg.Tasks.CreateA2ATask(ctx, c.AccountID, domain.A2ATask{AgentID: c.AgentID, ContextID: in.ContextID,
		RequestMessageID: in.MessageID, RequestText: in.Text})
	if terr != nil {
		if t != nil { // a refused message has no turn to release
			t.Release()
		}
		return nil, domain.A2ATask{}, h.explain(terr, c.RequestID)
	}
	if refused {
		// A spent budget is the task's failure, as a failed run is: the
		// client reads why in its status, code first.
		return nil, h.finish(ctx, c, task, turn.Result{}, err, false), nil
	}
	return t, task, nil
}

// check refuses what the agent cannot take before any turn starts, and
// fills in the context and message ids a client left out.
func (h *Handler) check(ctx context.Context, c Call, in *sendRequest) *rpcError {
	switch {
	case in.Push:
		return &rpcError{Code: CodePushNotSupported, Message: "Push notifications are not supported."}
	case len(in.OutputModes) > 0 && !acceptsText(in.OutputModes):
		return &rpcError{Code: CodeContentTypeNotSupported, Message: "The agent answers text/plain, which acceptedOutputModes leaves out."}
	case strings.ContainsRune(in.Text, 0):
		return invalidParams("the message text must not contain U+0000")
	case utf8.RuneCountInString(in.Text) > maxTextLength:
		return invalidParams(fmt.Sprintf("the message text must be at most %d characters", maxTextLength))
	case in.ContextID != "" && !printableID(in.ContextID, maxContextIDLength):
		return invalidParams(fmt.Sprintf("message.contextId must be 1 to %d printable characters", maxContextIDLength))
	case in.MessageID != "" && !printableID(in.MessageID, maxIDLength):
		return invalidParams(fmt.Sprintf("message.messageId must be 1 to %d printable characters", maxIDLength))
	}
	if in.TaskID != "" {
		if _, rerr := h.task(ctx, c, in.TaskID); rerr != nil {
			return rerr
		}
		return &rpcError{Code: CodeUnsupportedOperation, Message: "The task has ended and takes no more messages; " +
			"send the message without taskId, in the task's contextId, to go on."}
	}
	if in.ContextID == "" {
		in.ContextID = newID("ctx-")
	}
	if in.MessageID == "" {
		in.MessageID = newID("msg-")
	}
	return nil
}

// get answers GetTask and tasks/get.
func (h *Handler) get(ctx context.Context, c Call, req rpcRequest, d dialect) Reply {
	in, rerr := d.parseGet(req.Params)
	if rerr != nil {
		return errorReply(d, req.ID, rerr)
	}
	task, rerr := h.task(ctx, c, in.ID)
	if rerr != nil {
		return errorReply(d, req.ID, rerr)
	}
	return resultReply(req.ID, d.getResult(task, in.HistoryLength))
}

// cancel answers CancelTask and tasks/cancel: a task ends with its reply,
// so none can be canceled.
func (h *Handler) cancel(ctx context.Context, c Call, req rpcRequest, d dialect) Reply {
	in, rerr := d.parseGet(req.Params)
	if rerr == nil {
		_, rerr = h.task(ctx, c, in.ID)
	}
	if rerr == nil {
		rerr = &rpcError{Code: CodeTaskNotCancelable, Message: "The task cannot be canceled: it ends with the agent's reply."}
	}
	return errorReply(d, req.ID, rerr)
}

// abandonedReason is why a task whose replica died failed.
const abandonedReason = "The agent's server stopped before the reply was complete; send the message again."

// hold renews task while its turn runs, so that no reader takes it for
// abandoned; the returned func stops it. The renewals outlive a client
// gone away: the turn, and so the task, goes on.
func (h *Handler) hold(ctx context.Context, c Call, task domain.A2ATask) (unhold func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		renew.Every(ctx, h.cfg.TaskLease, func(call context.Context) bool {
			if err := h.cfg.Tasks.RenewA2ATask(call, c.AgentID, task.ID); err != nil && ctx.Err() == nil {
				h.cfg.Logger.WarnContext(ctx, "renew a2a task", "request_id", c.RequestID, "task", task.ID, "error", err)
			}
			return true
		})
	}()
	return sync.OnceFunc(func() {
		cancel()
		<-stopped
	})
}

// task reads a task of the called agent; a working task its replica no
// longer renews (the replica died) is failed first. An id that is not
// printable text of an id's length is no task's, and is not looked for:
// PostgreSQL fails on bytes that SQLite merely finds nothing for.
func (h *Handler) task(ctx context.Context, c Call, id string) (domain.A2ATask, *rpcError) {
	if !printableID(id, maxIDLength) {
		return domain.A2ATask{}, taskNotFound(id)
	}
	task, err := h.cfg.Tasks.GetA2ATask(ctx, c.AccountID, c.AgentID, id)
	if since := time.Now().Add(-h.cfg.TaskLease); err == nil && task.State == domain.A2ATaskWorking && task.UpdatedAt.Before(since) {
		task, err = h.cfg.Tasks.FailAbandonedA2ATask(ctx, c.AccountID, c.AgentID, id, since, abandonedReason)
	}
	if errors.Is(err, domain.ErrA2ATaskNotFound) {
		return task, taskNotFound(id)
	}
	if err != nil {
		return task, h.explain(err, c.RequestID)
	}
	return task, nil
}

// finishTimeout bounds the write that ends a task, which goes on when the
// caller has gone away.
const finishTimeout = 5 * time.Second

// finish stores how the turn ended: completed with the reply, or failed
// with why (gone: because the client went away). When the write fails the
// task is answered as it would have been stored.
func (h *Handler) finish(ctx context.Context, c Call, task domain.A2ATask, res turn.Result, err error, gone bool) domain.A2ATask {
	task.State, task.ReplyMessageID, task.ReplyText = domain.A2ATaskCompleted, res.MessageID, res.Text
	if err != nil {
		gone = gone || ctx.Err() != nil
		task.State, task.ReplyMessageID, task.ReplyText = domain.A2ATaskFailed, "", ""
		task.Reason = h.reason(err, c.RequestID, gone)
	}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	stored, ferr := h.cfg.Tasks.FinishA2ATask(saveCtx, c.AccountID, task)
	if ferr != nil {
		h.cfg.Logger.WarnContext(ctx, "finish a2a task", "request_id", c.RequestID, "task", task.ID, "error", ferr)
		task.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
		return task
	}
	return stored
}

// reason says why a turn failed, in the words of the API's error, its
// code first (CONVERSATION_BUSY, MODEL_ERROR, ...): a client tells the
// failures apart by it, as a Send Message caller does by the status.
func (h *Handler) reason(err error, requestID string, gone bool) string {
	var ended *runEndedError
	switch {
	case gone || errors.Is(err, errClientGone):
		return "The client went away before the reply was complete."
	case errors.As(err, &ended):
		return ended.reason()
	}
	p := h.cfg.Explain(err, requestID)
	msg := p.Message
	if why, ok := p.Details["reason"].(string); ok && why != "" {
		msg = strings.TrimSuffix(p.Message, ".") + ": " + why
	}
	if p.Code == "" {
		return msg
	}
	return p.Code + ": " + msg
}

// explain puts an error of a turn or the store in JSON-RPC's terms: bad
// text is invalid params, an internal error JSON-RPC's internal error,
// and agentd's other refusals the server error named by their code.
func (h *Handler) explain(err error, requestID string) *rpcError {
	p := h.cfg.Explain(err, requestID)
	e := &rpcError{Code: CodeServerError, Message: p.Message, Reason: p.Code, Domain: agentdDomain, Metadata: stringify(p.Details)}
	switch p.Code {
	case "INVALID_MESSAGE", "INVALID_REQUEST":
		e.Code = CodeInvalidParams
	case "INTERNAL_ERROR":
		e.Code, e.Metadata = CodeInternalError, nil
	}
	return e
}

// stringify renders details as ErrorInfo metadata: strings.
func stringify(details map[string]any) map[string]string {
	if len(details) == 0 {
		return nil
	}
	out := make(map[string]string, len(details))
	for k, v := range details {
		if s, ok := v.(string); ok {
			out[k] = s
		} else {
			b, _ := json.Marshal(v)
			out[k] = string(b)
		}
	}
	return out
}

func resultReply(id json.RawMessage, result any) Reply {
	return Reply{Body: rpcResponse{JSONRPC: jsonrpcVersion, ID: idOrNull(id), Result: result}}
}

func errorReply(d dialect, id json.RawMessage, e *rpcError) Reply {
	return Reply{Body: rpcResponse{JSONRPC: jsonrpcVersion, ID: idOrNull(id),
		Error: &rpcErrorBody{Code: e.Code, Message: e.Message, Data: d.errorData(e)}}}
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// message is one message of a task, rendered by either version.
type message struct {
	task  domain.A2ATask
	id    string
	text  string
	agent bool
}

// history is a task's messages: the user's, then the reply once there is
// one.
func history(t domain.A2ATask) []message {
	out := []message{{task: t, id: t.RequestMessageID, text: t.RequestText}}
	if t.State == domain.A2ATaskCompleted {
		out = append(out, message{task: t, id: t.ReplyMessageID, text: t.ReplyText, agent: true})
	}
	return out
}

// failure is the agent's message saying why a task failed.
func failure(t domain.A2ATask) message {
	return message{task: t, id: t.ID + "-failure", text: t.Reason, agent: true}
}

// keepLast is the last n of ms: all for nil, none for 0.
func keepLast(ms []message, n *int) []message {
	if n == nil || *n >= len(ms) {
		return ms
	}
	return ms[len(ms)-max(*n, 0):]
}

// partsText is the text of a message's parts that read takes, joined by
// newlines: invalid params for no parts, content type not supported when
// none can be read.
func partsText[P any](parts []P, read func(P) (string, bool)) (string, *rpcError) {
	if len(parts) == 0 {
		return "", invalidParams("message.parts must not be empty")
	}
	var texts []string
	for _, p := range parts {
		if t, ok := read(p); ok {
			texts = append(texts, t)
		}
	}
	if len(texts) == 0 {
		return "", &rpcError{Code: CodeContentTypeNotSupported, Message: "The agent takes text and data parts only."}
	}
	return strings.Join(texts, "\n"), nil
}

// acceptsText reports whether output modes take text/plain.
func acceptsText(modes []string) bool {
	for _, m := range modes {
		switch strings.ToLower(strings.TrimSpace(m)) {
		case "text/plain", "text/*", "*/*", "text":
			return true
		}
	}
	return false
}

// printableID reports whether id is 1 to most printable characters.
func printableID(id string, most int) bool {
	return id != "" && utf8.RuneCountInString(id) <= most && domain.CleanText(id)
}

// newID is prefix and 16 random bytes in hex: the ids agentd makes for a
// context or a message a client left without one.
func newID(prefix string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b)
}

// The bounds of a message.
const (
	maxContextIDLength = 128
	// maxIDLength bounds the task and message ids a client gives: far
	// above the ids agentd and A2A clients make, and short enough that a
	// bad one never reaches the store or the log at length.
	maxIDLength   = 256
	maxTextLength = 16000
)
