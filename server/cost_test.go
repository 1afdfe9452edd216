package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/price"
)

// agentPrice is the modelSettings.price the cost tests give their agents:
// USD 2 per million input tokens, 8 per million output tokens.
var agentPrice = price.Price{Input: 2, Output: 8}

// TestCostOfEachWireFormat: for each provider's wire format, a plain, a
// streamed and a three-call tool turn are priced at the agent's own price
// from the usage the provider reported (streamed: the usage that comes at
// the end), summed over the tool loop; the reply, the run, the history
// and the analytics (totals and series) all say the same.
func TestCostOfEachWireFormat(t *testing.T) {
	checkCosts(t, newHarness(t), "openai", "groq", "google", "anthropic", "ollama")
}

// TestCostOnPostgres: the same figures on PostgreSQL, whose columns and
// upserts are its own.
func TestCostOnPostgres(t *testing.T) {
	checkCosts(t, newHarnessPostgres(t), "openai", "anthropic")
}

// checkCosts runs TestCostOfEachWireFormat's turns for each provider on h.
func checkCosts(t *testing.T, h *harness, providers ...string) {
	handler := newPriceHandler(t)
	for _, provider := range providers {
		t.Run(provider, func(t *testing.T) {
			wire := h.providerFor(provider)
			id := h.createAgent(map[string]any{"name": "Priced " + provider, "modelProvider": provider,
				"modelSettings": map[string]any{"price": agentPrice}, "actions": []any{priceAction(handler.URL)}})
			want := map[string]float64{}
			check := func(turn string, meta map[string]any, in, out int) {
				t.Helper()
				cost := price.USD(agentPrice.Cost(in, out))
				if meta["inputTokens"] != float64(in) || meta["outputTokens"] != float64(out) || meta["costUsd"] != cost {
					t.Errorf("%s: metadata %v, want %d in, %d out, costUsd %v", turn, meta, in, out, cost)
				}
				want["inputTokens"] += float64(in)
				want["outputTokens"] += float64(out)
				want["costUsd"] = price.USD(agentPrice.Cost(int(want["inputTokens"]), int(want["outputTokens"])))
			}

			wire.Respond(llmtest.Reply{Text: "Plain.", PromptTokens: 1000, CompletionTokens: 500})
			res := h.send(id, map[string]any{"text": "plain", "userId": "u1"})
			if res.Code != http.StatusOK {
				t.Fatalf("plain: %d %s", res.Code, res.Body)
			}
			check("plain", res.Data(t)["metadata"].(map[string]any), 1000, 500)
			h.checkRunCost(t, id, res.Data(t)["runId"].(string), 1000, 500)

			wire.Respond(llmtest.Reply{Text: "Streamed reply.", PromptTokens: 700, CompletionTokens: 300})
			res = h.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/stream", key: h.writeKey,
				body: map[string]any{"text": "streamed", "userId": "u1"}})
			events := parseSSE(t, res.Body)
			done := events[len(events)-1]
			if done["type"] != "done" {
				t.Fatalf("streamed: last event %v", done)
			}
			check("streamed", done["metadata"].(map[string]any), 700, 300)
			newest := h.items(h.get("/v1/agents/" + id + "/runs"))[0] // parseSSE keeps start, and its runId, out
			h.checkRunCost(t, id, newest["id"].(string), 700, 300)
			if body := wire.Last(t).Body; wire == h.openai {
				// OpenAI's wire sends a stream's usage only when asked.
				opts, _ := body["stream_options"].(map[string]any)
				if opts["include_usage"] != true {
					t.Errorf("streamed request without stream_options.include_usage: %v", body)
				}
			}

			call := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "get_price", Arguments: `{"symbol":"SOL"}`}},
				PromptTokens: 100, CompletionTokens: 10}
			second := call
			second.PromptTokens, second.CompletionTokens = 200, 20
			wire.Respond(llmtest.Reply{Text: "SOL is at 142.", PromptTokens: 300, CompletionTokens: 30})
			wire.Enqueue(call, second)
			res = h.send(id, map[string]any{"text": "price of SOL, twice?", "userId": "u1"})
			if res.Code != http.StatusOK {
				t.Fatalf("tool turn: %d %s", res.Code, res.Body)
			}
			meta := res.Data(t)["metadata"].(map[string]any)
			if calls, _ := meta["toolCalls"].([]any); len(calls) != 2 {
				t.Fatalf("tool turn: %d tool calls, want 2: %v", len(calls), meta)
			}
			check("tool turn", meta, 600, 60)
			h.checkRunCost(t, id, res.Data(t)["runId"].(string), 600, 60)

			var history float64
			conv := h.items(h.get("/v1/agents/" + id + "/conversations"))[0]["id"].(string)
			for _, m := range h.items(h.get("/v1/agents/" + id + "/conversations/" + conv + "/messages")) {
				if meta, ok := m["metadata"].(map[string]any); ok {
					history += meta["costUsd"].(float64)
				}
			}
			report := h.get("/v1/agents/" + id + "/analytics").Data(t)
			totals := report["totals"].(map[string]any)
			var series float64
			for _, b := range report["series"].([]any) {
				series += b.(map[string]any)["costUsd"].(float64)
			}
			for k, v := range want {
				if totals[k] != v {
					t.Errorf("analytics totals.%s = %v, want %v", k, totals[k], v)
				}
			}
			if got := fmt.Sprintf("%.6f %.6f", history, series); got != fmt.Sprintf("%.6f %.6f", want["costUsd"], want["costUsd"]) {
				t.Errorf("history and series sum to %s, want %v each", got, want["costUsd"])
			}
		})
	}
}

