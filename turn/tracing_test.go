package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/turn"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTraceContent: the chat and tool spans carry the messages, the
// arguments and the results only when TraceContent is set.
func TestTraceContent(t *testing.T) {
	for _, content := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		prev := otel.GetTracerProvider()
		otel.SetTracerProvider(tp)
		srv := llmtest.NewOpenAI(t)
		model := llm.New(llm.Config{OpenAI: llm.ProviderConfig{APIKey: "k", BaseURL: srv.URL}})
		box := fakeBox{&fakeTools{}}
		svc, _, agent := newServiceWith(t, turn.Config{Model: model, Tools: box, TraceContent: content}, map[string]json.RawMessage{}, nil)
		srv.Respond(llmtest.Reply{Text: "SOL costs three.", PromptTokens: 30, CompletionTokens: 3})
		srv.Enqueue(llmtest.Reply{ToolCalls: calls("SOL")})
		ctx, root := tp.Tracer("test").Start(context.Background(), "request")
		if _, err := svc.Reply(ctx, turn.Input{AccountID: agent.AccountID, AgentID: agent.ID, Text: "the price of SOL, please"}); err != nil {
			t.Fatal(err)
		}
		root.End()
		otel.SetTracerProvider(prev)
		box.Close()
		model.CloseIdleConnections()
		all := ""
		chats, toolSpans := 0, 0
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "chat m":
				chats++
			case "execute_tool get_price":
				toolSpans++
			}
			for _, kv := range s.Attributes() {
				all += string(kv.Key) + "=" + kv.Value.String() + "\n"
			}
		}
		if chats != 2 || toolSpans != 1 {
			t.Errorf("content %v: %d chat spans, %d tool spans; want 2 and 1", content, chats, toolSpans)
		}
		for _, text := range []string{"the price of SOL, please", "SOL costs three.", `"price": 3`, `{"symbol":"SOL"}`} {
			if strings.Contains(all, text) != content {
				t.Errorf("content %v: attributes hold %q: %v\n%s", content, text, !content, all)
			}
		}
	}
}
