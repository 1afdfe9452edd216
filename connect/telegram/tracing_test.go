package telegram_test

import (
	"fmt"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestPlatformTurnIsATrace: with a tracer provider installed, a Telegram
// message's turn is the root span "turn telegram" of a trace of its own.
func TestPlatformTurnIsATrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	f := newFixture(t)
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	f.tg.Queue(token, private("hello"))
	testutil.Eventually(t, "reply", f.sent(1))
	testutil.Eventually(t, "the turn's span", func() error {
		for _, s := range rec.Ended() {
			if s.Name() != "turn telegram" {
				continue
			}
			attrs := map[string]string{}
			for _, kv := range s.Attributes() {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			if s.Parent().IsValid() || attrs["agentd.platform"] != "telegram" || attrs["agentd.agent.id"] != a.ID {
				return fmt.Errorf("span parent %v attributes %v", s.Parent(), attrs)
			}
			return nil
		}
		return fmt.Errorf("no span \"turn telegram\" among %d", len(rec.Ended()))
	})
}
