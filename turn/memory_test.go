package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/recall"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/turn"
)

// memoryCase is a service whose agent has long-term memory, answering
// through a provider test server of the agent's provider.
type memoryCase struct {
	svc    *turn.Service
	st     *store.Store
	agent  domain.Agent
	srv    *llmtest.Server
	recall *recall.Service
	// lookups counts the turn's knowledge lookups.
	lookups *countingRecall
}

// countingRecall counts the Knowledge lookups it passes on.
type countingRecall struct {
	turn.Recall
	knowledge atomic.Int64
}

func (c *countingRecall) Knowledge(ctx context.Context, a recall.Agent, query string, k int) ([]domain.KnowledgeChunk, error) {
	c.knowledge.Add(1)
	return c.Recall.Knowledge(ctx, a, query, k)
}

// newMemoryCase builds a memoryCase for provider ("openai" has
// embeddings, "anthropic" none) with the memory member memory.
func newMemoryCase(t *testing.T, provider string, memory string) *memoryCase {
	srv := llmtest.NewOpenAI(t)
	cfg := llm.Config{OpenAI: llm.ProviderConfig{APIKey: "k", BaseURL: srv.URL}}
	if provider == llm.ProviderAnthropic {
		srv = llmtest.NewAnthropic(t)
		cfg = llm.Config{Anthropic: llm.ProviderConfig{APIKey: "k", BaseURL: srv.URL}}
	}
	model := llm.New(cfg)
	t.Cleanup(model.CloseIdleConnections)
	c := &memoryCase{srv: srv}
	fields := map[string]json.RawMessage{"memory": json.RawMessage(memory),
		"modelProvider": json.RawMessage(`"` + provider + `"`)}
	var box *tools.Service
	c.svc, c.st, c.agent = newServiceWith(t, turn.Config{Model: model}, fields, nil, func(st *store.Store, cfg *turn.Config) {
		c.recall = recall.New(st.Memories(), st.Knowledge(), model, nil)
		c.lookups = &countingRecall{Recall: c.recall}
		box = tools.New(tools.Config{})
		cfg.Tools, cfg.Recall = box, c.lookups
	})
	t.Cleanup(box.Close)
	t.Cleanup(c.svc.Close)
	return c
}

// say sends text from user in conv and returns the system prompt the
// provider got for the turn's first call.
func (c *memoryCase) say(t *testing.T, user string, conv domain.ConversationRef, text string) string {
	t.Helper()
	before := len(c.srv.Requests())
	if _, err := c.svc.Reply(context.Background(), turn.Input{AccountID: c.agent.AccountID, AgentID: c.agent.ID,
		Text: text, UserID: user, Conv: conv}); err != nil {
		t.Fatal(err)
	}
	system, _ := c.srv.Requests()[before].Conversation()
	return system
}

// TestMemoryPerUser: a memory the model saves for Ann is recalled into
// Ann's prompt in another conversation, never into Bob's, with embeddings
// (openai), without (anthropic), and when embedding fails (ranked by full
// text then).
func TestMemoryPerUser(t *testing.T) {
	for _, tc := range []struct{ name, provider string }{{"embeddings", "openai"}, {"full text", "anthropic"}, {"embedder fails", "openai"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newMemoryCase(t, tc.provider, `{"longTermEnabled":true}`)
			if tc.name == "embedder fails" {
				c.srv.FailEmbeddings(500)
			}
			c.srv.Respond(llmtest.Reply{Text: "Noted."})
			c.srv.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "memory_save", Arguments: `{"text":"Ann is learning Rust programming"}`}}})
			c.say(t, "ann", domain.ConversationRef{UserID: "ann", Platform: domain.PlatformAPI}, "I am learning Rust these days")
			if got := c.srv.Requests()[0].ToolNames(); strings.Join(got, ",") != "memory_save,memory_search" {
				t.Fatalf("tools offered %v", got)
			}
			room := domain.ConversationRef{RoomID: "club", Platform: domain.PlatformAPI}
			if p := c.say(t, "ann", room, "Which programming language am I learning?"); !strings.Contains(p, "What you remember:\n- Ann is learning Rust programming") {
				t.Errorf("Ann's prompt lacks her memory:\n%s", p)
			}
			if p := c.say(t, "bob", room, "Which programming language am I learning?"); strings.Contains(p, "Rust") {
				t.Errorf("Bob's prompt shows Ann's memory:\n%s", p)
			}
			mems, _, err := c.st.Memories().ListMemories(context.Background(), c.agent.AccountID, c.agent.ID, domain.MemoryQuery{Page: 1, Limit: 10})
			if err != nil || len(mems) != 1 || mems[0].UserID != "ann" || mems[0].Source != domain.MemorySourceAgent {
				t.Fatalf("memories %+v, %v", mems, err)
			}
			vecs, err := c.st.Memories().MemoryVectors(context.Background(), c.agent.AccountID, c.agent.ID, []string{"ann"}, "text-embedding-3-small")
			if err != nil || (len(vecs) == 1) != (tc.name == "embeddings") {
				t.Errorf("%d embeddings stored, %v", len(vecs), err)
			}
		})
	}
}

