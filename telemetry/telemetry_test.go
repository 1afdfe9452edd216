package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestLogHandler: a record logged with a span's context carries its ids;
// one without a span carries none.
func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "x")
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	log.InfoContext(ctx, "traced")
	log.Info("plain")
	span.End()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	sc := span.SpanContext()
	if want := `"trace_id":"` + sc.TraceID().String() + `","span_id":"` + sc.SpanID().String() + `"`; !strings.Contains(lines[0], want) {
		t.Errorf("traced line %s lacks %s", lines[0], want)
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Errorf("untraced line %s has a trace id", lines[1])
	}
}

// TestTransport: a request is a client span with the host and status only
// (no path, no query) and carries the trace in traceparent.
func TestTransport(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("traceparent")
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	ctx, parent := tp.Tracer("t").Start(context.Background(), "parent")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/hook/s3cret?token=s3cret", nil)
	res, err := (&http.Client{Transport: Transport(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	parent.End()
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("spans = %d", len(spans))
	}
	client := spans[0]
	if client.SpanKind() != trace.SpanKindClient || client.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("client span %q kind %v parent %v", client.Name(), client.SpanKind(), client.Parent())
	}
	if !strings.HasPrefix(got, "00-"+parent.SpanContext().TraceID().String()+"-"+client.SpanContext().SpanID().String()) {
		t.Errorf("traceparent %q does not name the client span", got)
	}
	for _, kv := range client.Attributes() {
		if strings.Contains(kv.Value.String(), "s3cret") {
			t.Errorf("attribute %s = %s holds the URL's secret", kv.Key, kv.Value.String())
		}
	}
}

// TestSetupWithoutEndpoint: nothing is installed; spans stay no-ops.
func TestSetupWithoutEndpoint(t *testing.T) {
	before := otel.GetTracerProvider()
	shutdown, err := Setup(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != before {
		t.Error("a tracer provider was installed without an endpoint")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	if (Config{Endpoint: "http://c:4318/"}).tracesURL() != "http://c:4318/v1/traces" ||
		(Config{Endpoint: "http://c:4318", TracesEndpoint: "http://t/x"}).tracesURL() != "http://t/x" {
		t.Error("traces URL not derived as the OTLP variables say")
	}
}

// TestSetupHonoursStandardVariables: the OTEL_* variables an operator
// sets reach the exporter, the resource, the sampler and the propagator.
func TestSetupHonoursStandardVariables(t *testing.T) {
	type export struct {
		header http.Header
		body   []byte
	}
	got := make(chan export, 8)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- export{r.Header.Clone(), b}
	}))
	defer collector.Close()
	t.Setenv("OTEL_SERVICE_NAME", "agentd-eu")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-token=t0ken")
	t.Setenv("OTEL_PROPAGATORS", "b3")
	shutdown, err := Setup(context.Background(), Config{Endpoint: collector.URL})
	if err != nil {
		t.Fatal(err)
	}
	if fields := otel.GetTextMapPropagator().Fields(); len(fields) != 1 || fields[0] != "b3" {
		t.Errorf("propagator fields %v; want b3 alone", fields)
	}
	_, span := Tracer("test").Start(context.Background(), "work")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var e export
	select {
	case e = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no spans exported")
	}
	if e.header.Get("X-Collector-Token") != "t0ken" || e.header.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("export headers %v", e.header)
	}
	for _, want := range []string{"agentd-eu", "deployment.environment.name", "staging", "work"} {
		if !bytes.Contains(e.body, []byte(want)) {
			t.Errorf("exported spans lack %q", want)
		}
	}

	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	shutdown, err = Setup(context.Background(), Config{Endpoint: collector.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	if _, span := Tracer("test").Start(context.Background(), "dropped"); span.IsRecording() {
		t.Error("OTEL_TRACES_SAMPLER=always_off still records")
	}
}
