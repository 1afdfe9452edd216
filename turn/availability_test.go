package turn

import (
	"errors"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestCanAnswer: the one availability rule, for every status and both
// sides of an error's cool-down.
func TestCanAnswer(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		agent  domain.Agent
		status domain.Status // of the refusal; "" when it may answer
	}{
		{"active", domain.Agent{Status: domain.StatusActive}, ""},
		{"inactive", domain.Agent{Status: domain.StatusInactive}, domain.StatusInactive},
		{"error, cooling down", domain.Agent{Status: domain.StatusError, RetryAt: now.Add(time.Second), StatusReason: "down"}, domain.StatusError},
		{"error, cool-down over", domain.Agent{Status: domain.StatusError, RetryAt: now}, ""},
	} {
		err := CanAnswer(c.agent, now)
		var ue *UnavailableError
		switch {
		case c.status == "" && err != nil:
			t.Errorf("%s: %v, want nil", c.name, err)
		case c.status != "" && (!errors.As(err, &ue) || ue.Status != c.status):
			t.Errorf("%s: %v, want unavailable with status %s", c.name, err, c.status)
		case c.status == domain.StatusError && ue.Reason != "down":
			t.Errorf("%s: reason %q, want the agent's", c.name, ue.Reason)
		}
	}
}
