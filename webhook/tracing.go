package webhook

import (
	"context"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of a delivery's span: ids only, never the URL (it may
// hold a token) nor the body.
const (
	attrDelivery = attribute.Key("agentd.webhook.delivery_id")
	attrWebhook  = attribute.Key("agentd.webhook.id")
	attrEvent    = attribute.Key("agentd.webhook.event_id")
	attrAttempt  = attribute.Key("agentd.webhook.attempt")
)

// startDelivery starts the span of one attempt of job, linked to the
// trace that made its event; the POST under it carries its traceparent to
// the receiver.
func startDelivery(ctx context.Context, job domain.Job) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attrDelivery.String(job.DeliveryID), attrWebhook.String(job.WebhookID),
			attrEvent.String(job.EventID), attrAttempt.Int(job.Attempts+1))}
	if origin := originOf(job); origin.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: origin}))
	}
	return telemetry.Tracer("webhook").Start(ctx, "deliver webhook", opts...)
}

// originOf is the span context of the request or turn that made job's
// event, invalid when there was none.
func originOf(job domain.Job) trace.SpanContext {
	if job.Origin == "" {
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{"traceparent": job.Origin}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
}

// endDelivery records the attempt's outcome on its span.
func endDelivery(span trace.Span, a domain.Attempt) {
	if a.StatusCode != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(a.StatusCode))
	}
	if !a.Succeeded {
		span.SetStatus(codes.Error, "")
	}
}
