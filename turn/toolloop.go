package turn

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/tools"
	"github.com/oklog/ulid/v2"
)

// The bounds of tool use in a turn.
const (
	// MaxOfferedTools is how many tools a call offers, by name order.
	MaxOfferedTools = 64
	// maxParallelCalls bounds the calls of one step that run at once.
	maxParallelCalls = 8
	// maxResultBytes bounds a result as the model sees it.
	maxResultBytes = 16 << 10
	// maxShownResult bounds a result as the reply, the stream and the
	// history show it, in characters.
	maxShownResult = 2000
)

// Tools makes the tool set of an agent; *tools.Service implements it.
type Tools interface {
	Set(ctx context.Context, spec tools.Spec) *tools.Set
}

var _ Tools = (*tools.Service)(nil)

// EventKind tells the events of a streamed turn apart.
type EventKind int

// The events of a streamed turn.
const (
	EventToken EventKind = iota
	EventToolCall
	EventToolResult
	// EventRequiresAction: the run waits for decisions on Required's calls.
	EventRequiresAction
)

// Event is one event of a streamed turn: a fragment of the reply, or a
// tool call starting (Call without its result) or ending.
type Event struct {
	Kind  EventKind
	Token string
	Call  domain.ToolCall
	// RunID and Required: the run that waits, and for what.
	RunID    string
	Required *domain.RequiredAction
}

// offer is the tools a turn of an agent offers, by name order: those of
// the tool set (actions, MCP servers) and the built-in ones, which the
// turn runs itself (the memory tools, schedule_reminder).
type offer struct {
	list []tools.Tool
	set  *tools.Set // nil without Config.Tools
	// own runs each built-in tool offered, by name.
	own map[string]builtin
}

// builtin runs a call of a tool the turn runs itself.
type builtin func(ctx context.Context, c tools.Call) tools.Result

// offerOf lists the tools of agent a, whose opened secrets are secrets,
// asking each of its MCP servers now.
func (s *Service) offerOf(ctx context.Context, a domain.Agent, secrets domain.Secrets) offer {
	var o offer
	if s.cfg.Tools != nil {
		o.set = s.cfg.Tools.Set(ctx, toolSpec(a, secrets))
		o.list = o.set.Tools()
	}
	var own []tools.Tool
	runs := map[string]builtin{}
	if m := s.memoryToolsOf(a, secrets); m != nil {
		own = append(own, memoryToolList...)
		for _, tl := range memoryToolList {
			runs[tl.Name] = m.call
		}
	}
	if r := s.remindersOf(a); r != nil {
		own = append(own, reminderTool)
		runs[reminderTool.Name] = r.call
	}
	if len(own) > 0 {
		var offered map[string]bool
		o.list, offered = withOwn(o.list, own)
		maps.DeleteFunc(runs, func(name string, _ builtin) bool { return !offered[name] })
		o.own = runs
	}
	return o
}

