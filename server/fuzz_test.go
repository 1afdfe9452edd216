package server

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzAgentBody sends arbitrary bodies to Create Agent and Update Agent: the
// answer must always be a contract response, never a 500 or a panic.
// Seeds live in testdata/fuzz/FuzzAgentBody.
func FuzzAgentBody(f *testing.F) {
	f.Add([]byte(`{"name":"seed","bio":"one","plugins":["@elizaos/plugin-solana"]}`))
	f.Add([]byte(`{"name":"x","settings":{"secrets":{"K":"v"},"twitter":{"postFrequency":"4h"}}}`))
	h := newHarness(f)
	id := h.createAgent(map[string]any{"name": "target"})
	f.Fuzz(func(t *testing.T, body []byte) {
		h := h.with(t)
		for _, req := range []request{
			{method: "POST", path: "/v1/agents", key: h.writeKey, body: body},
			{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: body},
		} {
			res := h.do(req)
			switch res.Code {
			case http.StatusCreated, http.StatusOK:
			case http.StatusBadRequest:
				if code := res.ErrorCode(t); code != "INVALID_REQUEST" {
					t.Fatalf("400 with code %s", code)
				}
			default:
				if res.Code != http.StatusForbidden || !strings.Contains(string(res.Body), "INSUFFICIENT_QUOTA") {
					t.Fatalf("%s %s answered %d: %s\nbody: %q", req.method, req.path, res.Code, res.Body, body)
				}
			}
		}
	})
}
