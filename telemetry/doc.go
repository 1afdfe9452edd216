// Package telemetry sets up agentd's OpenTelemetry traces and ties its logs
// to them.
//
// Setup installs the SDK's tracer provider, exporting over OTLP
// (HTTP/protobuf), and the W3C trace-context propagator, only when an OTLP
// endpoint is configured; otherwise it installs nothing, so the spans the
// other packages start are the API's no-op spans and cost next to nothing.
// The SDK reads the other standard OTEL_* variables itself (service name,
// resource attributes, sampler, headers, timeouts, batching).
//
// LogHandler adds the trace_id and span_id of the span in a record's
// context to every log line; Transport carries the trace context to the
// URLs agentd calls (action handlers, MCP servers, webhook receivers).
//
// Span attributes never carry message text, tool arguments or results, or
// secrets, unless the operator asks for content (AGENTD_TRACE_CONTENT),
// which the packages that start spans are told through their
// configuration.
package telemetry