// withOwn adds the tools the turn runs itself (own, marked SourceBuiltin)
// to list, by name order. They rank as the set ranks its sources: an
// action keeps its name, an MCP server's tool of the same name gives way.
// It returns the names the turn runs.
func withOwn(list, own []tools.Tool) ([]tools.Tool, map[string]bool) {
	source := make(map[string]string, len(list))
	for _, t := range list {
		source[t.Name] = t.Source
	}
	names := map[string]bool{}
	out := make([]tools.Tool, 0, len(list)+len(own))
	for _, t := range own {
		if src, taken := source[t.Name]; taken && src != tools.SourceMCP {
			continue
		}
		t.Source = SourceBuiltin
		names[t.Name] = true
		out = append(out, t)
	}
	for _, t := range list {
		if !names[t.Name] {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out, names
}

// errors are the MCP servers that could not be listed, and the tools of
// MCP servers that are not offered.
func (o offer) errors() []tools.ServerError {
	if o.set == nil {
		return nil
	}
	return o.set.Errors()
}

// call runs c: a built-in tool here, any other through the tool set; an
// unknown name is a failed call.
func (o offer) call(ctx context.Context, c tools.Call) tools.Result {
	switch {
	case o.own[c.Name] != nil:
		return o.own[c.Name](ctx, c)
	case o.set != nil:
		return o.set.Call(ctx, c)
	}
	return tools.Failure("unknown tool")
}

// toolRun is the tool side of one turn.
type toolRun struct {
	offer    offer
	offered  []llm.Tool
	maxSteps int
	info     tools.TurnInfo
	// content records calls' arguments and results in their spans
	// (Config.TraceContent).
	content bool

	// log is the run's steps: stored as they finish, and those a resumed
	// run starts from.
	log *stepLog
	// byName are the offered tools, and policy which of them wait for a
	// person's decision.
	byName map[string]tools.Tool
	policy approvalPolicy

	mu    sync.Mutex
	calls []domain.ToolCall
}

// newToolRun lists the agent's tools for the turn; nil when the agent has
// none to offer or its maxToolSteps is 0.
func (s *Service) newToolRun(ctx context.Context, t *Turn, secrets domain.Secrets) (*toolRun, error) {
	steps := maxToolSteps(t.agent)
	if steps <= 0 {
		return nil, nil
	}
	o := s.offerOf(ctx, t.agent, secrets)
	list := o.list
	if len(list) == 0 {
		return nil, nil
	}
	if len(list) > MaxOfferedTools {
		list = list[:MaxOfferedTools]
	}
	offered := make([]llm.Tool, len(list))
	byName := make(map[string]tools.Tool, len(list))
	for i, tl := range list {
		offered[i] = llm.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters}
		byName[tl.Name] = tl
	}
	return &toolRun{offer: o, offered: offered, maxSteps: steps, info: tools.TurnInfo{
		AgentID: t.agent.ID, ConversationID: t.convID, UserID: t.in.UserID, RoomID: t.in.Conv.RoomID,
		Platform: platformOf(t.in), ChatID: t.in.ChatID}, content: s.cfg.TraceContent, log: s.newStepLog(t),
		byName: byName, policy: approvalPolicyOf(t.agent)}, nil
}

// platformOf names the platform of a turn, "api" for the API.
func platformOf(in Input) string {
	if in.Conv.Platform != "" {
		return in.Conv.Platform
	}
	return domain.PlatformAPI
}

// call asks the model once: streamed through onToken when it is set.
type call func(ctx context.Context, req llm.Request) (llm.Reply, error)

// converse runs the model calls of a turn: while the model asks for tools
// (and steps remain) the calls of each step run and their results go back
// to it; the last call, once the steps are spent, offers no tools. The
// texts of the calls are joined by a blank line, tokens summed. A resumed
// run starts after its stored steps, running only their unfinished calls.
func (s *Service) converse(ctx context.Context, t *Turn, ask call, emit func(Event) error) (llm.Reply, []domain.ToolCall, error) {
	req := t.req
	run := t.tools
	if run != nil {
		req.Tools = run.offered
	}
	var total llm.Reply
	for step := 0; ; step++ {
		var reply llm.Reply
		var err error
		resumed := run != nil && step < run.log.stored()
		if resumed {
			reply = replyOf(run.log.step(step))
		} else {
			req.ToolsDone = run == nil || step >= run.maxSteps
			reply, err = s.chat(ctx, t, req, ask)
		}
		total = joinReplies(total, reply)
		if !resumed && (err != nil || req.ToolsDone || len(reply.ToolCalls) == 0) {
			return total, run.recorded(), err
		}
		if !resumed {
			step = run.log.add(ctx, reply, run.waits)
		}
		steps, err := run.step(ctx, step, emit)
		if err != nil {
			return total, run.recorded(), err
		}
		req.Steps = append(req.Steps, steps...)
		if req.MaxReplyChars > 0 {
			if req.MaxReplyChars -= utf8.RuneCountInString(reply.Text); req.MaxReplyChars <= 0 {
				total.Cut = true // maxLength spent before the model was done
				return total, run.recorded(), nil
			}
		}
	}
}

// joinReplies adds a call's reply to the turn's: texts joined by a blank
// line, usage summed, the last model and whether it was cut kept.
func joinReplies(total, r llm.Reply) llm.Reply {
	switch {
	case total.Text == "":
		total.Text = r.Text
	case r.Text != "":
		total.Text += stepSeparator + r.Text
	}
	total.Usage.PromptTokens += r.Usage.PromptTokens
	total.Usage.CompletionTokens += r.Usage.CompletionTokens
	total.Usage.TotalTokens += max(r.Usage.TotalTokens, r.Usage.PromptTokens+r.Usage.CompletionTokens)
	if r.Model != "" {
		total.Model = r.Model
	}
	total.Cut = r.Cut
	return total
}

// stepSeparator joins the texts of a turn's calls.
const stepSeparator = "\n\n"

// step runs the unfinished calls of stored step i, at most
// maxParallelCalls at once, storing each as it finishes, and returns all
// its calls with their results in call order. A call waiting for a
// decision is not run: once the others ran, the step ends with
// errAwaiting; a denied one is a failed call the model sees. emit (nil
// for none) gets each call's start and end; its error ends the turn.
func (r *toolRun) step(ctx context.Context, i int, emit func(Event) error) ([]llm.ToolStep, error) {
	calls := r.log.step(i).Calls
	steps := make([]llm.ToolStep, len(calls))
	records := make([]domain.ToolCall, len(calls))
	var emitMu sync.Mutex
	var emitErr error
	send := func(e Event) {
		emitMu.Lock()
		defer emitMu.Unlock()
		if emit != nil && emitErr == nil {
			emitErr = emit(e)
		}
	}
	slots := make(chan struct{}, maxParallelCalls)
	var wg sync.WaitGroup
	waiting := 0
	for j, c := range calls {
		if c.Done {
			records[j], steps[j] = c.Record, llm.ToolStep{Call: callOf(c), Result: c.Result}
			continue
		}
		if c.Waits && c.Decision == nil {
			waiting++
			continue
		}
		rec, call := decided(c)
		send(Event{Kind: EventToolCall, Call: rec})
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if c.Decision != nil && !c.Decision.Approve {
				records[j], steps[j] = denied(rec, call, c.Decision.Reason)
			} else {
				records[j], steps[j] = r.run(ctx, rec, call)
			}
			r.log.done(ctx, i, j, records[j], steps[j].Result)
			send(Event{Kind: EventToolResult, Call: records[j]})
		})
	}
	wg.Wait()
	if waiting > 0 {
		return nil, cmp.Or(emitErr, errAwaiting)
	}
	r.mu.Lock()
	r.calls = append(r.calls, records...)
	r.mu.Unlock()
	return steps, emitErr
}

