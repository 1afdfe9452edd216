package telemetry

import (
	"errors"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Transport returns base recording each request as a client span and
// passing the trace context on in its traceparent header.
//
// It is not otelhttp's transport because that one records the full URL,
// and the URLs given through the API (webhook receivers, action handlers,
// MCP servers) may carry a token in their path or query: this one records
// the method, the host, the port and the status only.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

// RoundTrip sends req inside a span named after its method.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := Tracer("telemetry").Start(req.Context(), req.Method, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(semconv.HTTPRequestMethodKey.String(req.Method), semconv.URLScheme(req.URL.Scheme))
		host, port := req.URL.Hostname(), req.URL.Port()
		span.SetAttributes(semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			span.SetAttributes(semconv.ServerPort(p))
		} else if port == "" {
			span.SetAttributes(semconv.ServerPort(defaultPort(req.URL.Scheme)))
		}
	}
	req = req.Clone(ctx)
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	res, err := t.base.RoundTrip(req)
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, "")
		return nil, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(res.StatusCode))
	if res.StatusCode >= 400 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(res.StatusCode)))
		span.SetStatus(codes.Error, "")
	}
	return res, nil
}

// CloseIdleConnections closes the idle connections of base.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}

// errorType names a transport failure without its text, which may hold
// the URL: a timeout, a refused or failed connection.
func errorType(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "transport"
}
