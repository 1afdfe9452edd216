package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/price"

	"github.com/agentd/agentd/internal/connecttest"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
)

// sendRequest is Send Message of body to the agent with the write key.
func (h *harness) sendRequest(agentID string, body map[string]any) request {
	return request{method: "POST", path: "/v1/agents/" + agentID + "/messages", key: h.writeKey, body: body}
}

// sixMillis is a reply of 1,000 input and 500 output tokens: USD 0.006 at
// agentPrice.
var sixMillis = llmtest.Reply{Text: "Noted.", PromptTokens: 1000, CompletionTokens: 500}

// newBudgetHarness boots a harness whose store's clock is clock, so days
// and months pass at the test's word.
func newBudgetHarness(t *testing.T, clock *connecttest.Clock) *harness {
	return newHarnessAt(t, storetest.SQLiteDSN(t), []store.Option{store.WithClock(clock.Now)}, nil)
}

// TestDailyBudgetReachedMidConversation: replies spend the agent's daily
// budget; the message after the one that reached it is refused on every
// way in (402 with the budget's details, OpenAI's insufficient_quota, a
// failed A2A task, an MCP error), makes no run, and the next UTC day the
// agent answers again.
func TestDailyBudgetReachedMidConversation(t *testing.T) {
	// Replies date from the real clock, so the store's starts today.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	clock := connecttest.NewClock(today.Add(time.Hour))
	h := newBudgetHarness(t, clock)
	id := h.createAgent(map[string]any{"name": "Thrifty", "modelSettings": map[string]any{"price": agentPrice},
		"settings": map[string]any{"budget": map[string]any{"daily": 0.01}}})
	h.openai.Respond(sixMillis)
	for range 2 { // 0.006, then 0.012: past the line, yet the run that crossed it finished
		if res := h.send(id, map[string]any{"text": "buy", "userId": "ann"}); res.Code != http.StatusOK {
			t.Fatalf("send within the budget: %d %s", res.Code, res.Body)
		}
	}
	calls := len(h.openai.Requests())

	h.checkError(t, errorCase{req: h.sendRequest(id, map[string]any{"text": "buy more", "userId": "ann"}),
		status: http.StatusPaymentRequired, code: "BUDGET_EXCEEDED", details: map[string]any{"scope": "agent", "period": "day",
			"limitUsd": 0.01, "spentUsd": 0.012, "resetsAt": today.AddDate(0, 0, 1).Format("2006-01-02T15:04:05.000Z")}})
	res := h.chat(map[string]any{"model": id, "messages": []any{map[string]any{"role": "user", "content": "buy"}}})
	if typ, code, _ := openAIError(t, res); res.Code != http.StatusPaymentRequired || typ != "insufficient_quota" || code != "budget_exceeded" {
		t.Errorf("chat completions: %d %s %s", res.Code, typ, code)
	}
	task := rpcResult(t, h.rpc(rpcCall{agentID: id, method: "SendMessage", params: a2aUserMessage("buy", "trip")}))["task"]
	if dig(task, "status.state") != "TASK_STATE_FAILED" || !strings.HasPrefix(dig(task, "status.message.parts.0.text").(string), "BUDGET_EXCEEDED") {
		t.Errorf("A2A task: %v", task)
	}
	text, failed := toolText(t, h.mcpSession(t, h.writeKey), "send_message", map[string]any{"agentId": id, "text": "buy"})
	if !failed || !strings.HasPrefix(text, "BUDGET_EXCEEDED") {
		t.Errorf("MCP send_message: %q, %v", text, failed)
	}
	if got := h.runsOf(id); got != "api completed,api completed" {
		t.Errorf("runs: %s; a refused request makes none", got)
	}
	if n := len(h.openai.Requests()); n != calls {
		t.Errorf("the provider was called %d more times", n-calls)
	}

	clock.Set(today.AddDate(0, 0, 1))
	if res := h.send(id, map[string]any{"text": "a new day", "userId": "ann"}); res.Code != http.StatusOK {
		t.Fatalf("the next UTC day: %d %s", res.Code, res.Body)
	}
}

