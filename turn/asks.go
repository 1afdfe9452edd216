package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/tools"
)

// askToolName is the built-in tool that asks another agent.
const askToolName = "ask_agent"

// MaxAskDepth is the most runs a chain of asks holds: A asks B asks C, and
// C's ask of D is refused.
const MaxAskDepth = 3

// DefaultAskWait is Config.AskWait when unset: twice the default provider
// timeout.
const DefaultAskWait = 2 * time.Minute

// Remotes asks remote A2A agents; *a2a.Client implements it.
type Remotes interface {
	// Ask sends text to r, telling it the runs of the chain of asks so far
	// (depth), and returns the text of its reply; the error's text is the
	// reason the asking model sees.
	Ask(ctx context.Context, r RemoteAgent, text string, depth int) (string, error)
}

// RemoteAgent is one of settings.agents.remote, its headers opened.
type RemoteAgent struct {
	Name, URL string
	Headers   map[string]string
}

// asker runs ask_agent for one agent: the local agents it may ask, read
// when its turn starts, and its remote ones.
type asker struct {
	svc       *Service
	accountID string
	allowed   []domain.Agent
	remotes   map[string]RemoteAgent
}

// askerOf is the ask_agent tool of agent a, whose opened secrets are
// secrets; nil when settings.agents names no agent it can ask. An allowed
// id that is no longer an agent of the account is left out.
func (s *Service) askerOf(ctx context.Context, a domain.Agent, secrets domain.Secrets) *asker {
	set := agent.Document(a.Fields).Asks()
	k := &asker{svc: s, accountID: a.AccountID, remotes: map[string]RemoteAgent{}}
	for _, id := range set.Allow {
		if b, err := s.cfg.Stores.Agents.GetAgent(ctx, a.AccountID, id); err == nil {
			k.allowed = append(k.allowed, b)
		}
	}
	if s.cfg.Remotes != nil {
		for name, r := range set.Remote {
			headers := make(map[string]string, len(r.Headers))
			for h := range r.Headers {
				headers[h] = secrets.String(domain.RemoteHeaderSecretName(name, h))
			}
			k.remotes[name] = RemoteAgent{Name: name, URL: r.URL, Headers: headers}
		}
	}
	if len(k.allowed) == 0 && len(k.remotes) == 0 {
		return nil
	}
	return k
}

