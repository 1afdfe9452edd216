package turn

import (
	"context"
	"strings"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/recall"
	"github.com/agentd/agentd/tools"
)

// Preview is what a turn would send the model, built by the turn's own
// code, without calling the model or writing anything.
type Preview struct {
	System    string
	History   []llm.Message
	Memories  []domain.Memory
	Knowledge []domain.KnowledgeChunk
	Tools     []tools.Tool
	// EstimatedTokens counts the system prompt, the history and the
	// message at 4 characters a token.
	EstimatedTokens int
}

// Preview builds the request the next turn of in would make.
func (s *Service) Preview(ctx context.Context, in Input) (Preview, error) {
	if strings.TrimSpace(in.Text) == "" {
		return Preview{}, ErrEmptyText
	}
	agent, secrets, err := s.agentWithSecrets(ctx, in.AccountID, in.AgentID)
	if err != nil {
		return Preview{}, err
	}
	t := &Turn{agent: agent, apiKey: secrets.String(llm.APIKeyVar(agent.ModelProvider)), in: in}
	if t.req, err = s.providerRequest(ctx, t); err != nil {
		return Preview{}, err
	}
	p := Preview{System: t.req.System, History: t.req.History, Memories: t.memories, Knowledge: t.chunks}
	if maxToolSteps(agent) > 0 {
		list := s.offerOf(ctx, agent, secrets).list
		p.Tools = list[:min(len(list), MaxOfferedTools)]
	}
	p.EstimatedTokens = llm.EstimateTokens(p.System) + llm.EstimateTokens(t.req.Text)
	for _, m := range p.History {
		p.EstimatedTokens += llm.EstimateTokens(m.Content)
	}
	return p, nil
}

// RecallAgent is agent agentID of account accountID as recall sees it: its
// provider and its own key for it, for the memory and knowledge
// operations of the API.
func (s *Service) RecallAgent(ctx context.Context, accountID, agentID string) (recall.Agent, error) {
	agent, secrets, err := s.agentWithSecrets(ctx, accountID, agentID)
	if err != nil {
		return recall.Agent{}, err
	}
	return recallAgent(agent, secrets.String(llm.APIKeyVar(agent.ModelProvider))), nil
}

// agentWithSecrets is agent agentID of account accountID with its opened
// secrets, for the operations that read an agent as its turn would
// without taking one.
func (s *Service) agentWithSecrets(ctx context.Context, accountID, agentID string) (domain.Agent, domain.Secrets, error) {
	agent, err := s.cfg.Stores.Agents.GetAgent(ctx, accountID, agentID)
	if err != nil {
		return domain.Agent{}, nil, err
	}
	secrets, err := s.secrets(ctx, agent)
	return agent, secrets, err
}
