package turn

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/tools"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracer is the turn's tracer, looked up at each span (see
// telemetry.Tracer).
func tracer() trace.Tracer { return otel.Tracer("github.com/agentd/agentd/turn") }

// Attributes of the OpenTelemetry GenAI semantic conventions, written out:
// the SDK's semconv packages have them up to v1.41 only, and the rest of
// agentd uses v1.43, the SDK's own.
const (
	attrOperation     = attribute.Key("gen_ai.operation.name")
	attrProvider      = attribute.Key("gen_ai.provider.name")
	attrRequestModel  = attribute.Key("gen_ai.request.model")
	attrResponseModel = attribute.Key("gen_ai.response.model")
	attrInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	attrToolName      = attribute.Key("gen_ai.tool.name")
	attrToolCallID    = attribute.Key("gen_ai.tool.call.id")
	attrToolType      = attribute.Key("gen_ai.tool.type")
)

// Attributes of the GenAI conventions that carry content, recorded only
// when Config.TraceContent is set.
const (
	attrInputMessages  = attribute.Key("gen_ai.input.messages")
	attrOutputMessages = attribute.Key("gen_ai.output.messages")
	attrSystem         = attribute.Key("gen_ai.system_instructions")
	attrToolArguments  = attribute.Key("gen_ai.tool.call.arguments")
	attrToolResult     = attribute.Key("gen_ai.tool.call.result")
)

// genAIProvider is the gen_ai.provider.name of an agentd provider.
func genAIProvider(provider string) string {
	if provider == llm.ProviderGoogle {
		return "gcp.gemini"
	}
	return provider // openai, anthropic and groq are the conventions' names too; ollama has none
}

// chat is one call of the model as a client span "chat <model>" with the
// GenAI attributes: provider, requested and answering model, token usage
// and, with TraceContent, the messages.
func (s *Service) chat(ctx context.Context, t *Turn, req llm.Request, ask call) (llm.Reply, error) {
	ctx, span := tracer().Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	if !span.IsRecording() {
		return ask(ctx, req)
	}
	span.SetAttributes(attrOperation.String("chat"), attrProvider.String(genAIProvider(t.agent.ModelProvider)),
		attrRequestModel.String(req.Model))
	if s.cfg.TraceContent {
		span.SetAttributes(attrSystem.String(textParts(req.System)), attrInputMessages.String(inputMessages(req)))
	}
	reply, err := ask(ctx, req)
	span.SetAttributes(attrInputTokens.Int(reply.Usage.PromptTokens),
		attrOutputTokens.Int(reply.Usage.CompletionTokens))
	if reply.Model != "" {
		span.SetAttributes(attrResponseModel.String(reply.Model))
	}
	if s.cfg.TraceContent {
		span.SetAttributes(attrOutputMessages.String(outputMessages(reply)))
	}
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(providerErrorType(err)))
		span.SetStatus(codes.Error, "")
	}
	return reply, err
}

// providerErrorType names a failed call by its kind, never by the
// provider's text.
func providerErrorType(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Kind.String()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "canceled"
	}
	return "_OTHER"
}

// message is a message in the GenAI conventions' JSON shape.
type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

// textParts is the system prompt as the conventions' list of parts.
func textParts(text string) string {
	return marshal([]part{{Type: "text", Content: text}})
}

// inputMessages is the history, the new message and the tool steps of req.
func inputMessages(req llm.Request) string {
	var msgs []message
	for _, m := range req.History {
		msgs = append(msgs, message{Role: string(m.Role), Parts: []part{{Type: "text", Content: m.Content}}})
	}
	msgs = append(msgs, message{Role: "user", Parts: []part{{Type: "text", Content: req.Text}}})
	for _, st := range req.Steps {
		msgs = append(msgs,
			message{Role: "assistant", Parts: []part{{Type: "tool_call", ID: st.Call.ID, Name: st.Call.Name, Arguments: jsonOrString(st.Call.Arguments)}}},
			message{Role: "tool", Parts: []part{{Type: "tool_call_response", ID: st.Call.ID, Response: st.Result}}})
	}
	return marshal(msgs)
}

// outputMessages is the model's answer: its text and the calls it asked for.
func outputMessages(r llm.Reply) string {
	parts := []part{}
	if r.Text != "" {
		parts = append(parts, part{Type: "text", Content: r.Text})
	}
	for _, c := range r.ToolCalls {
		parts = append(parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: jsonOrString(c.Arguments)})
	}
	return marshal([]message{{Role: "assistant", Parts: parts}})
}

// jsonOrString keeps arguments that are JSON as they are, else quotes them.
func jsonOrString(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	raw, _ := json.Marshal(s)
	return raw
}

func marshal(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// startToolSpan starts the span "execute_tool <name>" of call rec; with
// content, its arguments are recorded too.
func (r *toolRun) startToolSpan(ctx context.Context, rec domain.ToolCall) (context.Context, trace.Span) {
	ctx, span := tracer().Start(ctx, "execute_tool "+rec.Name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(attrOperation.String("execute_tool"), attrToolName.String(rec.Name),
			attrToolCallID.String(rec.ID), attrToolType.String("function"))
		if r.content {
			span.SetAttributes(attrToolArguments.String(string(rec.Arguments)))
		}
	}
	return ctx, span
}

// endToolSpan records the outcome of a call and ends its span.
func (r *toolRun) endToolSpan(span trace.Span, res tools.Result) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	if r.content {
		span.SetAttributes(attrToolResult.String(res.Text))
	}
	if !res.OK {
		span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		span.SetStatus(codes.Error, "")
	}
}
