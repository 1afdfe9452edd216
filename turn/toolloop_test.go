package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/turn"
)

// fakeBox is a turn.Tools whose every set is the tools of its fakeTools.
type fakeBox struct{ tools *fakeTools }

func (b fakeBox) Set(_ context.Context, spec tools.Spec) *tools.Set {
	return tools.NewSet(b.tools.Tools(spec), func(ctx context.Context, c tools.Call) tools.Result { return b.tools.Call(ctx, spec, c) })
}

func (fakeBox) Close() {}

// fakeTools is a tool source: get_price answers the symbol's
// price after a pause, big answers 20 KB; it records the peak of calls
// running at once.
type fakeTools struct {
	mu            sync.Mutex
	running, peak int
	calls         []tools.Call
}

func (f *fakeTools) Tools(tools.Spec) []tools.Tool {
	return []tools.Tool{
		{Name: "get_price", Description: "Look up a price", Parameters: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}}}`), Source: tools.SourceAction},
		{Name: "big", Description: "Answers a lot"},
	}
}

func (f *fakeTools) Call(_ context.Context, _ tools.Spec, c tools.Call) tools.Result {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.running++
	f.peak = max(f.peak, f.running)
	f.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	f.mu.Lock()
	f.running--
	f.mu.Unlock()
	if c.Name == "big" {
		return tools.Result{Text: strings.Repeat("é", 10<<10), OK: true}
	}
	var args struct{ Symbol string }
	_ = json.Unmarshal(c.Arguments, &args)
	return tools.Result{Text: fmt.Sprintf(`{"symbol": %q, "price": %d}`, args.Symbol, len(args.Symbol)), OK: true}
}

// toolCase is a service whose agent has the fake tools, answering through
// the real OpenAI client from a test server.
type toolCase struct {
	model turn.Model
	svc   *turn.Service
	st    *store.Store
	agent domain.Agent
	srv   *llmtest.Server
	tools *fakeTools
}

// newToolCase builds a toolCase; fields are extra character members,
// opts the store's options.
func newToolCase(t *testing.T, fields map[string]json.RawMessage, opts ...store.Option) *toolCase {
	srv := llmtest.NewOpenAI(t)
	model := llm.New(llm.Config{OpenAI: llm.ProviderConfig{APIKey: "k", BaseURL: srv.URL}})
	t.Cleanup(model.CloseIdleConnections)
	ft := &fakeTools{}
	box := fakeBox{ft}
	t.Cleanup(box.Close)
	svc, st, agent := newServiceWith(t, turn.Config{Model: model, Tools: box}, fields, opts)
	return &toolCase{model: model, svc: svc, st: st, agent: agent, srv: srv, tools: ft}
}

// input is a message from user u1 in their direct conversation.
func (c *toolCase) input() turn.Input {
	return turn.Input{AccountID: c.agent.AccountID, AgentID: c.agent.ID, Text: "prices?", UserID: "u1",
		Conv: domain.ConversationRef{UserID: "u1", Platform: domain.PlatformAPI}}
}

// calls are model tool calls of get_price for symbols.
func calls(symbols ...string) []llmtest.ToolCall {
	out := make([]llmtest.ToolCall, len(symbols))
	for i, s := range symbols {
		out[i] = llmtest.ToolCall{Name: "get_price", Arguments: fmt.Sprintf(`{"symbol":%q}`, s)}
	}
	return out
}

// TestToolLoopParallelCalls: one step of three calls runs them at once;
// their results go back in call order; the reply, its stored message and
// the analytics carry the calls; tokens are summed over both calls.
func TestToolLoopParallelCalls(t *testing.T) {
	c := newToolCase(t, nil)
	c.srv.Respond(llmtest.Reply{Text: "Done.", PromptTokens: 30, CompletionTokens: 3})
	c.srv.Enqueue(llmtest.Reply{ToolCalls: calls("SOL", "ETH", "BTCB"), PromptTokens: 10, CompletionTokens: 5})
	res, err := c.svc.Reply(context.Background(), c.input())
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Done." || res.Metadata.TokensUsed != 48 {
		t.Errorf("reply %q, %d tokens; want Done. and 48", res.Text, res.Metadata.TokensUsed)
	}
	got := res.Metadata.ToolCalls
	if len(got) != 3 || c.tools.peak != 3 {
		t.Fatalf("%d calls recorded, peak %d running; want 3 at once", len(got), c.tools.peak)
	}
	for i, sym := range []string{"SOL", "ETH", "BTCB"} {
		want := fmt.Sprintf(`{"symbol": %q, "price": %d}`, sym, len(sym))
		if !got[i].OK || got[i].Result != want || !strings.HasPrefix(got[i].ID, "call_") || string(got[i].Arguments) != fmt.Sprintf(`{"symbol":%q}`, sym) {
			t.Errorf("call %d = %+v", i, got[i])
		}
	}
	results := c.srv.Requests()[1].ToolResults()
	if len(results) != 3 || results[2].Content != `{"symbol": "BTCB", "price": 4}` {
		t.Errorf("results sent back = %+v", results)
	}
	if c.tools.calls[0].ID != got[0].ID && c.tools.calls[0].ID != got[1].ID && c.tools.calls[0].ID != got[2].ID {
		t.Errorf("the source got call id %q, not one the reply shows", c.tools.calls[0].ID)
	}
	history, err := c.st.Conversations().History(context.Background(), c.agent.AccountID, c.agent.ID, c.input().Conv, 2)
	if err != nil || len(history) != 2 || len(history[1].ToolCalls) != 3 || history[1].ToolCalls[1].Result != got[1].Result {
		t.Fatalf("history %+v, %v; want the reply with its calls", history, err)
	}
	checkToolAnalytics(t, c, 3, 0)
}

// checkToolAnalytics checks the agent's tool figures of the last hour.
func checkToolAnalytics(t *testing.T, c *toolCase, calls, failed int64) {
	t.Helper()
	now := time.Now()
	rep, err := c.st.Analytics().AgentAnalytics(context.Background(), c.agent.AccountID, c.agent.ID,
		domain.AnalyticsQuery{From: now.Add(-time.Hour), To: now, Interval: domain.IntervalHour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.ToolCalls != calls || rep.Totals.ToolErrors != failed {
		t.Errorf("analytics: %d calls, %d failed; want %d, %d", rep.Totals.ToolCalls, rep.Totals.ToolErrors, calls, failed)
	}
}

// TestToolLoopStepsAndLastCall: with maxToolSteps 2 and a model that
// always asks for a tool, two steps run, then one last call offers no
// tools and carries every result of the turn.
func TestToolLoopStepsAndLastCall(t *testing.T) {
	c := newToolCase(t, map[string]json.RawMessage{"modelSettings": json.RawMessage(`{"maxToolSteps":2}`)})
	c.srv.Respond(llmtest.Reply{Text: "Enough.", ToolCalls: calls("SOL")})
	res, err := c.svc.Reply(context.Background(), c.input())
	if err != nil {
		t.Fatal(err)
	}
	reqs := c.srv.Requests()
	if len(reqs) != 3 || len(res.Metadata.ToolCalls) != 2 {
		t.Fatalf("%d provider calls, %d tool calls; want 3 and 2", len(reqs), len(res.Metadata.ToolCalls))
	}
	last := reqs[2]
	if last.Has("tools") || len(last.ToolResults()) != 2 || len(reqs[1].ToolNames()) != 2 {
		t.Errorf("last call: tools %v, %d results; second call offers %v", last.ToolNames(), len(last.ToolResults()), reqs[1].ToolNames())
	}
	if want := "Enough.\n\nEnough.\n\nEnough."; res.Text != want {
		t.Errorf("reply %q, want the texts of the three calls joined: %q", res.Text, want)
	}
}

// TestToolLoopFailedCalls: an unknown tool and arguments that are not a
// JSON object are failed calls the model sees; neither is run, and the
// turn still answers.
func TestToolLoopFailedCalls(t *testing.T) {
	c := newToolCase(t, nil)
	c.srv.Respond(llmtest.Reply{Text: "Sorry."})
	c.srv.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
		{Name: "launch_rockets", Arguments: `{}`},
		{Name: "get_price", Arguments: `["SOL"]`},
		{Name: "get_price", Arguments: `{"symbol":`},
	}})
	res, err := c.svc.Reply(context.Background(), c.input())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Metadata.ToolCalls) != 3 {
		t.Fatalf("%d calls recorded, want 3", len(res.Metadata.ToolCalls))
	}
	want := []string{`{"error":"unknown tool"}`, `{"error":"arguments are not a JSON object"}`, `{"error":"arguments are not a JSON object"}`}
	for i, call := range res.Metadata.ToolCalls {
		if call.OK || call.Result != want[i] || string(call.Arguments) != "{}" {
			t.Errorf("call %d = %+v, want failed with %s", i, call, want[i])
		}
	}
	if len(c.tools.calls) != 0 {
		t.Errorf("the source ran %d calls, want none", len(c.tools.calls))
	}
	sent := c.srv.Requests()[1].ToolCallsSent()
	if len(sent) != 3 || sent[1].Arguments != "{}" {
		t.Errorf("calls replayed to the model = %+v, want bad arguments as {}", sent)
	}
	checkToolAnalytics(t, c, 3, 3)
}

// TestToolLoopNoSteps: maxToolSteps 0 offers no tools at all.
func TestToolLoopNoSteps(t *testing.T) {
	c := newToolCase(t, map[string]json.RawMessage{"modelSettings": json.RawMessage(`{"maxToolSteps":0}`)})
	c.srv.Respond(llmtest.Reply{Text: "Hi."})
	if _, err := c.svc.Reply(context.Background(), c.input()); err != nil {
		t.Fatal(err)
	}
	if reqs := c.srv.Requests(); len(reqs) != 1 || reqs[0].Has("tools") {
		t.Errorf("%d calls, tools %v; want one call without tools", len(reqs), reqs[0].ToolNames())
	}
}

// TestToolLoopBounds: at most 8 calls run at once; a big result is cut to
// 16 KB for the model and 2,000 characters for the reply.
func TestToolLoopBounds(t *testing.T) {
	c := newToolCase(t, nil)
	c.srv.Respond(llmtest.Reply{Text: "Ok."})
	many := append(calls("A", "B", "C", "D", "E", "F", "G", "H", "I", "J"), llmtest.ToolCall{Name: "big", Arguments: "{}"})
	c.srv.Enqueue(llmtest.Reply{ToolCalls: many})
	res, err := c.svc.Reply(context.Background(), c.input())
	if err != nil {
		t.Fatal(err)
	}
	if c.tools.peak != 8 {
		t.Errorf("peak %d calls at once, want 8", c.tools.peak)
	}
	big := res.Metadata.ToolCalls[10]
	sent := c.srv.Requests()[1].ToolResults()[10].Content
	if len([]rune(big.Result)) != 2000 || len(sent) != 16<<10 || !strings.HasPrefix(sent, big.Result) {
		t.Errorf("big result: %d characters shown, %d bytes sent", len([]rune(big.Result)), len(sent))
	}
}

// TestToolLoopStreamEvents: a streamed turn tells each call's start and
// end, both before the tokens of the answer that follows, and the text
// said before the calls is joined to the answer by a blank line, in the
// stream as in the reply.
func TestToolLoopStreamEvents(t *testing.T) {
	c := newToolCase(t, nil)
	c.srv.Respond(llmtest.Reply{Text: "SOL is 3."})
	c.srv.Enqueue(llmtest.Reply{Text: "Checking.", ToolCalls: calls("SOL")})
	tt, err := c.svc.Prepare(context.Background(), c.input())
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	var streamed strings.Builder
	res, err := c.svc.Stream(context.Background(), tt, func(e turn.Event) error {
		switch e.Kind {
		case turn.EventToolCall:
			order = append(order, "call:"+e.Call.Name)
		case turn.EventToolResult:
			order = append(order, fmt.Sprintf("result:%s:%v", e.Call.Name, e.Call.OK))
		default:
			streamed.WriteString(e.Token)
			if n := len(order); n == 0 || order[n-1] != "token" {
				order = append(order, "token")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "token call:get_price result:get_price:true token" {
		t.Errorf("events: %s", got)
	}
	if res.Text != "Checking.\n\nSOL is 3." || streamed.String() != res.Text {
		t.Errorf("reply %q, streamed %q", res.Text, streamed.String())
	}
}
