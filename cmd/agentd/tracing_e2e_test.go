package main

import (
	"cmp"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP traces endpoint: it decodes what it gets as
// the collector's protobuf and keeps the spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	bad   []string // what was not an OTLP protobuf export
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(r.export))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) export(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var msg collectortrace.ExportTraceServiceRequest
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &msg) != nil {
		r.bad = append(r.bad, req.Method+" "+req.URL.Path+" "+req.Header.Get("Content-Type"))
		http.Error(w, "not an OTLP export", http.StatusBadRequest)
		return
	}
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	raw, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(raw)
}

// of returns the spans of trace id.
func (r *otlpReceiver) of(id string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if hex.EncodeToString(s.TraceId) == id {
			out = append(out, s)
		}
	}
	return out
}

// attr is a span's attribute as text ("" when absent).
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return anyValue(kv.Value)
		}
	}
	return ""
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return v.String()
}

// headerTransport sets headers on every request of a test client.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	return h.base.RoundTrip(req)
}

// TestTracesOverOTLP: with OTEL_EXPORTER_OTLP_ENDPOINT set, a Send Message
// whose model calls an action handler is one trace, continuing the
// caller's traceparent: the request's server span, the store's statements,
// the provider calls with the GenAI attributes and the tool call; the
// handler gets the trace in its traceparent; no attribute holds the
// message, the reply or the tool's result; the request's log line names
// the trace.
func TestTracesOverOTLP(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	const secretText = "the words of the user xyzzy"
	const replyText = "plugh says the model"
	const toolResult = "toolresult-frobozz"
	receiver := newOTLPReceiver(t)
	var handlerMu sync.Mutex
	var handlerTraceparent string
	handler := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlerMu.Lock()
		handlerTraceparent = r.Header.Get("traceparent")
		handlerMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"price":"`+toolResult+`"}`)
	}))
	t.Cleanup(handler.Close)
	openai := llmtest.NewOpenAI(t)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL,
		"AGENTD_ALLOW_PRIVATE_NETWORKS": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.URL},
		"--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	traced := &http.Client{Timeout: 30 * time.Second, Transport: headerTransport{base: transport,
		headers: map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}}}
	c := &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 30 * time.Second}, contract: loadContract(t)}

	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Tracer", "modelProvider": "openai", "model": "gpt-4o-mini",
		"actions": []any{map[string]any{"name": "get_price", "description": "Look up a price", "examples": []string{},
			"handler": handler.URL + "/price/tok3n"}}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)

	openai.Respond(llmtest.Reply{Text: replyText, PromptTokens: 23, CompletionTokens: 5})
	openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "get_price", Arguments: `{"input":"ETH"}`}},
		PromptTokens: 11, CompletionTokens: 7})
	c.http = traced
	r = c.do("POST", "/v1/agents/"+id+"/messages", key, map[string]any{"text": secretText})
	expect(t, "send", r, 200, "")
	callID := r.data(t)["metadata"].(map[string]any)["toolCalls"].([]any)[0].(map[string]any)["id"].(string)
	// A stream still streams through the traced handler (its writer keeps
	// flushing and deadlines); it is a trace of its own.
	c.http = &http.Client{Transport: transport, Timeout: 30 * time.Second}
	r = c.do("POST", "/v1/agents/"+id+"/messages/stream", key, map[string]any{"text": "again"})
	if r.status != 200 || !strings.Contains(string(r.body), `"type":"done"`) || !strings.Contains(string(r.body), "plugh") {
		t.Errorf("stream: %d %s", r.status, r.body)
	}
	in.stop(t) // flushes the spans

	handlerMu.Lock()
	if !strings.HasPrefix(handlerTraceparent, "00-"+traceID+"-") {
		t.Errorf("the action handler got traceparent %q, want trace %s", handlerTraceparent, traceID)
	}
	handlerMu.Unlock()
	if len(receiver.bad) > 0 {
		t.Errorf("the receiver got exports it could not read: %v", receiver.bad)
	}
	spans := receiver.of(traceID)
	byName := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		for _, kv := range s.Attributes {
			v := anyValue(kv.Value)
			for _, secret := range []string{secretText, replyText, toolResult, "tok3n", "sk-test"} {
				if strings.Contains(v, secret) {
					t.Errorf("span %q attribute %s holds %q: %s", s.Name, kv.Key, secret, v)
				}
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	t.Logf("spans of the trace: %v", names)

	server := byName["POST /v1/agents/:agentId/messages"]
	if len(server) != 1 || server[0].Kind != tracepb.Span_SPAN_KIND_SERVER || hex.EncodeToString(server[0].ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("request span = %v, want one server span, child of the traceparent's", server)
	}
	chats := byName["chat gpt-4o-mini"]
	if len(chats) != 2 {
		t.Fatalf("chat spans = %d, want 2 (the tool call, then the answer)", len(chats))
	}
	slices.SortFunc(chats, func(a, b *tracepb.Span) int { return cmp.Compare(a.StartTimeUnixNano, b.StartTimeUnixNano) })
	for i, want := range [][2]string{{"11", "7"}, {"23", "5"}} {
		s := chats[i]
		if s.Kind != tracepb.Span_SPAN_KIND_CLIENT || attr(s, "gen_ai.operation.name") != "chat" ||
			attr(s, "gen_ai.provider.name") != "openai" || attr(s, "gen_ai.request.model") != "gpt-4o-mini" ||
			attr(s, "gen_ai.usage.input_tokens") != want[0] || attr(s, "gen_ai.usage.output_tokens") != want[1] {
			t.Errorf("chat span %d: kind %v attributes %v", i, s.Kind, s.Attributes)
		}
	}
	tool := byName["execute_tool get_price"]
	if len(tool) != 1 || attr(tool[0], "gen_ai.tool.name") != "get_price" || attr(tool[0], "gen_ai.tool.call.id") != callID ||
		attr(tool[0], "gen_ai.operation.name") != "execute_tool" {
		t.Errorf("tool span = %v, want one with call id %s", tool, callID)
	}
	if len(byName["POST"]) == 0 {
		t.Errorf("no client span of the call to the action handler")
	}
	stored := 0
	for _, s := range spans {
		if attr(s, "db.system.name") == "sqlite" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			stored++
		}
	}
	if stored == 0 {
		t.Errorf("no store span in the trace")
	}
	if !regexp.MustCompile(`"msg":"request",[^\n]*"trace_id":"` + traceID + `","span_id":"[0-9a-f]{16}"`).MatchString(in.stderr.String()) {
		t.Errorf("no log line names trace %s:\n%s", traceID, in.stderr)
	}
}
