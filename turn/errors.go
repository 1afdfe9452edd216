package turn

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

var (
	// ErrEmptyText refuses a message whose text is empty or only
	// whitespace.
	ErrEmptyText = errors.New("turn: the text must not be empty or only whitespace")
	// ErrBusy refuses a limited turn while the agent already has
	// MaxInFlightPerAgent turns in flight.
	ErrBusy = errors.New("turn: the agent has too many messages in flight")
)

// UnavailableError refuses a turn of an agent that cannot answer now:
// inactive, in `error` during its cool-down, or with secrets that do not
// decrypt. Status is the agent's status, Reason says why in words a client
// may read. RetryAfter is how long the agent's cool-down still lasts, so a
// client knows when to come back; 0 when nothing but a change of the agent
// ends it.
type UnavailableError struct {
	Status     domain.Status
	Reason     string
	RetryAfter time.Duration
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("turn: the agent is not available (%s): %s", e.Status, e.Reason)
}

// ProviderError is a failed provider call, with the agent's status after
// it: a failure of the provider itself puts the agent in `error`, a failure
// about this request (llm.KindRequest) or a missing key does not.
type ProviderError struct {
	Err    *llm.Error
	Status domain.Status
	// RetryAfter is the cool-down the failure started (the agent refuses
	// messages until it ends); 0 when it started none.
	RetryAfter time.Duration
}

func (e *ProviderError) Error() string { return "turn: " + e.Err.Error() }

// Unwrap returns the *llm.Error.
func (e *ProviderError) Unwrap() error { return e.Err }
