package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// fuzzBackends are a harness on SQLite and one on PostgreSQL: every fuzz
// input goes to both, since they can disagree (PostgreSQL refuses U+0000).
func fuzzBackends(f *testing.F) []*harness {
	return []*harness{newHarness(f), newHarnessPostgres(f)}
}

// FuzzAgentBody sends arbitrary bodies to Create Agent and Update Agent on
// SQLite and PostgreSQL: the answer must always be a contract response,
// never a 500 or a panic. Seeds live in testdata/fuzz/FuzzAgentBody.
func FuzzAgentBody(f *testing.F) {
	f.Add([]byte(`{"name":"seed","bio":"one","plugins":["@elizaos/plugin-solana"]}`))
	f.Add([]byte(`{"name":"x","settings":{"secrets":{"K":"v"},"twitter":{"postFrequency":"4h"}}}`))
	f.Add([]byte(`{"name":"a\u0000b","model":"gpt\u00004"}`))
	hs := fuzzBackends(f)
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.createAgent(map[string]any{"name": "target"})
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for i, h := range hs {
			fuzzAgentBody(h.with(t), ids[i], body)
		}
	})
}

func fuzzAgentBody(h *harness, id string, body []byte) {
	t := h.t
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
}

// FuzzMessageBody sends arbitrary bodies to Send Message on an inactive
// agent, on SQLite and PostgreSQL: each is refused as invalid (400) or as
// unavailable (503) once valid, never a 500. Seeds live in
// testdata/fuzz/FuzzMessageBody.
func FuzzMessageBody(f *testing.F) {
	f.Add([]byte(`{"text":"hello","userId":"u1","roomId":"r1","context":{"platform":"discord"}}`))
	f.Add([]byte(`{"text":"   ","stream":true}`))
	f.Add([]byte(`{"text":"hi\u0000there"}`))
	hs := fuzzBackends(f)
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.createAgent(map[string]any{"name": "asleep"})
		h.do(request{method: "PATCH", path: "/v1/agents/" + ids[i], key: h.writeKey, body: map[string]any{"status": "inactive"}})
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for i, h := range hs {
			h := h.with(t)
			res := h.do(request{method: "POST", path: "/v1/agents/" + ids[i] + "/messages", key: h.writeKey, body: body})
			switch code := res.ErrorCode(t); {
			case res.Code == http.StatusBadRequest && (code == "INVALID_MESSAGE" || code == "INVALID_REQUEST"):
			case res.Code == http.StatusServiceUnavailable && code == "AGENT_UNAVAILABLE":
			default:
				t.Fatalf("answered %d %s: %s\nbody: %q", res.Code, code, res.Body, body)
			}
		}
	})
}

// FuzzPathAndQuery sends arbitrary path ids and query values (invalid
// UTF-8, NUL, separators, any length) to the agent, conversation and
// webhook paths on SQLite and PostgreSQL: every answer is a contract
// response, the same status on both, never a 500. Seeds live in
// testdata/fuzz/FuzzPathAndQuery.
func FuzzPathAndQuery(f *testing.F) {
	f.Add("agent_\xff", "\xc0\xaf")
	f.Add("agent_missing", "u1")
	hs := fuzzBackends(f)
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.createAgent(map[string]any{"name": "target"})
	}
	f.Fuzz(func(t *testing.T, id, value string) {
		var statuses []int
		for i, h := range hs {
			h := h.with(t)
			esc, q := url.PathEscape(id), url.QueryEscape(value)
			for _, path := range []string{
				"/v1/agents/" + esc,
				"/v1/agents/" + ids[i] + "/conversations/" + esc,
				"/v1/agents/" + ids[i] + "/conversations?userId=" + q + "&roomId=" + q,
				"/v1/webhooks/" + esc,
			} {
				res := h.do(request{method: "GET", path: path, key: h.readKey})
				if res.Code >= 500 {
					t.Fatalf("GET %s answered %d: %s", path, res.Code, res.Body)
				}
				statuses = append(statuses, res.Code)
			}
		}
		if half := len(statuses) / 2; !slices.Equal(statuses[:half], statuses[half:]) {
			t.Fatalf("SQLite answered %v, PostgreSQL %v for %q, %q", statuses[:half], statuses[half:], id, value)
		}
	})
}
