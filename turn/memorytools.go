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

// SourceBuiltin is the source of the tools a turn runs itself (the memory
// tools), as List Tools reports them.
const SourceBuiltin = "builtin"

// The memory tools as the model sees them.
var memoryToolList = []tools.Tool{
	{Name: "memory_save", Description: "Remember a fact for later conversations (about the user you talk with, or about the world). One short fact per call.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The fact to remember, at most 2000 characters."}},"required":["text"]}`)},
	{Name: "memory_search", Description: "Search what you remember; answers up to 5 memories, best first.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for."}},"required":["query"]}`)},
}

// memoryTools are the built-in tools memory_save and memory_search for one
// agent, which the turn runs itself.
type memoryTools struct {
	recall   Recall
	agent    recall.Agent
	settings memorySettings
}

// memoryToolsOf are the memory tools of agent a, whose opened secrets are
// secrets (its provider key, for the embeddings); nil unless the service
// has a Recall and the agent has long-term memory on.
func (s *Service) memoryToolsOf(a domain.Agent, secrets domain.Secrets) *memoryTools {
	m := memoryOf(a)
	if s.cfg.Recall == nil || !m.LongTerm {
		return nil
	}
	return &memoryTools{recall: s.cfg.Recall, agent: recallAgent(a, secrets.String(llm.APIKeyVar(a.ModelProvider))), settings: m}
}

// call runs one of the memory tools.
func (m *memoryTools) call(ctx context.Context, c tools.Call) tools.Result {
	var args struct{ Text, Query string }
	_ = json.Unmarshal(c.Arguments, &args) // an object, checked by the loop
	switch c.Name {
	case "memory_save":
		return m.save(ctx, c, strings.TrimSpace(args.Text))
	case "memory_search":
		return m.search(ctx, c, args.Query)
	}
	return tools.Failure("unknown tool")
}

// save stores a memory for the turn's speaker (or agent-wide); at the
// limit the oldest of its scope makes room.
func (m *memoryTools) save(ctx context.Context, c tools.Call, text string) tools.Result {
	if text == "" || utf8.RuneCountInString(text) > MaxMemoryText {
		return tools.Failure("text must be 1 to 2000 characters")
	}
	mem, err := m.recall.SaveMemory(ctx, m.agent, domain.Memory{UserID: m.settings.owner(c.Turn.UserID), Text: text,
		Source: domain.MemorySourceAgent, ConversationID: c.Turn.ConversationID}, true)
	if err != nil {
		return tools.Failure("the memory could not be saved")
	}
	return jsonResult(map[string]string{"saved": mem.ID})
}

// search answers the memories of the speaker's scope most relevant to
// query.
func (m *memoryTools) search(ctx context.Context, c tools.Call, query string) tools.Result {
	if strings.TrimSpace(query) == "" {
		return tools.Failure("query must not be empty")
	}
	mems, err := m.recall.Memories(ctx, m.agent, m.settings.scope(c.Turn.UserID), query, RecallMemories)
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
