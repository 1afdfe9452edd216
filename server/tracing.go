package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// untraced are the probes and the scrape, which would bury the requests
// in spans nobody reads.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// traced makes each request to h a server span, child of the incoming
// traceparent when there is one (otelhttp, with the installed propagator).
func traced(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "agentd",
		otelhttp.WithFilter(func(r *http.Request) bool { return !untraced[r.URL.Path] }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return methodLabel(r.Method) }))
}

// nameSpan names the request's span after its route once Echo has matched
// it ("POST /v1/agents/:id/messages"): a name per path would name each
// agent's requests apart. Without a recording span it does nothing.
func nameSpan(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		span := trace.SpanFromContext(c.Request().Context())
		if route := c.Path(); span.IsRecording() && route != "" {
			span.SetName(methodLabel(c.Request().Method) + " " + route)
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		return err
	}
}
