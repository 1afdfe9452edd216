package domain

import "time"

// A2ATask is one task of an agent's A2A server: a message sent to the agent
// over the A2A protocol and its reply. The exchange itself is stored like
// any other, in the room A2ARoom(ContextID); the task keeps what A2A's
// GetTask answers with, for A2ATaskRetention after it last changed, on
// every replica.
type A2ATask struct {
	ID        string // "task_" + lowercase ULID
	AgentID   string
	ContextID string
	State     A2ATaskState
	// RequestMessageID is the client's id of the message; RequestText its
	// text as the agent got it.
	RequestMessageID string
	RequestText      string
	// ReplyMessageID is the stored reply's id ("msg_…"), ReplyText its
	// text; both "" until the task completes.
	ReplyMessageID string
	ReplyText      string
	// Reason says why a failed task failed, in words a client may read.
	Reason    string
	CreatedAt time.Time // UTC, millisecond precision
	UpdatedAt time.Time // UTC, millisecond precision
}

// A2ATaskState is where a task is in its life.
type A2ATaskState string

// The states of an A2A task: working while the agent answers, then
// completed or failed.
const (
	A2ATaskWorking   A2ATaskState = "working"
	A2ATaskCompleted A2ATaskState = "completed"
	A2ATaskFailed    A2ATaskState = "failed"
)

// A2ATaskRetention is how long a task can be read after it last changed;
// older ones are deleted as new ones are made.
const A2ATaskRetention = 24 * time.Hour

// A2ARoomPrefix starts the room of an A2A context: a message with contextId
// c is stored in the agent's room A2ARoomPrefix + c.
const A2ARoomPrefix = "a2a:"

// A2ARoom is the room of the A2A context contextID.
func A2ARoom(contextID string) string { return A2ARoomPrefix + contextID }

// ErrA2ATaskNotFound is returned for a task the agent lacks, or one past
// A2ATaskRetention.
var ErrA2ATaskNotFound = &Error{Code: CodeNotFound, Resource: "task"}