// checkRunCost checks the tokens and cost Get Run answers for run runID.
func (h *harness) checkRunCost(t *testing.T, agentID, runID string, in, out int) {
	t.Helper()
	run := h.get("/v1/agents/" + agentID + "/runs/" + runID).Data(t)
	if cost := price.USD(agentPrice.Cost(in, out)); run["inputTokens"] != float64(in) || run["outputTokens"] != float64(out) || run["costUsd"] != cost {
		t.Errorf("run %s: %v in, %v out, costUsd %v; want %d, %d, %v", runID, run["inputTokens"], run["outputTokens"], run["costUsd"], in, out, cost)
	}
}

// TestCostFromThePriceTable: an agent without a price of its own pays the
// table's for its model, the operator's file included; a model no one
// priced costs 0, never absent.
func TestCostFromThePriceTable(t *testing.T) {
	file := map[string]price.Price{"ollama/llama3.2": {Input: 1, Output: 3}}
	h := newHarness(t, func(c *harnessConfig) { c.Turn.Prices = price.Builtin().With(file) })
	builtin, _ := price.Builtin().Lookup("openai", "gpt-5.6-terra")
	for _, tc := range []struct {
		agent map[string]any
		want  float64
	}{
		{map[string]any{"modelProvider": "openai", "model": "gpt-5.6-terra"}, price.USD(builtin.Cost(1000, 500))},
		{map[string]any{"modelProvider": "ollama", "model": "llama3.2"}, price.USD(file["ollama/llama3.2"].Cost(1000, 500))},
		{map[string]any{"modelProvider": "ollama", "model": "qwen3"}, 0},
	} {
		tc.agent["name"] = "Table"
		id := h.createAgent(tc.agent)
		h.providerFor(tc.agent["modelProvider"].(string)).Respond(llmtest.Reply{Text: "Hi.", PromptTokens: 1000, CompletionTokens: 500})
		res := h.send(id, map[string]any{"text": "hi"})
		if got := res.Data(t)["metadata"].(map[string]any)["costUsd"]; got != tc.want {
			t.Errorf("%v: costUsd %v, want %v", tc.agent, got, tc.want)
		}
	}
}
