package server

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/gen"
)

// TestOddBytesInPathsAndQueries: ids and filters that are not valid UTF-8
// or hold control characters are refused at the edge the same way on both
// databases (PostgreSQL used to answer 500 where SQLite found nothing).
func TestOddBytesInPathsAndQueries(t *testing.T) {
	for name, h := range map[string]*harness{"sqlite": newHarness(t), "postgres": newHarnessPostgres(t)} {
		t.Run(name, func(t *testing.T) {
			id := h.createAgent(map[string]any{"name": "a"})
			wh := h.webhookWithDelivery("http://127.0.0.1:1/hook")
			for _, c := range []struct {
				method, path string
				status       int
				code         string
			}{
				{"GET", "/v1/agents/agent_%FF", 404, "AGENT_NOT_FOUND"},
				{"GET", "/v1/agents/agent_%00", 404, "AGENT_NOT_FOUND"},
				{"PATCH", "/v1/agents/agent_%C3%28", 404, "AGENT_NOT_FOUND"},
				{"DELETE", "/v1/agents/%FF", 404, "AGENT_NOT_FOUND"},
				{"POST", "/v1/agents/%FF/messages", 404, "AGENT_NOT_FOUND"},
				{"GET", "/v1/agents/" + id + "/conversations/conv_%FF", 404, "CONVERSATION_NOT_FOUND"},
				{"GET", "/v1/webhooks/wh_%FF", 404, "WEBHOOK_NOT_FOUND"},
				{"POST", "/v1/webhooks/" + wh[0] + "/deliveries/whd_%FF/retry", 404, "DELIVERY_NOT_FOUND"},
				{"POST", "/v1/webhooks/wh_%FF/deliveries/whd_%FF/retry", 404, "WEBHOOK_NOT_FOUND"},
				{"DELETE", "/v1/agents/" + id + "/memories/mem_%FF", 404, "MEMORY_NOT_FOUND"},
				{"DELETE", "/v1/agents/" + id + "/memories/mem_%00", 404, "MEMORY_NOT_FOUND"},
				{"DELETE", "/v1/agents/" + id + "/knowledge/kn_%FF", 404, "KNOWLEDGE_NOT_FOUND"},
				{"DELETE", "/v1/agents/" + id + "/knowledge/kn_%00", 404, "KNOWLEDGE_NOT_FOUND"},
				{"POST", "/v1/agents/" + id + "/messages/msg_%FF/cancel", 404, "MESSAGE_NOT_FOUND"},
				{"POST", "/v1/agents/" + id + "/messages/msg_%00/cancel", 404, "MESSAGE_NOT_FOUND"},
				{"GET", "/v1/agents/" + id + "/messages/msg_%FF/stream", 404, "MESSAGE_NOT_FOUND"},
				{"DELETE", "/v1/agents/agent_%FF/memories/mem_%FF", 404, "AGENT_NOT_FOUND"},
				{"GET", "/v1/agents/" + id + "/conversations?userId=%FF", 400, "INVALID_REQUEST"},
				{"GET", "/v1/agents/" + id + "/conversations?roomId=%C0%AF", 400, "INVALID_REQUEST"},
			} {
				var body any
				if c.method == "POST" || c.method == "PATCH" {
					body = map[string]any{"text": "hi"}
				}
				h.with(t).checkError(t, errorCase{name: c.path, req: request{method: c.method, path: c.path, key: h.writeKey, body: body},
					status: c.status, code: c.code})
			}
		})
	}
}

// TestQueryParametersAreNamed: a parameter given twice, or one the binder
// cannot read, is reported by its own name, not as a body error; analytics
// ends that leave the years a timestamp can show are refused.
func TestQueryParametersAreNamed(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "a"})
	for _, c := range []struct{ path, field string }{
		{"/v1/agents?page=1&page=2", "page"},
		{"/v1/agents/" + id + "/analytics?from=2016-12-31T23:59:60Z&to=2017-01-01T10:00:00Z", "from"},
		{"/v1/agents/" + id + "/analytics?from=9999-12-31T20:00:00Z&to=9999-12-31T23:59:59-23:59", "to"},
		{"/v1/agents/" + id + "/analytics?from=0000-01-01T00:00:00%2B23:59&to=0000-01-02T00:00:00Z", "from"},
	} {
		h.checkError(t, errorCase{name: c.path, req: request{method: "GET", path: c.path, key: h.readKey},
			status: 400, code: "INVALID_REQUEST", field: c.field})
	}
}

// TestWebhookURLsWithInternalLiteralsAreRefused: unless private networks
// are allowed, a literal internal address is refused when given, naming
// url, on create and on update.
func TestWebhookURLsWithInternalLiteralsAreRefused(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.AllowPrivateNetworks = false })
	for _, url := range []string{"http://127.0.0.1/h", "http://[::1]/h", "http://169.254.169.254/latest", "http://10.0.0.1/h",
		"http://100.100.100.200/", "http://[64:ff9b::a9fe:a9fe]/", "http://localhost:8080/h"} {
		h.checkError(t, errorCase{name: url, req: request{method: "POST", path: "/v1/webhooks", key: h.writeKey,
			body: map[string]any{"url": url, "events": []string{"*"}}}, status: 400, code: "INVALID_REQUEST", field: "url"})
	}
	res := h.do(request{method: "POST", path: "/v1/webhooks", key: h.writeKey,
		body: map[string]any{"url": "https://hooks.example.com/h", "events": []string{"*"}}})
	if res.Code != 201 {
		t.Fatalf("public webhook: %d %s", res.Code, res.Body)
	}
	whID := res.Data(t)["id"].(string)
	h.checkError(t, errorCase{name: "update", req: request{method: "PATCH", path: "/v1/webhooks/" + whID, key: h.writeKey,
		body: map[string]any{"url": "http://192.168.1.1/h"}}, status: 400, code: "INVALID_REQUEST", field: "url"})
}

// TestFreeTextMembersAreBounded: the free-text members of a character have
// bounds like bio's, so one agent cannot turn every message into a huge
// provider call.
func TestFreeTextMembersAreBounded(t *testing.T) {
	h := newHarness(t)
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct {
		member string
		value  any
		field  string
	}{
		{"system", long(20001), "system"},
		{"lore", []string{long(2001)}, "lore[0]"},
		{"topics", make([]string, 201), "topics"},
		{"templates", map[string]string{"t": long(10001)}, "templates.t"},
	} {
		h.checkError(t, errorCase{name: c.member, req: request{method: "POST", path: "/v1/agents", key: h.writeKey,
			body: map[string]any{"name": "big", c.member: c.value}}, status: 400, code: "INVALID_REQUEST", field: c.field})
	}
}

// TestEveryPathParameterHasItsNotFound: the gate answers a bad id with the
// not-found of its parameter, so a parameter new to the contract must get
// one too, not a generic 404.
func TestEveryPathParameterHasItsNotFound(t *testing.T) {
	spec, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	for path := range spec.Paths.Map() {
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			if pathNotFound[m[1]] == nil {
				t.Errorf("%s: path parameter %s has no not-found answer", path, m[1])
			}
		}
	}
}