// TestPerUserBudgetStopsOneUser: a user who spent their daily budget on
// the agent is refused, naming scope user; another user goes on.
func TestPerUserBudgetStopsOneUser(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "Shared", "modelSettings": map[string]any{"price": agentPrice},
		"settings": map[string]any{"budget": map[string]any{"perUserDaily": 0.005, "daily": 10}}})
	h.openai.Respond(sixMillis)
	if res := h.send(id, map[string]any{"text": "hi", "userId": "ann"}); res.Code != http.StatusOK {
		t.Fatalf("ann's first: %d %s", res.Code, res.Body)
	}
	h.checkError(t, errorCase{req: h.sendRequest(id, map[string]any{"text": "again", "userId": "ann"}),
		status: http.StatusPaymentRequired, code: "BUDGET_EXCEEDED",
		details: map[string]any{"scope": "user", "period": "day", "limitUsd": 0.005, "spentUsd": 0.006}})
	if res := h.send(id, map[string]any{"text": "hi", "userId": "bob"}); res.Code != http.StatusOK {
		t.Fatalf("bob: %d %s", res.Code, res.Body)
	}
}

// TestBudgetUnderConcurrencyOnTwoReplicas: 20 messages at once, half to
// each of two replicas over PostgreSQL, against a daily budget 84% spent:
// the runs that started finish past the line (the overshoot is what they
// cost, no more: the spend is the figure the runs made), the next message
// is refused, and budget.threshold and budget.exceeded go out once each.
func TestBudgetUnderConcurrencyOnTwoReplicas(t *testing.T) {
	a := newHarnessPostgres(t)
	replicas := []*harness{a, a.otherReplica(t)}
	hook := a.webhookWithDelivery("https://hooks.example.com/budget")[0]
	id := a.createAgent(map[string]any{"name": "Busy", "modelSettings": map[string]any{"price": agentPrice},
		"settings": map[string]any{"budget": map[string]any{"daily": 0.05}}})
	a.openai.Respond(sixMillis)
	for i := range 7 { // USD 0.042
		if res := a.send(id, map[string]any{"text": "warm", "userId": fmt.Sprint("w", i)}); res.Code != http.StatusOK {
			t.Fatalf("send: %d %s", res.Code, res.Body)
		}
	}
	a.openai.Respond(llmtest.Reply{Text: sixMillis.Text, PromptTokens: 1000, CompletionTokens: 500, Delay: 100 * time.Millisecond})
	statuses := make([]int, 20)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = replicas[i%2].send(id, map[string]any{"text": "now", "userId": fmt.Sprint("u", i)}).Code
		})
	}
	wg.Wait()
	answered := 0
	for _, code := range statuses {
		switch code {
		case http.StatusOK:
			answered++
		case http.StatusPaymentRequired, http.StatusTooManyRequests:
		default:
			t.Fatalf("statuses %v", statuses)
		}
	}
	spent := a.get("/v1/agents/" + id + "/spend").Data(t)["day"].(map[string]any)["spentUsd"].(float64)
	if want := price.USD(agentPrice.Cost(1000*(7+answered), 500*(7+answered))); spent != want || answered == 0 {
		t.Errorf("spent %v after %d answers at once, want %v", spent, answered, want)
	}
	res := replicas[1].send(id, map[string]any{"text": "more", "userId": "late"})
	if res.Code != http.StatusPaymentRequired {
		t.Errorf("after the burst: %d %s", res.Code, res.Body)
	}
	ds, _, err := a.store.Webhooks().ListDeliveries(t.Context(), a.account.ID, hook, domain.DeliveryQuery{Limit: 100})
	testutil.OK(t, err)
	alerts := map[domain.EventType]int{}
	for _, d := range ds {
		alerts[d.Type]++
	}
	if alerts[domain.EventBudgetThreshold] != 1 || alerts[domain.EventBudgetExceeded] != 1 {
		t.Errorf("alerts %v, want one budget.threshold and one budget.exceeded", alerts)
	}
}
