package connect

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/turn"
)

// Turner answers platform messages through the same turn as the API's Send
// Message (the rule of whether the agent can answer, history, prompt,
// provider, metrics, stored exchange); *turn.Service implements it.
type Turner interface {
	// Reply runs the turn of in. An error means there is nothing to send
	// now: a provider failure, an agent that cannot answer now, a store
	// failure, or a *turn.AwaitingDecisionError when the run waits for a
	// person's decision on its tool calls (its reply comes later); its
	// text is never meant for the chat.
	Reply(ctx context.Context, in turn.Input) (turn.Result, error)
	// Decide records decisions on calls run id waits for (all false: any
	// of them, as a button decides one) and goes on with the run once
	// none is left. A call no longer waiting is a *domain.Error
	// CodeInvalid on field "decisions"; a run no longer waiting,
	// CodeNotWaiting.
	Decide(ctx context.Context, accountID, agentID, id string, decisions []domain.Decision, all bool) (domain.Run, error)
	// Wait returns run id once it has ended or waits for decisions, or as
	// it is after limit; domain.ErrRunNotFound when it is gone.
	Wait(ctx context.Context, accountID, agentID, id string, limit time.Duration) (domain.Run, error)
}

var _ Turner = (*turn.Service)(nil)