// decided is the record and the call of c as its decision left them: the
// arguments a person gave replace the model's, and the record carries
// the decision.
func decided(c domain.StepCall) (domain.ToolCall, llm.ToolCall) {
	rec, call := c.Record, callOf(c)
	if d := c.Decision; d != nil {
		rec.Approval = approvalOf(*d)
		if d.Approve && len(d.Arguments) > 0 {
			rec.Arguments, call.Arguments = d.Arguments, string(d.Arguments)
		}
	}
	return rec, call
}

// denied is the record and the step of a call a person denied: not run,
// a failed call whose result says why.
func denied(rec domain.ToolCall, call llm.ToolCall, reason string) (domain.ToolCall, llm.ToolStep) {
	result := deniedResult(reason)
	rec.OK, rec.Result = false, result
	return rec, llm.ToolStep{Call: call, Result: result}
}

// waits reports whether a call of the offered tool name waits for a
// person's decision.
func (r *toolRun) waits(name string) bool {
	t, ok := r.byName[name]
	return ok && r.policy.waits(t)
}

// newRecord starts the record of a call with agentd's own id; arguments
// that are not a JSON object are recorded as {} and the call is not run
// (ok false).
func newRecord(c llm.ToolCall) (domain.ToolCall, json.RawMessage, bool) {
	rec := domain.ToolCall{ID: "call_" + strings.ToLower(ulid.Make().String()), Name: c.Name, Arguments: json.RawMessage("{}")}
	args := json.RawMessage(strings.TrimSpace(c.Arguments))
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return rec, nil, false
	}
	rec.Arguments = args
	return rec, args, true
}

// run runs one call, whose record newRecord made, and returns its record
// and its step for the model.
func (r *toolRun) run(ctx context.Context, rec domain.ToolCall, c llm.ToolCall) (domain.ToolCall, llm.ToolStep) {
	start := time.Now()
	ctx, span := r.startToolSpan(ctx, rec)
	res := tools.Failure("arguments are not a JSON object")
	if _, args, ok := newRecord(c); ok {
		res = r.offer.call(ctx, tools.Call{ID: rec.ID, Name: c.Name, Arguments: args, Turn: r.info})
	}
	r.endToolSpan(span, res)
	text := cutBytes(res.Text, maxResultBytes)
	rec.OK, rec.Result = res.OK, cutRunes(text, maxShownResult)
	rec.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	c.Arguments = string(rec.Arguments)
	return rec, llm.ToolStep{Call: c, Result: text}
}

// recorded returns the calls of the turn so far; nil for a turn without
// tools.
func (r *toolRun) recorded() []domain.ToolCall {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// cutBytes cuts s to at most n bytes, at a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cutRunes cuts s to at most n characters.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// ToolListing is what List Tools shows: the tools the agent's next turn
// would offer, by name, of which the first Offered are offered, and the
// MCP servers that could not be listed.
type ToolListing struct {
	Tools   []tools.Tool
	Offered int
	Errors  []tools.ServerError
}

// ListTools lists the tools of agent agentID of account accountID as its
// next turn would see them, asking each MCP server now.
func (s *Service) ListTools(ctx context.Context, accountID, agentID string) (ToolListing, error) {
	agent, secrets, err := s.agentWithSecrets(ctx, accountID, agentID)
	if err != nil {
		return ToolListing{}, err
	}
	o := s.offerOf(ctx, agent, secrets)
	list := ToolListing{Tools: o.list, Errors: o.errors()}
	if maxToolSteps(agent) > 0 {
		list.Offered = min(len(list.Tools), MaxOfferedTools)
	}
	return list, nil
}
