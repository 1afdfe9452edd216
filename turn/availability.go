package turn

import (
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

// inactiveReason is the reason an inactive agent gives.
const inactiveReason = "The agent is inactive; set its status to active to talk to it."

// CanAnswer is the one rule of whether agent a can answer at now: an
// inactive agent cannot; an agent in `error` cannot until its cool-down
// (RetryAt) has passed, after which its next turn tries the provider again
// and, when it answers, moves the agent back to active. It returns nil or
// an *UnavailableError.
func CanAnswer(a domain.Agent, now time.Time) error {
	switch {
	case a.Status == domain.StatusInactive:
		return &UnavailableError{Status: domain.StatusInactive, Reason: inactiveReason}
	case a.Status == domain.StatusError && now.Before(a.RetryAt):
		return &UnavailableError{Status: domain.StatusError, Reason: a.StatusReason, RetryAfter: a.RetryAt.Sub(now)}
	}
	return nil
}

// ProviderState says whether the server can call a model provider with its
// own configuration, that is without a key of the agent's.
type ProviderState struct {
	Name       string
	Configured bool
}

// Providers are the supported model providers, in llm.Providers' order,
// each with whether the server can call it without an agent's own key.
func (s *Service) Providers() []ProviderState {
	out := make([]ProviderState, len(llm.Providers))
	for i, name := range llm.Providers {
		out[i] = ProviderState{Name: name, Configured: s.cfg.Model.Configured(name, "") == nil}
	}
	return out
}
