package turn

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/recall"
	"github.com/agentd/agentd/tools"
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

// memoryOwner is what the memory tools know of the agent of a turn.
type memoryOwner struct {
	agent    recall.Agent
	settings memorySettings
}

// MemoryTools are the built-in tools memory_save and memory_search,
// offered to agents with long-term memory on.
type MemoryTools struct {
	Recall Recall
}

var _ tools.Builtin = MemoryTools{}

// The memory tools as the model sees them.
var memoryToolList = []tools.Tool{
	{Name: "memory_save", Description: "Remember a fact for later conversations (about the user you talk with, or about the world). One short fact per call.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The fact to remember, at most 2000 characters."}},"required":["text"]}`)},
	{Name: "memory_search", Description: "Search what you remember; answers up to 5 memories, best first.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for."}},"required":["query"]}`)},
}

// Tools implements tools.Builtin: the memory tools when long-term memory
// is on.
func (MemoryTools) Tools(spec tools.Spec) []tools.Tool {
	if o, ok := spec.Owner.(*memoryOwner); ok && o.settings.LongTerm {
		return memoryToolList
	}
	return nil
}

// Call implements tools.Builtin.
func (m MemoryTools) Call(ctx context.Context, spec tools.Spec, c tools.Call) tools.Result {
	o, ok := spec.Owner.(*memoryOwner)
	if !ok || !o.settings.LongTerm {
		return tools.Failure("unknown tool")
	}
	var args struct{ Text, Query string }
	_ = json.Unmarshal(c.Arguments, &args) // an object, checked by the loop
	switch c.Name {
	case "memory_save":
		return m.save(ctx, o, c, strings.TrimSpace(args.Text))
	case "memory_search":
		return m.search(ctx, o, c, args.Query)
	}
	return tools.Failure("unknown tool")
}

// save stores a memory for the turn's speaker (or agent-wide); at the
// limit the oldest of its scope makes room.
func (m MemoryTools) save(ctx context.Context, o *memoryOwner, c tools.Call, text string) tools.Result {
	if text == "" || utf8.RuneCountInString(text) > MaxMemoryText {
		return tools.Failure("text must be 1 to 2000 characters")
	}
	mem, err := m.Recall.SaveMemory(ctx, o.agent, domain.Memory{UserID: o.settings.owner(c.Turn.UserID), Text: text,
		Source: domain.MemorySourceAgent, ConversationID: c.Turn.ConversationID}, true)
	if err != nil {
		return tools.Failure("the memory could not be saved")
	}
	return jsonResult(map[string]string{"saved": mem.ID})
}

// search answers the memories of the speaker's scope most relevant to
// query.
func (m MemoryTools) search(ctx context.Context, o *memoryOwner, c tools.Call, query string) tools.Result {
	if strings.TrimSpace(query) == "" {
		return tools.Failure("query must not be empty")
	}
	mems, err := m.Recall.Memories(ctx, o.agent, o.settings.scope(c.Turn.UserID), query, RecallMemories)
	if err != nil {
		return tools.Failure("the memories could not be searched")
	}
	type found struct {
		Text      string `json:"text"`
		CreatedAt string `json:"createdAt"`
	}
	out := make([]found, len(mems))
	for i, mem := range mems {
		out[i] = found{Text: mem.Text, CreatedAt: mem.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")}
	}
	return jsonResult(map[string]any{"memories": out})
}

// jsonResult is a successful result holding v as JSON.
func jsonResult(v any) tools.Result {
	raw, err := json.Marshal(v)
	if err != nil {
		return tools.Failure("the result could not be encoded")
	}
	return tools.Result{Text: string(raw), OK: true}
}
