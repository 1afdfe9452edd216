package turn

import (
	"context"
	"testing"

	"github.com/agentd/agentd/llm"
)

// BenchmarkChatSpanUntraced is what tracing costs a model call while it is
// off (no OTEL exporter configured): the chat span started and ended on
// the global no-op tracer. BenchmarkSendMessage (server) is the whole
// message it is part of.
func BenchmarkChatSpanUntraced(b *testing.B) {
	s := &Service{}
	t := &Turn{}
	req := llm.Request{Model: "gpt-4o-mini"}
	ask := func(context.Context, llm.Request) (llm.Reply, error) { return llm.Reply{}, nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.chat(ctx, t, req, ask); err != nil {
			b.Fatal(err)
		}
	}
}