// TestMemoryAgentWide: with rememberUsers false a memory is agent-wide and
// reaches every user's prompt; memory_search finds it.
func TestMemoryAgentWide(t *testing.T) {
	c := newMemoryCase(t, "anthropic", `{"longTermEnabled":true,"rememberUsers":false}`)
	ctx := context.Background()
	a := recall.Agent{AccountID: c.agent.AccountID, ID: c.agent.ID, Provider: "anthropic"}
	if _, err := c.recall.SaveMemory(ctx, a, domain.Memory{Text: "The office closes at 6pm on Fridays", Source: domain.MemorySourceAPI}, false); err != nil {
		t.Fatal(err)
	}
	c.srv.Respond(llmtest.Reply{Text: "At 6."})
	c.srv.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "memory_search", Arguments: `{"query":"office closes Friday"}`}}})
	p := c.say(t, "carol", domain.ConversationRef{UserID: "carol", Platform: domain.PlatformAPI}, "When does the office close on Friday?")
	if !strings.Contains(p, "The office closes at 6pm on Fridays") {
		t.Errorf("the agent-wide memory is not recalled:\n%s", p)
	}
	results := c.srv.Requests()[1].ToolResults()
	if len(results) != 1 || !strings.Contains(results[0].Content, "6pm") {
		t.Errorf("memory_search answered %+v", results)
	}
}

// TestKnowledgeInPrompt: the chunk about the question's topic is in the
// prompt with its document's name; another document's is not. A turn of
// an agent without documents looks for none.
func TestKnowledgeInPrompt(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			c := newMemoryCase(t, provider, `{}`)
			c.srv.Respond(llmtest.Reply{Text: "No idea."})
			c.say(t, "u1", domain.ConversationRef{UserID: "u1", Platform: domain.PlatformAPI}, "What fee does a trade cost?")
			if n := c.lookups.knowledge.Load(); n != 0 {
				t.Errorf("%d knowledge lookups for an agent without documents", n)
			}
			a := recall.Agent{AccountID: c.agent.AccountID, ID: c.agent.ID, Provider: provider, APIKey: "k"}
			for name, text := range map[string]string{
				"fees.md":   "# Fees\n\nEvery trade costs a fee of 0.1 percent, paid in the quote currency.",
				"hiking.md": "# Trails\n\nThe northern trail climbs through pine forest to the lake.",
			} {
				if _, err := c.recall.AddKnowledge(context.Background(), a, name, text); err != nil {
					t.Fatal(err)
				}
			}
			c.srv.Respond(llmtest.Reply{Text: "0.1%."})
			p := c.say(t, "u1", domain.ConversationRef{UserID: "u1", Platform: domain.PlatformAPI}, "What fee does a trade cost?")
			if n := c.lookups.knowledge.Load(); n != 1 {
				t.Errorf("%d knowledge lookups for a turn of an agent with documents", n)
			}
			if !strings.Contains(p, "Relevant knowledge:\n[fees.md]\n# Fees") {
				t.Errorf("the fees chunk is not in the prompt:\n%s", p)
			}
			if provider == "anthropic" && strings.Contains(p, "pine forest") {
				t.Errorf("an unrelated chunk is in the prompt:\n%s", p)
			}
		})
	}
}

// TestConversationSummary: once messages leave the window, a summary is
// written after the turn by the agent's model and shown in later prompts;
// a provider failure while summarising counts as an error and changes
// nothing else.
func TestConversationSummary(t *testing.T) {
	c := newMemoryCase(t, "anthropic", `{"rememberConversations":true,"shortTermContext":2}`)
	ctx := context.Background()
	conv := domain.ConversationRef{UserID: "u1", Platform: domain.PlatformAPI}
	summary := func() string {
		s, n, err := c.st.Conversations().ConversationSummary(ctx, c.agent.AccountID, c.agent.ID, conv)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d: %s", n, s)
	}
	c.srv.Respond(llmtest.Reply{Text: "Sure."})
	c.say(t, "u1", conv, "My cat is called Miso")
	c.svc.Close()
	if got := summary(); got != "0: " {
		t.Fatalf("a summary before any message left the window: %q", got)
	}
	c.srv.Respond(llmtest.Reply{Text: "The user has a cat called Miso."})
	c.say(t, "u1", conv, "I live in Lyon") // 4 messages: the first exchange left the window of 2
	c.svc.Close()
	if got := summary(); got != "2: The user has a cat called Miso." {
		t.Fatalf("summary %q", got)
	}
	fold := c.srv.Requests()[2]
	if _, msgs := fold.Conversation(); !strings.Contains(msgs[len(msgs)-1].Content, "User u1: My cat is called Miso") {
		t.Errorf("the summary call got %+v", msgs)
	}
	c.srv.Respond(llmtest.Reply{Status: 500})
	c.srv.Enqueue(llmtest.Reply{Text: "Miso."})
	if p := c.say(t, "u1", conv, "What is my cat called?"); !strings.Contains(p, "Earlier in this conversation:\nThe user has a cat called Miso.") {
		t.Errorf("the prompt lacks the summary:\n%s", p)
	}
	c.svc.Close() // its summary call failed
	if got := summary(); got != "2: The user has a cat called Miso." {
		t.Errorf("summary after a failed call %q", got)
	}
	a, err := c.st.Agents().GetAgent(ctx, c.agent.AccountID, c.agent.ID)
	if err != nil || a.Status != domain.StatusActive {
		t.Errorf("agent after a failed summary: %v %v", a.Status, err)
	}
	rep, err := c.st.Analytics().AgentAnalytics(ctx, c.agent.AccountID, c.agent.ID,
		domain.AnalyticsQuery{From: time.Now().Add(-time.Hour), To: time.Now(), Interval: domain.IntervalHour})
	if err != nil || rep.Totals.Errors != 1 {
		t.Errorf("analytics errors %d, %v; want the failed summary counted", rep.Totals.Errors, err)
	}
}
