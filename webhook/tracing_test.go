package webhook_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store/storetest"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestDeliveryIsATrace: with a tracer provider installed, each attempt is
// a trace "deliver webhook" whose traceparent the receiver gets, with the
// delivery's ids and status and not its URL, linked to the trace of the
// request that made the event.
func TestDeliveryIsATrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })

	st := storetest.Open(t, filepath.Join(t.TempDir(), "agentd.db"))
	rcv := newReceiver(t, 503)
	acct, w := setup(t, st, rcv.URL+"/hooks/t0ken", "webhook.test")
	run(t, st, nil)
	ctx, request := tp.Tracer("test").Start(context.Background(), "POST /v1/webhooks/:id/test")
	if err := st.Webhooks().TestWebhook(ctx, acct.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	request.End()
	testutil.Eventually(t, "the delivery to succeed", deliveredAs(t, st, w, domain.DeliverySucceeded))
	got := rcv.requests()
	var spans []sdktrace.ReadOnlySpan
	testutil.Eventually(t, "two delivery spans", func() error {
		spans = spans[:0]
		for _, s := range rec.Ended() {
			if s.Name() == "deliver webhook" && attrOf(s, "agentd.webhook.id") == w.ID {
				spans = append(spans, s)
			}
		}
		if len(spans) != 2 {
			return fmt.Errorf("%d delivery spans", len(spans))
		}
		return nil
	})
	for i, s := range spans {
		tp := got[i].header.Get("traceparent")
		if len(tp) != 55 || tp[3:35] != s.SpanContext().TraceID().String() {
			t.Errorf("attempt %d: traceparent %q, span trace %s", i+1, tp, s.SpanContext().TraceID())
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		if links := s.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != request.SpanContext().SpanID() ||
			links[0].SpanContext.TraceID() != request.SpanContext().TraceID() {
			t.Errorf("attempt %d links %+v; want the request's span", i+1, links)
		}
		if attrs["agentd.webhook.id"] != w.ID || attrs["agentd.webhook.attempt"] != []string{"1", "2"}[i] ||
			attrs["http.response.status_code"] != []string{"503", "200"}[i] {
			t.Errorf("attempt %d attributes %v", i+1, attrs)
		}
	}
	if spans[0].SpanContext().TraceID() == spans[1].SpanContext().TraceID() {
		t.Errorf("two attempts share a trace")
	}
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if v := kv.Value.String(); len(v) > 0 && strings.Contains(v, "t0ken") {
				t.Errorf("span %s attribute %s = %s holds the URL's path", s.Name(), kv.Key, v)
			}
		}
	}
}

// attrOf is a span's attribute as text, "" when absent.
func attrOf(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
