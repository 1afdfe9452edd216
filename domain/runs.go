package domain

import (
	"encoding/json"
	"time"
)

// RunStatus is where a run is in its life. The last five are final.
type RunStatus string

// The run statuses.
const (
	RunQueued         RunStatus = "queued"
	RunRunning        RunStatus = "running"
	RunRequiresAction RunStatus = "requires_action"
	RunCompleted      RunStatus = "completed"
	RunFailed         RunStatus = "failed"
	RunCancelled      RunStatus = "cancelled"
	RunInterrupted    RunStatus = "interrupted"
	RunRolledBack     RunStatus = "rolled_back"
)

// RunStatuses lists every status, the active ones first.
var RunStatuses = []RunStatus{RunQueued, RunRunning, RunRequiresAction, RunCompleted, RunFailed, RunCancelled,
	RunInterrupted, RunRolledBack}

// Final reports whether a run in status s has ended.
func (s RunStatus) Final() bool {
	return s != RunQueued && s != RunRunning && s != RunRequiresAction
}

// RunSource is the way a run's message came in.
type RunSource string

// The run sources; the platforms' are their ids in `clients`.
const (
	SourceAPI      RunSource = "api"
	SourceOpenAI   RunSource = "openai"
	SourceA2A      RunSource = "a2a"
	SourceMCP      RunSource = "mcp"
	SourceTelegram RunSource = "telegram"
	SourceDiscord  RunSource = "discord"
	SourceTwitter  RunSource = "twitter"
	SourceSchedule RunSource = "schedule"
	SourceAgent    RunSource = "agent"
)

// Strategy is what a message does when its conversation already has an
// active run.
type Strategy string

// The multitask strategies.
const (
	StrategyEnqueue   Strategy = "enqueue"
	StrategyReject    Strategy = "reject"
	StrategyInterrupt Strategy = "interrupt"
	StrategyRollback  Strategy = "rollback"
	StrategyMerge     Strategy = "merge"
)

// Valid reports whether s is one of the strategies.
func (s Strategy) Valid() bool {
	switch s {
	case StrategyEnqueue, StrategyReject, StrategyInterrupt, StrategyRollback, StrategyMerge:
		return true
	}
	return false
}

// Run is one message to an agent and the work that answers it. Runs of a
// conversation run one at a time, in the order they were accepted.
type Run struct {
	ID        string // "run_" + lowercase ULID
	AccountID string
	AgentID   string
	// ConversationID is the run's conversation, set when the run is
	// accepted; "" for a run with neither user nor room.
	ConversationID string
	UserID, RoomID string
	Source         RunSource
	Status         RunStatus
	Text           string // the input
	// MessageID is the reply's id, assigned when the run is accepted.
	MessageID string
	// Reply is the stored reply, nil until one was stored.
	Reply *Reply
	// ErrorCode and ErrorMessage say why a failed run failed: the code a
	// synchronous Send Message would have answered.
	ErrorCode, ErrorMessage string
	ParentRunID, ScheduleID string
	// ScheduleDue, on a run a schedule makes, is the due time it fires:
	// the run is stored only by the process that claims that due time.
	ScheduleDue time.Time
	// StartAtOnce, on a run being accepted, starts it as it is stored
	// when no run of its conversation is ahead of it, for a caller that
	// shows no queued state: the start is then no write of its own.
	StartAtOnce           bool
	Strategy              Strategy
	Attempts              int
	CreatedAt             time.Time
	StartedAt, FinishedAt time.Time // zero until then
	// Input is how the message came in; Steps the run's finished steps
	// (read by whoever resumes it, not by the API).
	Input RunInput
	Steps []RunStep
	// ExpiresAt is when the calls a run in requires_action waits for are
	// denied as expired; zero otherwise.
	ExpiresAt time.Time
	// InputTokens and OutputTokens are the run's own provider calls';
	// CostMicros is what they cost with what the runs it caused through
	// ask_agent cost, in millionths of a US dollar.
	InputTokens, OutputTokens int
	CostMicros                int64
}

// RequiredAction is what the run waits for; nil unless it is in
// requires_action.
func (r Run) RequiredAction() *RequiredAction {
	if r.Status != RunRequiresAction {
		return nil
	}
	return &RequiredAction{ToolCalls: r.Waiting(), ExpiresAt: r.ExpiresAt}
}

// RunEnd is how a run ends in the transaction that stores its reply
// (the store's FinishExchange): a reply stored and the run's end are then
// one write, which a crash cannot part.
type RunEnd struct {
	Status RunStatus
	// Reply is what the run keeps of its reply; its MessageID, CreatedAt
	// and Partial are taken from the reply as stored.
	Reply                   Reply
	ErrorCode, ErrorMessage string
}

// RunQuery selects a page of runs, newest first.
type RunQuery struct {
	Page, Limit    int
	AgentID        string
	ConversationID string
	Status         RunStatus
	Source         RunSource
}

// Reply is an agent's stored reply to a message.
type Reply struct {
	MessageID string
	RunID     string
	Text      string
	AgentID   string
	UserID    string // "" when the message named none
	RoomID    string // "" for a direct conversation
	CreatedAt time.Time
	Metadata  ReplyMetadata
	// Partial is set when the run ended before the reply did: what was
	// said is stored, marked partial (when anything was).
	Partial bool
}

