package turn

import (
	"context"
	"strings"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/recall"
)

// The bounds of what a turn recalls.
const (
	// RecallMemories and RecallChunks are how many memories and knowledge
	// chunks a prompt shows at most.
	RecallMemories = 5
	RecallChunks   = 5
	// MaxMemoryText bounds a memory, in characters.
	MaxMemoryText = 2000
)

// Recall finds and stores an agent's memories and knowledge;
// *recall.Service implements it.
type Recall interface {
	Memories(ctx context.Context, a recall.Agent, scope []string, query string, k int) ([]domain.Memory, error)
	Knowledge(ctx context.Context, a recall.Agent, query string, k int) ([]domain.KnowledgeChunk, error)
	SaveMemory(ctx context.Context, a recall.Agent, m domain.Memory, dropOldest bool) (domain.Memory, error)
}

var _ Recall = (*recall.Service)(nil)

// memorySettings are the character's memory members that shape recall.
type memorySettings struct {
	LongTerm              bool
	RememberUsers         bool
	RememberConversations bool
}

// memoryOf reads the agent's memory member: long-term memory and
// conversation summaries are off unless set, memories are per user unless
// rememberUsers is false.
func memoryOf(a domain.Agent) memorySettings {
	var m struct {
		LongTermEnabled       *bool `json:"longTermEnabled"`
		RememberUsers         *bool `json:"rememberUsers"`
		RememberConversations *bool `json:"rememberConversations"`
	}
	_, _ = a.Fields.Decode("memory", &m) // validated on the way in; a bad shape is all defaults
	is := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	return memorySettings{LongTerm: is(m.LongTermEnabled, false), RememberUsers: is(m.RememberUsers, true),
		RememberConversations: is(m.RememberConversations, false)}
}

// owner is the user a memory saved in this turn belongs to: the speaker
// when memories are per user, "" (agent-wide) otherwise.
func (m memorySettings) owner(userID string) string {
	if m.RememberUsers {
		return userID
	}
	return ""
}

// scope is whose memories a turn of userID may recall: that user's and
// the agent-wide ones; only the agent-wide ones when memories are not per
// user or nobody speaks. No other user's memory is ever in it.
func (m memorySettings) scope(userID string) []string {
	if u := m.owner(userID); u != "" {
		return []string{u, ""}
	}
	return []string{""}
}

// recallAgent is the agent as recall sees it.
func recallAgent(a domain.Agent, apiKey string) recall.Agent {
	return recall.Agent{AccountID: a.AccountID, ID: a.ID, Provider: a.ModelProvider, APIKey: apiKey}
}

// recalled is what the turn recalls for its prompt: the memories of the
// speaker's scope (long-term memory on) and the knowledge chunks most
// relevant to the message.
func (s *Service) recalled(ctx context.Context, t *Turn) ([]domain.Memory, []domain.KnowledgeChunk, error) {
	if s.cfg.Recall == nil || strings.TrimSpace(t.in.Text) == "" {
		return nil, nil, nil
	}
	a := recallAgent(t.agent, t.apiKey)
	var mems []domain.Memory
	if m := memoryOf(t.agent); m.LongTerm {
		var err error
		if mems, err = s.cfg.Recall.Memories(ctx, a, m.scope(t.in.UserID), t.in.Text, RecallMemories); err != nil {
			return nil, nil, err
		}
	}
	if t.agent.KnowledgeDocs == 0 {
		return mems, nil, nil
	}
	chunks, err := s.cfg.Recall.Knowledge(ctx, a, t.in.Text, RecallChunks)
	return mems, chunks, err
}

// promptRecall is what the system prompt shows of what was recalled.
func promptRecall(summary string, mems []domain.Memory, chunks []domain.KnowledgeChunk) llm.Recalled {
	rc := llm.Recalled{Summary: summary}
	for _, m := range mems {
		rc.Memories = append(rc.Memories, m.Text)
	}
	for _, c := range chunks {
		rc.Knowledge = append(rc.Knowledge, llm.Snippet{Document: c.DocumentName, Text: c.Text})
	}
	return rc
}