// tool is ask_agent as the model sees it, naming whom it may ask.
func (k *asker) tool() tools.Tool {
	var who []string
	for _, b := range k.allowed {
		who = append(who, fmt.Sprintf("%q (id %s)", b.Name, b.ID))
	}
	names := make([]string, 0, len(k.remotes))
	for name := range k.remotes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		who = append(who, fmt.Sprintf("%q (remote)", name))
	}
	return tools.Tool{Name: askToolName,
		Description: "Ask another agent a question and get its answer. You may ask: " + strings.Join(who, ", ") + ".",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"agent":{"type":"string","description":"The agent to ask: its name or id."},` +
			`"message":{"type":"string","description":"What to ask it, complete in itself: it does not see this conversation."}},` +
			`"required":["agent","message"]}`)}
}

// call asks the agent c names: a remote name first, then an allowed local
// agent by id or unique name, within the bounds of the chain of asks.
func (k *asker) call(ctx context.Context, c tools.Call) tools.Result {
	var args struct{ Agent, Message string }
	_ = json.Unmarshal(c.Arguments, &args) // an object, checked by the loop
	args.Agent = strings.TrimSpace(args.Agent)
	if strings.TrimSpace(args.Message) == "" {
		return tools.Failure("message must not be empty")
	}
	remote, isRemote := k.remotes[args.Agent]
	var target domain.Agent
	if !isRemote {
		var reason string
		if target, reason = k.find(args.Agent); reason != "" {
			return tools.Failure(reason)
		}
	}
	chain, elsewhere, err := k.svc.cfg.Stores.Runs.AskChain(ctx, c.Turn.RunID)
	depth := len(chain) + elsewhere
	switch {
	case err != nil:
		return tools.Failure("the agent could not be asked")
	case !isRemote && slices.Contains(chain, target.ID):
		return tools.Failure("loop")
	case depth >= MaxAskDepth:
		return tools.Failure("too deep")
	case isRemote:
		return k.askRemote(ctx, remote, args.Message, depth)
	}
	return k.askLocal(ctx, c, target, args.Message)
}

// find is the allowed agent named by id or, case aside, by name; else
// why none is.
func (k *asker) find(name string) (domain.Agent, string) {
	var found []domain.Agent
	for _, b := range k.allowed {
		if b.ID == name {
			return b, ""
		}
		if strings.EqualFold(strings.TrimSpace(b.Name), name) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 0:
		return domain.Agent{}, "not allowed: " + name + " is not an agent this one may ask"
	case 1:
		return found[0], ""
	}
	return domain.Agent{}, "ambiguous"
}

// askLocal makes a run of target answering message, in the room of the
// asking conversation, and waits for it through its approvals, up to
// Config.AskWait; the asking run stays running meanwhile. When the asking
// run is stopped first, so is the asked one; past the wait, or when the
// asking run is handed over to another process, it goes on.
func (k *asker) askLocal(ctx context.Context, c tools.Call, target domain.Agent, message string) tools.Result {
	s := k.svc
	t, err := s.Accept(ctx, Input{AccountID: k.accountID, AgentID: target.ID, Text: message, UserID: c.Turn.AgentID,
		Conv:   domain.ConversationRef{RoomID: askRoom(c), UserID: c.Turn.AgentID, Platform: domain.PlatformAPI},
		Source: domain.SourceAgent, ParentRunID: c.Turn.RunID, Slot: SlotWait})
	if err != nil {
		return tools.Failure(askRefusal(err))
	}
	runID := t.runID
	s.Detach(context.WithoutCancel(ctx), t, func(Event) error { return nil })
	waitCtx, cancel := context.WithTimeout(ctx, s.cfg.AskWait)
	run, err := s.WaitEnd(waitCtx, k.accountID, target.ID, runID)
	cancel()
	switch {
	case ctx.Err() != nil:
		// A run handed over to another process leaves its ask to go on
		// there too; a stopped one stops it (it may have ended meanwhile).
		if !errors.Is(context.Cause(ctx), ErrHandedOver) {
			_, _ = s.Cancel(context.WithoutCancel(ctx), k.accountID, target.ID, runID)
		}
		return askFailure("the asking run stopped", runID)
	case err != nil:
		return askFailure("the asked run could not be read", runID)
	case !run.Status.Final():
		return askFailure("timeout", runID)
	case run.Status != domain.RunCompleted || run.Reply == nil:
		return askFailure(runFailure(run), runID)
	}
	return jsonResult(map[string]string{"agent": target.ID, "runId": runID, "response": run.Reply.Text})
}

// askRoom is the room an ask is made in: agent:<the asking conversation>,
// so the asked agent remembers earlier questions from it; a caller
// without a conversation asks in a room of its own call.
func askRoom(c tools.Call) string {
	if c.Turn.ConversationID != "" {
		return "agent:" + c.Turn.ConversationID
	}
	return "agent:" + c.ID
}

// askRemote asks remote r, within Config.AskWait, telling it the runs of
// the chain so far (depth), so a chain through other agentd servers keeps
// its bound.
func (k *asker) askRemote(ctx context.Context, r RemoteAgent, message string, depth int) tools.Result {
	ctx, cancel := context.WithTimeout(ctx, k.svc.cfg.AskWait)
	defer cancel()
	text, err := k.svc.cfg.Remotes.Ask(ctx, r, message, depth)
	if err != nil {
		raw, _ := json.Marshal(map[string]string{"error": err.Error(), "agent": r.Name})
		return tools.Result{Text: string(raw)}
	}
	return jsonResult(map[string]any{"agent": r.Name, "runId": nil, "response": text})
}

// askFailure is a failed ask naming the run it made.
func askFailure(reason, runID string) tools.Result {
	raw, _ := json.Marshal(map[string]string{"error": reason, "runId": runID})
	return tools.Result{Text: string(raw)}
}

// runFailure says why an asked run gave no answer: its error code and
// message, or how it ended.
func runFailure(run domain.Run) string {
	if run.ErrorCode != "" {
		return run.ErrorCode + ": " + run.ErrorMessage
	}
	return "the asked run ended " + string(run.Status)
}

// askRefusal says why the asked agent refused the run before it started
// (a budget's refusal is stored as a failed run, a child of the asking
// one).
func askRefusal(err error) string {
	var unavailable *UnavailableError
	var coded *domain.Error
	var over *domain.BudgetExceededError
	switch {
	case errors.As(err, &over):
		return domain.BudgetExceededCode + ": " + over.Error()
	case errors.As(err, &unavailable):
		return "AGENT_UNAVAILABLE: " + unavailable.Reason
	case errors.As(err, &coded):
		return string(coded.Code) + ": " + coded.Error()
	}
	return "the agent could not be asked"
}

// RemoteAsk is an ask of a remote agent a run made, as its steps keep it.
type RemoteAsk struct {
	Agent  string
	Status domain.RunStatus
}

// RemoteAsks are the asks of remote agents among run's tool calls, in
// call order: a finished one by its result, which names the remote and no
// run; one still going on (its run not ended) by its arguments, when they
// name one of remotes, the names of the agent's settings.agents.remote.
func RemoteAsks(run domain.Run, remotes map[string]agent.RemoteSettings) []RemoteAsk {
	var out []RemoteAsk
	for _, step := range run.Steps {
		for _, c := range step.Calls {
			if c.Record.Name != askToolName {
				continue
			}
			if ask, ok := remoteAskOf(c, run.Status, remotes); ok {
				out = append(out, ask)
			}
		}
	}
	return out
}

// remoteAskOf is call c of ask_agent as a remote ask, if it is one.
func remoteAskOf(c domain.StepCall, runStatus domain.RunStatus, remotes map[string]agent.RemoteSettings) (RemoteAsk, bool) {
	if !c.Done {
		var args struct{ Agent string }
		_ = json.Unmarshal(c.Record.Arguments, &args)
		_, named := remotes[strings.TrimSpace(args.Agent)]
		return RemoteAsk{Agent: strings.TrimSpace(args.Agent), Status: domain.RunRunning}, named && !runStatus.Final()
	}
	var res struct {
		Agent string  `json:"agent"`
		RunID *string `json:"runId"`
		Error *string `json:"error"`
	}
	if json.Unmarshal([]byte(c.Result), &res) != nil || res.Agent == "" || res.RunID != nil {
		return RemoteAsk{}, false
	}
	if res.Error != nil {
		return RemoteAsk{Agent: res.Agent, Status: domain.RunFailed}, true
	}
	return RemoteAsk{Agent: res.Agent, Status: domain.RunCompleted}, true
}
