package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store/storetest/pgtest"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTracing: with WithTracing, the statements of a traced call are
// client spans named after operation and table, under the caller's span,
// carrying neither SQL nor values nor the database's error text; a call
// without a span starts none.
func TestTracing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	run := func(t *testing.T, system, dsn string) {
		s, err := Open(context.Background(), dsn, WithTracing())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if _, err := s.Accounts().CreateAccount(context.Background(), domain.Account{Name: "untraced-" + system}); err != nil {
			t.Fatal(err)
		}
		ctx, parent := tp.Tracer("test").Start(context.Background(), "request "+system)
		if _, err := s.Accounts().CreateAccount(ctx, domain.Account{Name: "secret-name-" + system}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Accounts().CreateAccount(ctx, domain.Account{Name: "secret-name-" + system}); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("duplicate account: %v", err)
		}
		if _, err := s.Accounts().ListAccounts(ctx); err != nil {
			t.Fatal(err)
		}
		// Get Agent's read is a prepared statement outside GORM.
		if _, err := s.Agents().GetAgentDocument(ctx, "acct_none", "agent_none"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("get a missing agent: %v", err)
		}
		parent.End()
		var names []string
		failed := 0
		for _, sp := range rec.Ended() {
			if attrOf(sp.Attributes(), "db.system.name") != system {
				continue
			}
			names = append(names, sp.Name())
			if sp.Parent().SpanID() != parent.SpanContext().SpanID() || sp.SpanKind() != trace.SpanKindClient {
				t.Errorf("span %s: parent %v kind %v", sp.Name(), sp.Parent().SpanID(), sp.SpanKind())
			}
			for _, kv := range sp.Attributes() {
				if strings.Contains(kv.Value.String(), "secret-name") || strings.Contains(strings.ToUpper(kv.Value.String()), "VALUES") {
					t.Errorf("span %s attribute %s = %s", sp.Name(), kv.Key, kv.Value.String())
				}
			}
			if attrOf(sp.Attributes(), "error.type") == "duplicate_key" {
				failed++
			}
		}
		joined := strings.Join(names, ",")
		if strings.Count(joined, "INSERT accounts") != 2 || !strings.Contains(joined, "SELECT accounts") ||
			!strings.Contains(joined, "SELECT agents") || failed != 1 {
			t.Errorf("%s spans %v (%d failed), want two INSERT accounts (one failed), a SELECT accounts, a SELECT agents and nothing untraced",
				system, names, failed)
		}
	}
	t.Run("sqlite", func(t *testing.T) { run(t, "sqlite", t.TempDir()+"/agentd.db") })
	t.Run("postgres", func(t *testing.T) { run(t, "postgresql", pgtest.DSN(t)) })
}

func attrOf(attrs []attribute.KeyValue, key string) string {
	for _, kv := range attrs {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