// ReplyMetadata describes how a reply was made.
type ReplyMetadata struct {
	TokensUsed int
	// ResponseMillis is the time from the message's arrival to the reply.
	ResponseMillis float64
	Model          string
	// PromptTokens and CompletionTokens split TokensUsed as the provider
	// reported them, summed over the run's calls; both 0 when it reported
	// only a total (or nothing).
	PromptTokens, CompletionTokens int
	// CostMicros is what those calls cost, in millionths of a US dollar
	// (0 when the model has no price): the run's own calls, never those
	// of the runs it asked.
	CostMicros int64
	// ToolCalls are the tool calls of the run in call order.
	ToolCalls []ToolCall
	// Truncated is set when the reply stopped for its length (the
	// provider's token limit, or the character's maxLength), not because
	// the model was done.
	Truncated bool `json:",omitempty"`
}

// RunInput is what a run's turn needs besides its text to be started
// again by another process: the way its message came in.
type RunInput struct {
	Conv     ConversationRef `json:"conv"`
	UserName string          `json:"userName,omitempty"`
	Platform string          `json:"platform,omitempty"`
	Channel  string          `json:"channel,omitempty"`
	// ChatID is the platform chat the reply goes to (a reminder set in
	// the run is sent there too).
	ChatID string `json:"chatId,omitempty"`
	// Post, MaxChars: what a platform asks of the reply's form.
	Post     bool `json:"post,omitempty"`
	MaxChars int  `json:"maxChars,omitempty"`
	// Given is the conversation as the caller sent it, when it sent one.
	Given []GivenMessage `json:"given,omitempty"`
	// Instructions are the caller's, added after the character's system
	// prompt (the OpenAI Responses API's `instructions`).
	Instructions string `json:"instructions,omitempty"`
	// MaxTokens and Temperature, when set, override the character's
	// modelSettings for this run.
	MaxTokens   *int     `json:"maxTokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	// AskDepth is how many runs of a chain of asks on other servers led to
	// the message (an A2A message's metadata agentdAskDepth): they count
	// toward the chain's bound.
	AskDepth int `json:"askDepth,omitempty"`
}

// GivenMessage is one message of a conversation a caller sent along.
type GivenMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// RunStep is one finished provider call of a run that asked for tools,
// and those calls as they finish: what a run resumed elsewhere starts
// from, so no finished call runs twice.
type RunStep struct {
	Text         string `json:"text,omitempty"`
	InputTokens  int    `json:"inputTokens,omitempty"`
	OutputTokens int    `json:"outputTokens,omitempty"`
	TotalTokens  int    `json:"totalTokens,omitempty"`
	Model        string `json:"model,omitempty"`
	// CostMicros is what the call cost: a run's spend so far, which a
	// budget check counts before the run has finished.
	CostMicros int64      `json:"costMicros,omitempty"`
	Calls      []StepCall `json:"calls"`
}

// StepCall is a tool call of a step: the call as the model wrote it,
// agentd's record of it, and, once Done, its result as the model sees it.
type StepCall struct {
	ProviderID string   `json:"providerId"`
	Arguments  string   `json:"arguments"` // as the model wrote them
	Record     ToolCall `json:"record"`
	Result     string   `json:"result,omitempty"`
	Done       bool     `json:"done,omitempty"`
	// Waits is set on a call that waits for a person's decision before it
	// runs; Decision, once made, says whether it runs and with which
	// arguments.
	Waits    bool      `json:"waits,omitempty"`
	Decision *Decision `json:"decision,omitempty"`
}

// Decision is what a person (or the expiry) decided of a waiting call.
type Decision struct {
	CallID  string `json:"callId"`
	Approve bool   `json:"approve"`
	// Arguments, when set, replace the model's (only with Approve).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	By        string          `json:"by"`
	ByName    string          `json:"byName,omitempty"`
	DecidedAt time.Time       `json:"decidedAt"`
}

// RequiredAction is what a run in requires_action waits for: decisions
// on its waiting calls, by ExpiresAt.
type RequiredAction struct {
	ToolCalls []WaitingCall
	ExpiresAt time.Time
}

// WaitingCall is a call waiting for a decision.
type WaitingCall struct {
	ID, Name  string
	Arguments json.RawMessage
}

// Waiting is the calls of the run's last step still waiting for a
// decision, in call order.
func (r Run) Waiting() []WaitingCall {
	if len(r.Steps) == 0 {
		return nil
	}
	var out []WaitingCall
	for _, c := range r.Steps[len(r.Steps)-1].Calls {
		if c.Waits && c.Decision == nil {
			out = append(out, WaitingCall{ID: c.Record.ID, Name: c.Record.Name, Arguments: c.Record.Arguments})
		}
	}
	return out
}

// RunClaim is the outcome of trying to take over a run whose holder may
// have been lost.
type RunClaim struct {
	// Run is the run as it is now: held by the caller when Claimed.
	Run     Run
	Claimed bool
	// Again, when not zero, is how long until the run's holder is taken
	// for lost if it stays silent: the time to look again.
	Again time.Duration
}
