package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/store/storetest"
)

// nested returns a member value nesting depth arrays.
func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// manyMembers returns a create body with n members the contract does not
// describe.
func manyMembers(n int) map[string]any {
	body := map[string]any{"name": "wide"}
	for i := 0; i < n; i++ {
		body[fmt.Sprintf("x%03d", i)] = i
	}
	return body
}

func TestBodyRulesRefuse(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) { testBodyRulesRefuse(t, newHarnessAt(t, dsn, nil, nil)) })
}

func testBodyRulesRefuse(t *testing.T, h *harness) {
	id := h.createAgent(map[string]any{"name": "target"})
	post := func(path string, body any) request {
		return request{method: "POST", path: path, key: h.writeKey, body: body}
	}
	cases := []errorCase{
		{name: "data after the JSON value", req: post("/v1/agents", `{"name":"a"} x`),
			status: 400, code: "INVALID_REQUEST", field: "body"},
		{name: "a second JSON value", req: post("/v1/agents", `{"name":"a"} {}`),
			status: 400, code: "INVALID_REQUEST", field: "body"},
		{name: "NUL in name", req: post("/v1/agents", `{"name":"a\u0000b"}`),
			status: 400, code: "INVALID_REQUEST", field: "name", reason: "U+0000"},
		{name: "NUL deep in an unknown member", req: post("/v1/agents", `{"name":"a","extra":{"list":["ok","b\u0000"]}}`),
			status: 400, code: "INVALID_REQUEST", field: "extra.list[1]"},
		{name: "NUL in a member name", req: post("/v1/agents", `{"name":"a","settings":{"k\u0000":1}}`),
			status: 400, code: "INVALID_REQUEST", field: "settings"},
		{name: "NUL in model on PATCH", req: request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: `{"model":"gpt\u00004"}`},
			status: 400, code: "INVALID_REQUEST", field: "model"},
		{name: "NUL in text", req: post("/v1/agents/"+id+"/messages", `{"text":"hi\u0000there"}`),
			status: 400, code: "INVALID_MESSAGE", field: "text"},
		{name: "NUL in userId", req: post("/v1/agents/"+id+"/messages/stream", `{"text":"hi","userId":"u\u0000"}`),
			status: 400, code: "INVALID_REQUEST", field: "userId"},
		{name: "nesting 33 deep", req: post("/v1/agents", `{"name":"a","deep":`+nested(33)+`}`),
			status: 400, code: "INVALID_REQUEST", reason: "deeper than 32"},
		{name: "65 unknown members", req: post("/v1/agents", manyMembers(65)),
			status: 400, code: "INVALID_REQUEST", field: "x064", reason: "at most 64"},
		{name: "a name of 101 characters after trimming", req: post("/v1/agents", map[string]any{"name": "  " + strings.Repeat("n", 101) + "  "}),
			status: 400, code: "INVALID_REQUEST", field: "name"},
		{name: "a wrong type inside a plugin object", req: post("/v1/agents", map[string]any{"name": "a", "plugins": []any{map[string]any{"name": "@elizaos/plugin-solana", "enabled": "yes"}}}),
			status: 400, code: "INVALID_REQUEST", field: "plugins[0].enabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { h.with(t).checkError(t, tc) })
	}
	if n := h.openai.Count(); n != 0 {
		t.Errorf("refused messages reached the provider %d times", n)
	}
}

func TestBodyRulesAccept(t *testing.T) {
	h := newHarness(t)
	padded := "  " + strings.Repeat("n", 100) + "  "
	id := h.createAgent(map[string]any{"name": padded, "deep": json.RawMessage(nested(32))})
	got := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}).Data(t)
	if got["name"] != strings.Repeat("n", 100) {
		t.Errorf("name stored as %q, want it trimmed", got["name"])
	}
	if res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: manyMembers(64)}); res.Code != 201 {
		t.Errorf("64 unknown members: %d %s", res.Code, res.Body)
	}
	if res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: "{\"name\":\"spaced\"}\n \t"}); res.Code != 201 {
		t.Errorf("trailing white space: %d %s", res.Code, res.Body)
	}
}

// The contract is the one source of the agent's member lists: the members
// Get Agent fills in, those a body may not set, and those the prompt reads.
func TestAgentMembersComeFromTheSpec(t *testing.T) {
	spec, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	m, err := agentMembersOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(m.readOnly); got != "[apiEndpoint createdAt id metrics statusReason updatedAt]" {
		t.Errorf("read-only members = %s", got)
	}
	want := map[string]string{"bio": "[]", "personality": "{}", "knowledge": "[]", "goals": "[]",
		"clients": "[]", "settings": "{}", "plugins": "[]", "deleteProtection": "false"}
	if len(m.empty) != len(want) {
		t.Errorf("empty members = %v", m.empty)
	}
	for k, v := range want {
		if string(m.empty[k]) != v {
			t.Errorf("empty %s = %s, want %s", k, m.empty[k], v)
		}
	}
	ch := reflect.TypeOf(llm.Character{})
	for i := 0; i < ch.NumField(); i++ {
		name, _, _ := strings.Cut(ch.Field(i).Tag.Get("json"), ",")
		if !m.known[name] {
			t.Errorf("llm.Character reads %q, which the Agent schema does not describe", name)
		}
	}
}
