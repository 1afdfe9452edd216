package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
)

// TestCharacterVoiceReachesTheModel: what the provider receives for an
// imported ElizaOS character: its first five example conversations with
// the placeholders filled, its knowledge statements but not its knowledge
// files, and who it talks with in a direct conversation; Get Agent echoes
// the knowledge items as given.
func TestCharacterVoiceReachesTheModel(t *testing.T) {
	h := newHarness(t)
	example := func(i string) []any {
		return []any{
			map[string]any{"user": "{{user1}}", "content": map[string]any{"text": "Question " + i + " for {{agentName}}?"}},
			map[string]any{"user": "Dobby", "content": map[string]any{"text": "Dobby answers " + i + "!"}},
		}
	}
	var examples []any
	for _, i := range []string{"1", "2", "3", "4", "5", "6"} {
		examples = append(examples, example(i))
	}
	id := h.createAgent(map[string]any{"name": "Dobby", "messageExamples": examples,
		"knowledge": []any{"Magic (house-elf style)", map[string]any{"path": "docs/socks.md"}, map[string]any{"directory": "lore", "shared": true}}})
	if res := h.send(id, map[string]any{"text": "hello", "userId": "harry"}); res.Code != 200 {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	system, _ := h.openai.Last(t).Conversation()
	for _, want := range []string{"user: Question 1 for Dobby?", "Dobby: Dobby answers 1!", "Dobby: Dobby answers 5!",
		"Magic (house-elf style)", "You are talking with harry."} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, system)
		}
	}
	for _, unwanted := range []string{"answers 6", "{{", "socks.md", "lore"} {
		if strings.Contains(system, unwanted) {
			t.Errorf("system prompt has %q:\n%s", unwanted, system)
		}
	}
	if i, j := strings.Index(system, "answers 1"), strings.Index(system, "answers 2"); i > j {
		t.Error("examples out of their stored order")
	}
	knowledge := h.getAgent(id)["knowledge"].([]any)
	if len(knowledge) != 3 || knowledge[1].(map[string]any)["path"] != "docs/socks.md" || knowledge[2].(map[string]any)["shared"] != true {
		t.Errorf("knowledge echoed as %v", knowledge)
	}

	// In a room nobody in particular is talked with.
	if res := h.send(id, map[string]any{"text": "hello all", "userId": "harry", "roomId": "hogwarts"}); res.Code != 200 {
		t.Fatalf("send: %d %s", res.Code, res.Body)
	}
	if system, _ := h.openai.Last(t).Conversation(); strings.Contains(system, "talking with") {
		t.Errorf("room prompt names a user:\n%s", system)
	}
}

// TestHistoryFitsTheContextBudget: the earlier messages sent are the
// newest that fit memory.maxContextTokens together, so a long
// conversation never overflows the model's context.
func TestHistoryFitsTheContextBudget(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("word ", 480) // 2,400 characters: about 600 tokens
	h.openai.Respond(llmtest.Reply{Text: "ok"})
	id := h.createAgent(map[string]any{"name": "Budget", "memory": map[string]any{"maxContextTokens": 1000}})
	for range 3 {
		if res := h.send(id, map[string]any{"text": long, "userId": "u1"}); res.Code != 200 {
			t.Fatalf("send: %d %s", res.Code, res.Body)
		}
	}
	_, msgs := h.openai.Last(t).Conversation()
	// History: user(600) agent(1) user(600) agent(1); 1,000 tokens fit the
	// newest three (602), not the fourth (1,202); then the new message.
	if len(msgs) != 4 || msgs[0].Role != "assistant" || msgs[1].Role != "user" || msgs[2].Content != "ok" || msgs[3].Role != "user" {
		var roles []string
		for _, m := range msgs {
			roles = append(roles, m.Role)
		}
		t.Errorf("sent %d messages %v, want the newest that fit 1,000 tokens and the new one", len(msgs), roles)
	}
	if res := h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey,
		body: map[string]any{"memory": map[string]any{"maxContextTokens": 999}}}); res.Code != 400 {
		t.Errorf("maxContextTokens 999: %d, want 400", res.Code)
	}
}

// TestStatusReasonWhileInError: Get Agent says why an agent is in error,
// and only then.
func TestStatusReasonWhileInError(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Fragile"})
	if _, ok := h.getAgent(id)["statusReason"]; ok {
		t.Fatal("statusReason on an active agent")
	}
	if _, err := h.store.Agents().MarkAgentError(context.Background(), h.account.ID, id, "The provider is down.", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := h.getAgent(id); got["status"] != "error" || got["statusReason"] != "The provider is down." {
		t.Errorf("agent in error: status %v, statusReason %v", got["status"], got["statusReason"])
	}
}

// TestPatchWithEmptyValueOfAnAbsentMemberChangesNothing: [] or {} for a
// member never set is what Get Agent shows already: no change, no new
// updatedAt.
func TestPatchWithEmptyValueOfAnAbsentMemberChangesNothing(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Plain"})
	before := h.getAgent(id)["updatedAt"]
	res := h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey,
		body: map[string]any{"goals": []any{}, "personality": map[string]any{}}})
	if res.Code != 200 {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	if changes := res.Data(t)["changes"].([]any); len(changes) != 0 {
		t.Errorf("changes %v, want none", changes)
	}
	if after := h.getAgent(id)["updatedAt"]; after != before {
		t.Errorf("updatedAt moved from %v to %v", before, after)
	}
}

// getAgent returns the data of Get Agent.
func (h *harness) getAgent(id string) map[string]any {
	h.t.Helper()
	res := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey})
	if res.Code != 200 {
		h.t.Fatalf("get agent: %d %s", res.Code, res.Body)
	}
	return res.Data(h.t)
}
