package domain

import "time"

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
	Strategy                Strategy
	Attempts                int
	CreatedAt               time.Time
	StartedAt, FinishedAt   time.Time // zero until then
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
	// ToolCalls are the tool calls of the run in call order.
	ToolCalls []ToolCall
}
