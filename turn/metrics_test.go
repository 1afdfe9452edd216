package turn_test

import (
	"context"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/turn"
	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsCountTokensAndToolCalls: a turn of two provider calls adds
// the tokens of both, by kind, and counts its tool calls by outcome.
func TestMetricsCountTokensAndToolCalls(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	model := llm.New(llm.Config{OpenAI: llm.ProviderConfig{APIKey: "k", BaseURL: srv.URL}})
	t.Cleanup(model.CloseIdleConnections)
	box := fakeBox{&fakeTools{}}
	t.Cleanup(box.Close)
	reg := prometheus.NewRegistry()
	svc, _, agent := newServiceWith(t, turn.Config{Model: model, Tools: box, Registerer: reg}, nil, nil)
	c := &toolCase{svc: svc, agent: agent}

	srv.Respond(llmtest.Reply{Text: "Done.", PromptTokens: 30, CompletionTokens: 3})
	srv.Enqueue(llmtest.Reply{ToolCalls: append(calls("SOL", "ETH"), llmtest.ToolCall{Name: "launch_rockets", Arguments: `{}`}),
		PromptTokens: 10, CompletionTokens: 5})
	if _, err := svc.Reply(context.Background(), c.input()); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"agentd_tokens_total", []string{"provider", "openai", "kind", "prompt"}, 40},
		{"agentd_tokens_total", []string{"provider", "openai", "kind", "completion"}, 8},
		{"agentd_tool_calls_total", []string{"outcome", "ok"}, 2},
		{"agentd_tool_calls_total", []string{"outcome", "error"}, 1},
		{"agentd_provider_calls_total", []string{"provider", "openai", "outcome", "ok"}, 1},
	} {
		if got := testutil.Counter(t, reg, m.name, m.labels...); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
}
