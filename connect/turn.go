package connect

import (
	"context"

	"github.com/agentd/agentd/turn"
)

// Turner answers platform messages through the same turn as the API's Send
// Message (the rule of whether the agent can answer, history, prompt,
// provider, metrics, stored exchange); *turn.Service implements it. An
// error means there is nothing to send: a provider failure, an agent that
// cannot answer now, or a store failure; its text is never meant for the
// chat.
type Turner interface {
	Reply(ctx context.Context, in turn.Input) (turn.Result, error)
}

var _ Turner = (*turn.Service)(nil)
