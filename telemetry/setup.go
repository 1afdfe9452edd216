package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ServiceName is the service.name of agentd's traces unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names another.
const ServiceName = "agentd"

// Config says where traces go.
type Config struct {
	// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL,
	// to which /v1/traces is appended.
	Endpoint string
	// TracesEndpoint is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the full URL
	// of the traces; it wins over Endpoint.
	TracesEndpoint string
	// Version is the service.version of the traces ("" for none).
	Version string
	// Disabled turns traces off whatever the endpoints say
	// (OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none).
	Disabled bool
	// Logger receives the exporter's failures (slog.Default when nil).
	Logger *slog.Logger
}

// Enabled reports whether traces are exported.
func (c Config) Enabled() bool { return !c.Disabled && c.tracesURL() != "" }

// tracesURL is the URL spans are posted to, "" when none is configured.
func (c Config) tracesURL() string {
	if c.TracesEndpoint != "" {
		return c.TracesEndpoint
	}
	if c.Endpoint == "" {
		return ""
	}
	return strings.TrimSuffix(c.Endpoint, "/") + "/v1/traces"
}

// Setup installs the global tracer provider and propagator when cfg is
// Enabled, and returns what flushes and removes them; without an endpoint
// it installs nothing and its shutdown does nothing.
func Setup(ctx context.Context, cfg Config) (shutdown func(context.Context) error, err error) {
	if !cfg.Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.tracesURL()))
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(ServiceName))}
	if cfg.Version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.Version)))
	}
	// Later options win: the environment over the defaults above.
	res, err := resource.New(ctx, append(attrs, resource.WithTelemetrySDK(), resource.WithFromEnv())...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	// The sampler and the batching come from OTEL_TRACES_SAMPLER and
	// OTEL_BSP_*, which the SDK reads when they are not given here.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("tracing failed", "error", err) }))
	otel.SetTracerProvider(tp)
	// OTEL_PROPAGATORS names the propagators (tracecontext,baggage when unset).
	otel.SetTextMapPropagator(autoprop.NewTextMapPropagator())
	return func(ctx context.Context) error {
		if otel.GetTracerProvider() == trace.TracerProvider(tp) {
			otel.SetTracerProvider(noop.NewTracerProvider())
			otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
		}
		return tp.Shutdown(ctx)
	}, nil
}

// Tracer is the tracer of an agentd package, from the installed provider.
// It is looked up at each use, not kept: a provider installed later (a
// second server in one test process) must be the one that records.
func Tracer(pkg string) trace.Tracer {
	return otel.Tracer("github.com/agentd/agentd/" + pkg)
}
