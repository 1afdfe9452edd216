package turn_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/turn"
)

// TestGivenContextReplacesStoredHistory: a turn given its context (the
// OpenAI API without `user`) sends that context as history, cut to the
// character's window like stored history, and reads no stored history;
// its exchange still counts on the agent.
func TestGivenContextReplacesStoredHistory(t *testing.T) {
	model := &scriptedModel{replies: []func() (llm.Reply, error){func() (llm.Reply, error) {
		return llm.Reply{Text: "ok", Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 2}}, nil
	}}}
	svc, st, agent := newServiceWith(t, turn.Config{Model: model},
		map[string]json.RawMessage{"memory": json.RawMessage(`{"shortTermContext": 2}`)}, nil)
	ctx := context.Background()
	conv := domain.ConversationRef{UserID: "u1", Platform: domain.PlatformAPI}
	if _, err := svc.Reply(ctx, turn.Input{AccountID: agent.AccountID, AgentID: agent.ID, Text: "stored", UserID: "u1", Conv: conv}); err != nil {
		t.Fatal(err)
	}
	given := []llm.Message{{Role: llm.RoleUser, Content: "one"}, {Role: llm.RoleAssistant, Content: "two"},
		{Role: llm.RoleUser, Content: "three"}}
	in := turn.Input{AccountID: agent.AccountID, AgentID: agent.ID, Text: "four", Given: given,
		Conv: domain.ConversationRef{Platform: domain.PlatformAPI}}
	p, err := svc.Preview(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := given[1:]; !reflect.DeepEqual(p.History, want) {
		t.Errorf("history %+v, want the last 2 given messages %+v", p.History, want)
	}
	in.Given = []llm.Message{}
	if p, err = svc.Preview(ctx, in); err != nil || len(p.History) != 0 {
		t.Errorf("empty given context: history %+v (%v), want none", p.History, err)
	}
	res, err := svc.Reply(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Metadata; m.TokensUsed != 9 || m.PromptTokens != 7 || m.CompletionTokens != 2 {
		t.Errorf("metadata %+v, want 7 prompt and 2 completion tokens", m)
	}
	got, err := st.Agents().GetAgent(ctx, agent.AccountID, agent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Metrics.TotalMessages != 2 {
		t.Errorf("total messages %d, want 2 (both exchanges)", got.Metrics.TotalMessages)
	}
}
