package llm_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
)

// priceTool is the tool the tests offer.
var priceTool = llm.Tool{Name: "get_price", Description: "Look up a token price",
	Parameters: []byte(`{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}`)}

// twoCalls are the parallel calls the model asks for.
var twoCalls = []llmtest.ToolCall{
	{ID: "c1", Name: "get_price", Arguments: `{"symbol":"SOL"}`},
	{ID: "c2", Name: "get_price", Arguments: `{"symbol":"ETH"}`},
}

// askTwice asks with the tool offered, gets two calls, gives their results
// back and gets the answer, through Generate or Stream; it returns both
// replies and the fragments streamed.
func askTwice(t *testing.T, pc providerCase, c *llm.Client, stream bool) (first, second llm.Reply, frags []string) {
	t.Helper()
	call := func(req llm.Request) llm.Reply {
		var reply llm.Reply
		var err error
		if stream {
			reply, err = c.Stream(context.Background(), req, collect(&frags))
		} else {
			reply, err = c.Generate(context.Background(), req)
		}
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		return reply
	}
	req := request(pc)
	req.Tools = []llm.Tool{priceTool}
	first = call(req)
	for _, tc := range first.ToolCalls {
		req.Steps = append(req.Steps, llm.ToolStep{Call: tc, Result: `{"price":` + map[string]string{
			`{"symbol":"SOL"}`: "142", `{"symbol":"ETH"}`: "3100"}[compact(tc.Arguments)] + `}`})
	}
	req.ToolsDone = true
	return first, call(req), frags
}

// compact removes the spaces a provider's re-encoding may add.
func compact(s string) string { return strings.ReplaceAll(s, " ", "") }

// TestToolRoundTrip: in each provider's wire format, the tool is offered,
// the model's two calls come back with the provider's ids, the results go
// back in call order, and the last call offers no tools (Anthropic: it
// defines them and forbids their use); the calls' JSON never reaches the
// stream as text.
func TestToolRoundTrip(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[stream], func(t *testing.T) {
			forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
				srv.Respond(llmtest.Reply{Text: "SOL is 142 and ETH 3100.", PromptTokens: 40, CompletionTokens: 9})
				srv.Enqueue(llmtest.Reply{ToolCalls: twoCalls, PromptTokens: 20, CompletionTokens: 5})
				first, second, frags := askTwice(t, pc, c, stream)
				checkCalls(t, first.ToolCalls)
				if second.Text != "SOL is 142 and ETH 3100." || len(second.ToolCalls) != 0 {
					t.Errorf("answer = %+v", second)
				}
				if stream && strings.Join(frags, "") != second.Text {
					t.Errorf("streamed %q, want only the answer's text", strings.Join(frags, ""))
				}
				reqs := srv.Requests()
				checkOffered(t, pc, reqs[0], reqs[1])
				if got := reqs[1].ToolResults(); len(got) != 2 || got[0].CallID != "c1" || got[0].Content != `{"price":142}` ||
					got[1].CallID != "c2" || got[1].Content != `{"price":3100}` {
					if pc.provider != llm.ProviderOllama || len(got) != 2 || got[0].Name != "get_price" {
						t.Errorf("results sent = %+v", got)
					}
				}
				if sent := reqs[1].ToolCallsSent(); len(sent) != 2 || sent[1].Name != "get_price" {
					t.Errorf("calls replayed = %+v", sent)
				}
			})
		})
	}
}

// checkCalls checks the two calls as the client returned them.
func checkCalls(t *testing.T, got []llm.ToolCall) {
	t.Helper()
	if len(got) != 2 {
		t.Fatalf("tool calls = %+v, want 2", got)
	}
	for i, want := range twoCalls {
		if got[i].Name != want.Name || compact(got[i].Arguments) != want.Arguments || got[i].ID == "" {
			t.Errorf("call %d = %+v, want %+v", i, got[i], want)
		}
	}
}

// checkOffered: the first request offers the tool with its schema, the
// last offers none (Anthropic: defined, with tool_choice none).
func checkOffered(t *testing.T, pc providerCase, first, last llmtest.Recorded) {
	t.Helper()
	if got := first.ToolNames(); !reflect.DeepEqual(got, []string{"get_price"}) {
		t.Errorf("first request offers %v", got)
	}
	if s := first.ToolSchema("get_price"); s["type"] != "object" || s["required"] == nil {
		t.Errorf("schema sent = %v", s)
	}
	if pc.provider == llm.ProviderAnthropic {
		if last.ToolChoice() != `{"type":"none"}` || len(last.ToolNames()) != 1 {
			t.Errorf("last anthropic call: tools %v, tool_choice %s", last.ToolNames(), last.ToolChoice())
		}
		return
	}
	if last.Has("tools") || last.ToolChoice() != "" {
		t.Errorf("last call offers tools: %v %s", last.ToolNames(), last.ToolChoice())
	}
}

// TestToolCallsWithText: text before the calls is the reply's text, and
// the usage is the call's.
func TestToolCallsWithText(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Text: "Let me check.", ToolCalls: twoCalls[:1], PromptTokens: 7, CompletionTokens: 3})
		req := request(pc)
		req.Tools = []llm.Tool{priceTool}
		var frags []string
		reply, err := c.Stream(context.Background(), req, collect(&frags))
		if err != nil {
			t.Fatal(err)
		}
		if reply.Text != "Let me check." || strings.Join(frags, "") != "Let me check." || len(reply.ToolCalls) != 1 {
			t.Errorf("reply = %+v, streamed %q", reply, frags)
		}
		if reply.Usage.TotalTokens != 10 {
			t.Errorf("usage = %+v", reply.Usage)
		}
	})
}
