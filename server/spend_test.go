package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm/llmtest"
)

// TestSpendAndAccountAgreeWithAnalytics: the agent's spend and the
// account's month sum the costs analytics show, against the budgets set
// (null when unset), with the UTC day's and month's ends.
func TestSpendAndAccountAgreeWithAnalytics(t *testing.T) {
	h := newHarness(t)
	budget := int64(250_000_000) // USD 250
	if _, err := h.store.Accounts().UpdateAccount(t.Context(), h.account.Name, domain.AccountChanges{MonthlyBudgetMicros: &budget}); err != nil {
		t.Fatal(err)
	}
	capped := h.createAgent(map[string]any{"name": "Capped", "modelSettings": map[string]any{"price": agentPrice},
		"settings": map[string]any{"budget": map[string]any{"daily": 5, "perUserDaily": 0.5}}})
	free := h.createAgent(map[string]any{"name": "Free", "modelSettings": map[string]any{"price": agentPrice}})
	h.openai.Respond(llmtest.Reply{Text: "Hi.", PromptTokens: 1000, CompletionTokens: 500}) // USD 0.006
	for _, id := range []string{capped, capped, free} {
		if res := h.send(id, map[string]any{"text": "hi", "userId": "ann"}); res.Code != http.StatusOK {
			t.Fatalf("send: %d %s", res.Code, res.Body)
		}
	}

	now := time.Now().UTC()
	dayEnd := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
	monthEnd := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
	spend := h.get("/v1/agents/" + capped + "/spend").Data(t)
	costs := h.get("/v1/agents/" + capped + "/analytics").Data(t)["totals"].(map[string]any)["costUsd"]
	day, month := spend["day"].(map[string]any), spend["month"].(map[string]any)
	if costs != 0.012 || day["spentUsd"] != costs || month["spentUsd"] != costs {
		t.Errorf("spend %v, analytics %v; want both 0.012", spend, costs)
	}
	if day["limitUsd"] != 5.0 || month["limitUsd"] != nil || spend["perUserDaily"].(map[string]any)["limitUsd"] != 0.5 {
		t.Errorf("limits: %v", spend)
	}
	if day["resetsAt"] != dayEnd || month["resetsAt"] != monthEnd {
		t.Errorf("resets %v and %v, want %s and %s", day["resetsAt"], month["resetsAt"], dayEnd, monthEnd)
	}

	acct := h.get("/v1/account").Data(t)
	b, l := acct["budget"].(map[string]any), acct["limits"].(map[string]any)
	if acct["id"] != h.account.ID || acct["name"] != "acme" || acct["tier"] != "enterprise" || l["tier"] != "enterprise" {
		t.Errorf("account %v", acct)
	}
	if b["monthly"] != 250.0 || b["spent"] != 0.018 || b["resetsAt"] != monthEnd {
		t.Errorf("account budget %v, want 250, spent 0.018", b)
	}
	if res := h.get("/v1/agents/agent_01jd3v8m4q2x7k9w5t6r0yzabc/spend"); res.Code != http.StatusNotFound {
		t.Errorf("unknown agent's spend: %d", res.Code)
	}
}

// TestBudgetIsBounded: settings.budget takes numbers above 0 up to
// 1,000,000 and no other member, and names the one it refuses.
func TestBudgetIsBounded(t *testing.T) {
	h := newHarness(t)
	post := func(b any) request {
		return request{method: "POST", path: "/v1/agents", key: h.writeKey,
			body: map[string]any{"name": "a", "settings": map[string]any{"budget": b}}}
	}
	for _, tc := range []errorCase{
		{name: "zero", req: post(map[string]any{"daily": 0}), status: 400, code: "INVALID_REQUEST", field: "settings.budget.daily"},
		{name: "too high", req: post(map[string]any{"monthly": 1000001}), status: 400, code: "INVALID_REQUEST", field: "settings.budget.monthly"},
		{name: "negative", req: post(map[string]any{"perUserDaily": -1}), status: 400, code: "INVALID_REQUEST", field: "settings.budget.perUserDaily"},
		{name: "unknown", req: post(map[string]any{"weekly": 3}), status: 400, code: "INVALID_REQUEST", field: "settings.budget.weekly"},
	} {
		t.Run(tc.name, func(t *testing.T) { h.checkError(t, tc) })
	}
	if res := h.do(post(map[string]any{"daily": 0.01, "monthly": 1000000, "perUserDaily": 1})); res.Code != http.StatusCreated {
		t.Fatalf("bounds refused: %d %s", res.Code, res.Body)
	}
}
