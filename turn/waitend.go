package turn

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
)

// decisionPoll is how often WaitEnd looks whether a run waiting for
// decisions was decided, possibly on another replica.
const decisionPoll = time.Second

// WaitEnd returns run id of the account's agent once it ended, however long
// it waits for decisions on the way (Wait returns at a wait for
// decisions); as it is when ctx ends first.
func (s *Service) WaitEnd(ctx context.Context, accountID, agentID, id string) (domain.Run, error) {
	for {
		run, err := s.Wait(ctx, accountID, agentID, id, 0)
		if err != nil || run.Status.Final() || ctx.Err() != nil {
			return run, err
		}
		if run.Status == domain.RunRequiresAction {
			select { // Wait answers at once while the run waits
			case <-ctx.Done():
			case <-time.After(decisionPoll):
			}
		}
	}
}
