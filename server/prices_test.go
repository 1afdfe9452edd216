package server

import (
	"net/http"
	"testing"

	"github.com/agentd/agentd/price"
)

// TestModelPricesAnswersTheTableInForce: GET /models/prices lists the
// built-in prices with the operator's file over them, each with its
// source, to a read key, all at once.
func TestModelPricesAnswersTheTableInForce(t *testing.T) {
	file := map[string]price.Price{"ollama/llama3.2": {Input: 0.5, Output: 1.5}, "openai/gpt-5.6-terra": {Input: 9, Output: 11}}
	h := newHarness(t, func(c *harnessConfig) { c.Prices = price.Builtin().With(file) })
	res := h.get("/v1/models/prices")
	if res.Code != http.StatusOK {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	got := map[string]map[string]any{}
	for _, it := range res.Data(t)["items"].([]any) {
		it := it.(map[string]any)
		got[it["provider"].(string)+"/"+it["model"].(string)] = it
	}
	for key, want := range map[string][3]any{
		"ollama/llama3.2":            {0.5, 1.5, "file"},
		"openai/gpt-5.6-terra":       {9.0, 11.0, "file"},
		"anthropic/claude-haiku-4-5": {1.0, 5.0, "builtin"},
		"groq/openai/gpt-oss-20b":    {0.075, 0.3, "builtin"},
	} {
		it := got[key]
		if it == nil || it["input"] != want[0] || it["output"] != want[1] || it["source"] != want[2] {
			t.Errorf("%s = %v, want input, output, source %v", key, it, want)
		}
	}
	if len(got) != len(h.cfg.Prices.Entries()) {
		t.Errorf("%d prices, want %d", len(got), len(h.cfg.Prices.Entries()))
	}
}

// TestModelPriceIsBounded: an agent's modelSettings.price takes numbers
// from 0 to 10,000, both members, and names the member that is not.
func TestModelPriceIsBounded(t *testing.T) {
	h := newHarness(t)
	post := func(p any) request {
		return request{method: "POST", path: "/v1/agents", key: h.writeKey,
			body: map[string]any{"name": "a", "modelSettings": map[string]any{"price": p}}}
	}
	for _, tc := range []errorCase{
		{name: "negative", req: post(map[string]any{"input": -1, "output": 1}), status: 400, code: "INVALID_REQUEST", field: "modelSettings.price.input"},
		{name: "too high", req: post(map[string]any{"input": 1, "output": 10001}), status: 400, code: "INVALID_REQUEST", field: "modelSettings.price.output"},
		{name: "missing output", req: post(map[string]any{"input": 1}), status: 400, code: "INVALID_REQUEST", field: "modelSettings.price.output"},
	} {
		t.Run(tc.name, func(t *testing.T) { h.checkError(t, tc) })
	}
	if res := h.do(post(map[string]any{"input": 0, "output": 10000})); res.Code != http.StatusCreated {
		t.Fatalf("bounds refused: %d %s", res.Code, res.Body)
	}
}
