package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store/storetest"
)

var (
	agentIDPattern   = regexp.MustCompile(`^agent_[0-9a-z]{26}$`)
	timestampPattern = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// errorCase is one request that must fail with a status, a code and, for
// field errors, the field it names.
type errorCase struct {
	name   string
	req    request
	status int
	code   string
	field  string
	reason string // a substring of details.reason
	// details are members details must have, with these values.
	details map[string]any
}

func (h *harness) checkError(t *testing.T, tc errorCase) {
	t.Helper()
	res := h.do(tc.req)
	if res.Code != tc.status {
		t.Fatalf("status = %d, want %d; body %s", res.Code, tc.status, res.Body)
	}
	if got := res.ErrorCode(t); got != tc.code {
		t.Fatalf("code = %s, want %s; body %s", got, tc.code, res.Body)
	}
	d := res.Details(t)
	if tc.field != "" && d["field"] != tc.field {
		t.Fatalf("details.field = %v, want %s; body %s", d["field"], tc.field, res.Body)
	}
	if tc.reason != "" && !strings.Contains(d["reason"].(string), tc.reason) {
		t.Fatalf("details.reason = %v, want it to contain %q", d["reason"], tc.reason)
	}
	for name, want := range tc.details {
		if d[name] != want {
			t.Fatalf("details.%s = %v, want %v; body %s", name, d[name], want, res.Body)
		}
	}
	if strings.Contains(string(res.Body), "Error at") || strings.Contains(string(res.Body), "Schema:") {
		t.Fatalf("validator internals leaked: %s", res.Body)
	}
}

func TestCreateAgentSucceeds(t *testing.T) {
	h := newHarness(t)
	res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: map[string]any{"name": "  Trading Assistant  "}})
	if res.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", res.Code, res.Body)
	}
	d := res.Data(t)
	id, _ := d["id"].(string)
	if !agentIDPattern.MatchString(id) {
		t.Errorf("id = %q", id)
	}
	if d["name"] != "Trading Assistant" || d["status"] != "active" {
		t.Errorf("name/status = %v/%v", d["name"], d["status"])
	}
	if !timestampPattern.MatchString(d["createdAt"].(string)) {
		t.Errorf("createdAt = %v", d["createdAt"])
	}
	if d["apiEndpoint"] != "http://localhost:8080/v1/agents/"+id {
		t.Errorf("apiEndpoint = %v", d["apiEndpoint"])
	}
	if res.Header.Get("X-Request-ID") == "" {
		t.Error("no X-Request-ID")
	}
	got := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}).Data(t)
	if got["modelProvider"] != "openai" || got["model"] != llm.DefaultModels["openai"] {
		t.Errorf("defaults: %v %v", got["modelProvider"], got["model"])
	}
}

func TestCreateAgentErrors(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("x", 2001)
	many := make([]string, 201)
	for i := range many {
		many[i] = "fact"
	}
	post := func(body any) request {
		return request{method: "POST", path: "/v1/agents", key: h.writeKey, body: body}
	}
	cases := []errorCase{
		{name: "missing name", req: post(map[string]any{"bio": []string{"x"}}), status: 400, code: "INVALID_REQUEST", field: "name"},
		{name: "blank name", req: post(map[string]any{"name": "   "}), status: 400, code: "INVALID_REQUEST", field: "name"},
		{name: "empty name", req: post(map[string]any{"name": ""}), status: 400, code: "INVALID_REQUEST", field: "name"},
		{name: "name too long", req: post(map[string]any{"name": strings.Repeat("n", 101)}), status: 400, code: "INVALID_REQUEST", field: "name"},
		{name: "name wrong type", req: post(map[string]any{"name": 5}), status: 400, code: "INVALID_REQUEST", field: "name"},
		{name: "name null", req: post(map[string]any{"name": nil}), status: 400, code: "INVALID_REQUEST", field: "name"},
		{name: "bio item too long", req: post(map[string]any{"name": "a", "bio": []string{"ok", long}}), status: 400, code: "INVALID_REQUEST", field: "bio[1]"},
		{name: "bio too many", req: post(map[string]any{"name": "a", "bio": many}), status: 400, code: "INVALID_REQUEST", field: "bio"},
		{name: "bio wrong type", req: post(map[string]any{"name": "a", "bio": 7}), status: 400, code: "INVALID_REQUEST", field: "bio"},
		{name: "knowledge empty item", req: post(map[string]any{"name": "a", "knowledge": []string{""}}), status: 400, code: "INVALID_REQUEST", field: "knowledge[0]"},
		{name: "goals too many", req: post(map[string]any{"name": "a", "goals": many}), status: 400, code: "INVALID_REQUEST", field: "goals"},
		{name: "trait too long", req: post(map[string]any{"name": "a", "personality": map[string]any{"traits": []string{long}}}), status: 400, code: "INVALID_REQUEST", field: "personality.traits[0]"},
		{name: "tone wrong type", req: post(map[string]any{"name": "a", "personality": map[string]any{"tone": 1}}), status: 400, code: "INVALID_REQUEST", field: "personality.tone"},
		{name: "unknown client", req: post(map[string]any{"name": "a", "clients": []string{"myspace"}}), status: 400, code: "INVALID_REQUEST", field: "clients[0]", reason: "discord"},
		{name: "bad provider", req: post(map[string]any{"name": "a", "modelProvider": "akash"}), status: 400, code: "INVALID_REQUEST", field: "modelProvider", reason: "openai, anthropic, groq, google, ollama"},
		{name: "empty model", req: post(map[string]any{"name": "a", "model": ""}), status: 400, code: "INVALID_REQUEST", field: "model"},
		{name: "model too long", req: post(map[string]any{"name": "a", "model": strings.Repeat("m", 201)}), status: 400, code: "INVALID_REQUEST", field: "model"},
		{name: "bad plugin name", req: post(map[string]any{"name": "a", "plugins": []any{map[string]any{"name": "solana"}}}), status: 400, code: "INVALID_REQUEST", field: "plugins[0].name"},
		{name: "bad plugin string", req: post(map[string]any{"name": "a", "plugins": []any{"@Eliza/Plugin-X"}}), status: 400, code: "INVALID_REQUEST", field: "plugins[0]"},
		{name: "bad postFrequency", req: post(map[string]any{"name": "a", "settings": map[string]any{"twitter": map[string]any{"postFrequency": "4 hours"}}}), status: 400, code: "INVALID_REQUEST", field: "settings.twitter.postFrequency"},
		{name: "zero postFrequency", req: post(map[string]any{"name": "a", "settings": map[string]any{"twitter": map[string]any{"postFrequency": "0h"}}}), status: 400, code: "INVALID_REQUEST", field: "settings.twitter.postFrequency"},
		{name: "discord flag wrong type", req: post(map[string]any{"name": "a", "settings": map[string]any{"discord": map[string]any{"respondToDMs": "yes"}}}), status: 400, code: "INVALID_REQUEST", field: "settings.discord.respondToDMs"},
		{name: "userRateLimit zero", req: post(map[string]any{"name": "a", "settings": map[string]any{"telegram": map[string]any{"userRateLimit": 0}}}), status: 400, code: "INVALID_REQUEST", field: "settings.telegram.userRateLimit"},
		{name: "userRateLimit too high", req: post(map[string]any{"name": "a", "settings": map[string]any{"discord": map[string]any{"userRateLimit": 601}}}), status: 400, code: "INVALID_REQUEST", field: "settings.discord.userRateLimit"},
		{name: "userRateLimit fraction", req: post(map[string]any{"name": "a", "settings": map[string]any{"twitter": map[string]any{"userRateLimit": 1.5}}}), status: 400, code: "INVALID_REQUEST", field: "settings.twitter.userRateLimit"},
		{name: "userRateLimit wrong type", req: post(map[string]any{"name": "a", "settings": map[string]any{"twitter": map[string]any{"userRateLimit": "10"}}}), status: 400, code: "INVALID_REQUEST", field: "settings.twitter.userRateLimit"},
		{name: "discord adminUsers over 50", req: post(map[string]any{"name": "a", "settings": map[string]any{"discord": map[string]any{"adminUsers": strings.Split(strings.Repeat("ada,", 50)+"bob", ",")}}}), status: 400, code: "INVALID_REQUEST", field: "settings.discord.adminUsers"},
		{name: "allowedUsers not a list", req: post(map[string]any{"name": "a", "settings": map[string]any{"telegram": map[string]any{"allowedUsers": "@ada"}}}), status: 400, code: "INVALID_REQUEST", field: "settings.telegram.allowedUsers"},
		{name: "allowedUsers item wrong type", req: post(map[string]any{"name": "a", "settings": map[string]any{"discord": map[string]any{"allowedUsers": []any{"ada", 7}}}}), status: 400, code: "INVALID_REQUEST", field: "settings.discord.allowedUsers[1]"},
		{name: "other settings not object", req: post(map[string]any{"name": "a", "settings": map[string]any{"voice": "x"}}), status: 400, code: "INVALID_REQUEST", field: "settings.voice"},
		{name: "modelSettings wrong type", req: post(map[string]any{"name": "a", "modelSettings": map[string]any{"temperature": "hot"}}), status: 400, code: "INVALID_REQUEST", field: "modelSettings.temperature"},
		{name: "memory wrong type", req: post(map[string]any{"name": "a", "memory": map[string]any{"enabled": "no"}}), status: 400, code: "INVALID_REQUEST", field: "memory.enabled"},
		{name: "action missing name", req: post(map[string]any{"name": "a", "actions": []any{map[string]any{"description": "d", "examples": []string{}}}}), status: 400, code: "INVALID_REQUEST", field: "actions[0].name"},
		{name: "deleteProtection wrong type", req: post(map[string]any{"name": "a", "deleteProtection": "yes"}), status: 400, code: "INVALID_REQUEST", field: "deleteProtection"},
		{name: "unknown member null", req: post(map[string]any{"name": "a", "extra": nil}), status: 400, code: "INVALID_REQUEST", field: "extra"},
		{name: "malformed JSON", req: post(`{"name": "a",`), status: 400, code: "INVALID_REQUEST", field: "body"},
		{name: "array body", req: post(`[]`), status: 400, code: "INVALID_REQUEST", field: "body"},
		{name: "empty body", req: post(``), status: 400, code: "INVALID_REQUEST", field: "body"},
		{name: "no key", req: request{method: "POST", path: "/v1/agents", body: map[string]any{"name": "a"}}, status: 401, code: "UNAUTHORIZED"},
		{name: "unknown key", req: request{method: "POST", path: "/v1/agents", key: "agk_" + strings.Repeat("A", 40), body: map[string]any{"name": "a"}}, status: 401, code: "UNAUTHORIZED"},
		{name: "malformed key", req: request{method: "POST", path: "/v1/agents", key: "hello", body: map[string]any{"name": "a"}}, status: 401, code: "UNAUTHORIZED"},
		{name: "basic auth", req: request{method: "POST", path: "/v1/agents", body: map[string]any{"name": "a"}, header: map[string]string{"Authorization": "Basic " + h.writeKey}}, status: 401, code: "UNAUTHORIZED"},
		{name: "read key", req: request{method: "POST", path: "/v1/agents", key: h.readKey, body: map[string]any{"name": "a"}}, status: 403, code: "INSUFFICIENT_PERMISSIONS"},
		{name: "text/plain", req: request{method: "POST", path: "/v1/agents", key: h.writeKey, body: `{"name":"a"}`, contentType: "text/plain"}, status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "too large", req: post(`{"name":"a","bio":["` + strings.Repeat("x", 1<<20) + `"]}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { h.checkError(t, tc) })
	}
	list := h.do(request{method: "GET", path: "/v1/agents", key: h.readKey}).Data(t)
	if n := len(list["agents"].([]any)); n != 0 {
		t.Fatalf("failed creates stored %d agents", n)
	}
}

func TestGetAgentReturnsEveryMember(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{
		"name": "Sec", "bio": "one line", "plugins": []any{"@elizaos/plugin-solana", map[string]any{"name": "@elizaos/plugin-x", "enabled": false}},
		"settings":    map[string]any{"secrets": map[string]any{"DISCORD_TOKEN": "hunter2"}, "voice": map[string]any{"model": "v"}},
		"customThing": map[string]any{"b": 1, "a": []any{1.5, "x"}}, "memory": map[string]any{"enabled": false},
		"status": "inactive", "id": "agent_forged",
	})
	res := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey})
	if res.Code != 200 {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	if strings.Contains(string(res.Body), "hunter2") {
		t.Fatal("secret echoed")
	}
	d := res.Data(t)
	want := map[string]string{
		"id": `"` + id + `"`, "status": `"active"`, "bio": `["one line"]`, "personality": `{}`, "knowledge": `[]`, "goals": `[]`, "clients": `[]`,
		"plugins":     `[{"config":{},"enabled":true,"name":"@elizaos/plugin-solana"},{"config":{},"enabled":false,"name":"@elizaos/plugin-x"}]`,
		"settings":    `{"secrets":{"DISCORD_TOKEN":"********"},"voice":{"model":"v"}}`,
		"customThing": `{"a":[1.5,"x"],"b":1}`, "memory": `{"enabled":false}`, "deleteProtection": `false`,
		"metrics": `{"totalConversations":0,"totalMessages":0,"uptime":"100.00%"}`,
	}
	for k, v := range want {
		got, _ := json.Marshal(d[k])
		if string(got) != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	if d["createdAt"] != d["updatedAt"] || !timestampPattern.MatchString(d["updatedAt"].(string)) {
		t.Errorf("timestamps %v %v", d["createdAt"], d["updatedAt"])
	}
}

func TestAgentNotFound(t *testing.T) {
	h := newHarness(t)
	h.newAccount("other", "standard")
	otherKey := h.newKey("other", "write")
	id := h.createAgent(map[string]any{"name": "mine"})
	for _, tc := range []errorCase{
		{name: "unknown id", req: request{method: "GET", path: "/v1/agents/agent_01jd3v8m4q2x7k9w5t6r0yzabc", key: h.readKey}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "not an id", req: request{method: "GET", path: "/v1/agents/nope", key: h.readKey}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "foreign get", req: request{method: "GET", path: "/v1/agents/" + id, key: otherKey}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "foreign patch", req: request{method: "PATCH", path: "/v1/agents/" + id, key: otherKey, body: map[string]any{"name": "x"}}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "foreign delete", req: request{method: "DELETE", path: "/v1/agents/" + id, key: otherKey}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "foreign message", req: request{method: "POST", path: "/v1/agents/" + id + "/messages", key: otherKey, body: map[string]any{"text": "hi"}}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "unknown patch", req: request{method: "PATCH", path: "/v1/agents/agent_x", key: h.writeKey, body: map[string]any{}}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "unknown delete", req: request{method: "DELETE", path: "/v1/agents/agent_x", key: h.writeKey}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "unknown path", req: request{method: "GET", path: "/v1/robots", key: h.readKey}, status: 404, code: "NOT_FOUND"},
		{name: "unknown root path", req: request{method: "GET", path: "/nothing", key: h.readKey}, status: 404, code: "NOT_FOUND"},
		{name: "wrong method", req: request{method: "PUT", path: "/v1/agents/" + id, key: h.writeKey, body: map[string]any{}}, status: 405, code: "METHOD_NOT_ALLOWED"},
		{name: "wrong method on collection", req: request{method: "DELETE", path: "/v1/agents", key: h.writeKey}, status: 405, code: "METHOD_NOT_ALLOWED"},
	} {
		t.Run(tc.name, func(t *testing.T) { h.checkError(t, tc) })
	}
	if res := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}); res.Code != 200 {
		t.Fatalf("owner lost the agent: %d", res.Code)
	}
}

func TestUpdateAgentChanges(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "A", "personality": map[string]any{"tone": "warm", "style": "brief"}, "bio": []string{"x"}})
	path := "/v1/agents/" + id
	created := h.do(request{method: "GET", path: path, key: h.readKey}).Data(t)
	patch := func(body any) map[string]any {
		t.Helper()
		res := h.do(request{method: "PATCH", path: path, key: h.writeKey, body: body})
		if res.Code != 200 {
			t.Fatalf("patch %v: %d %s", body, res.Code, res.Body)
		}
		return res.Data(t)
	}
	changes := func(d map[string]any) string { b, _ := json.Marshal(d["changes"]); return string(b) }

	if d := patch(map[string]any{}); changes(d) != `[]` || d["updatedAt"] != created["updatedAt"] {
		t.Errorf("{}: changes %s updatedAt %v", changes(d), d["updatedAt"])
	}
	same := map[string]any{"name": "A", "personality": map[string]any{"style": "brief", "tone": "warm"}, "bio": "x", "status": "active"}
	if d := patch(same); changes(d) != `[]` || d["updatedAt"] != created["updatedAt"] {
		t.Errorf("unchanged values: changes %s updatedAt %v", changes(d), d["updatedAt"])
	}
	d := patch(map[string]any{"status": "inactive", "personality": map[string]any{"tone": "cold"}, "name": "A"})
	if changes(d) != `["personality","status"]` || d["status"] != "inactive" || d["updatedAt"] == created["updatedAt"] {
		t.Errorf("changes %s status %v updatedAt %v", changes(d), d["status"], d["updatedAt"])
	}
	got := h.do(request{method: "GET", path: path, key: h.readKey}).Data(t)
	if p, _ := json.Marshal(got["personality"]); string(p) != `{"tone":"cold"}` {
		t.Errorf("personality not replaced whole: %s", p)
	}
	if b, _ := json.Marshal(got["bio"]); string(b) != `["x"]` {
		t.Errorf("bio changed: %s", b)
	}
	if d := patch(map[string]any{"status": "active", "modelProvider": "anthropic", "newMember": 1}); changes(d) != `["model","modelProvider","newMember","status"]` {
		t.Errorf("changes %s", changes(d))
	}
	for _, tc := range []errorCase{
		{name: "bad provider", req: request{method: "PATCH", path: path, key: h.writeKey, body: map[string]any{"modelProvider": "azure"}}, status: 400, code: "INVALID_REQUEST", field: "modelProvider", reason: "openai, anthropic, groq, google, ollama"},
		{name: "status error", req: request{method: "PATCH", path: path, key: h.writeKey, body: map[string]any{"status": "error"}}, status: 400, code: "INVALID_REQUEST", field: "status"},
		{name: "null", req: request{method: "PATCH", path: path, key: h.writeKey, body: map[string]any{"bio": nil}}, status: 400, code: "INVALID_REQUEST", field: "bio"},
		{name: "blank name", req: request{method: "PATCH", path: path, key: h.writeKey, body: map[string]any{"name": " "}}, status: 400, code: "INVALID_REQUEST", field: "name"},
		{name: "read key", req: request{method: "PATCH", path: path, key: h.readKey, body: map[string]any{"name": "b"}}, status: 403, code: "INSUFFICIENT_PERMISSIONS"},
		{name: "malformed", req: request{method: "PATCH", path: path, key: h.writeKey, body: `{`}, status: 400, code: "INVALID_REQUEST", field: "body"},
		{name: "no content type", req: request{method: "PATCH", path: path, key: h.writeKey, body: `{}`, contentType: "application/x-www-form-urlencoded"}, status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
	} {
		t.Run(tc.name, func(t *testing.T) { h.checkError(t, tc) })
	}
}

func TestDeleteAgent(t *testing.T) {
	h := newHarness(t)
	protected := h.createAgent(map[string]any{"name": "Keep", "deleteProtection": true})
	res := h.do(request{method: "DELETE", path: "/v1/agents/" + protected, key: h.writeKey})
	if res.Code != 403 || res.ErrorCode(t) != "DELETE_PROTECTED" || res.Details(t)["protection"] != "enabled" || res.Details(t)["reason"] == "" {
		t.Fatalf("protected delete: %d %s", res.Code, res.Body)
	}
	if res := h.do(request{method: "DELETE", path: "/v1/agents/" + protected, key: h.readKey}); res.Code != 403 || res.ErrorCode(t) != "INSUFFICIENT_PERMISSIONS" {
		t.Fatalf("read key delete: %d %s", res.Code, res.Body)
	}
	h.do(request{method: "PATCH", path: "/v1/agents/" + protected, key: h.writeKey, body: map[string]any{"deleteProtection": false}})
	res = h.do(request{method: "DELETE", path: "/v1/agents/" + protected, key: h.writeKey})
	if res.Code != 200 {
		t.Fatalf("delete: %d %s", res.Code, res.Body)
	}
	d := res.Data(t)
	if d["id"] != protected || d["name"] != "Keep" || !strings.Contains(d["message"].(string), "Keep") || !timestampPattern.MatchString(d["deletedAt"].(string)) {
		t.Errorf("delete body %s", res.Body)
	}
	if res := h.do(request{method: "GET", path: "/v1/agents/" + protected, key: h.readKey}); res.Code != 404 {
		t.Errorf("deleted agent still there: %d", res.Code)
	}
	if res := h.do(request{method: "DELETE", path: "/v1/agents/" + protected, key: h.writeKey}); res.Code != 404 {
		t.Errorf("second delete: %d", res.Code)
	}
}

func TestCharacterFixtures(t *testing.T) {
	h := newHarness(t)
	files, _ := filepath.Glob("../testdata/characters/*.character.json")
	if len(files) == 0 {
		t.Fatal("no character fixtures in testdata/characters")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			res := h.do(request{method: "POST", path: "/v1/agents", key: h.writeKey, body: raw})
			if strings.HasPrefix(filepath.Base(f), "omniflix") {
				if res.Code != 400 || res.Details(t)["field"] != "modelProvider" {
					t.Fatalf("omniflix: %d %s", res.Code, res.Body)
				}
				return
			}
			if res.Code != 201 {
				t.Fatalf("%d %s", res.Code, res.Body)
			}
			var file map[string]any
			_ = json.Unmarshal(raw, &file)
			got := h.do(request{method: "GET", path: "/v1/agents/" + res.Data(t)["id"].(string), key: h.readKey}).Data(t)
			for _, k := range []string{"name", "system", "lore", "messageExamples", "postExamples", "topics", "style", "adjectives", "knowledge", "modelProvider"} {
				if _, ok := file[k]; !ok {
					continue
				}
				want, _ := json.Marshal(file[k])
				have, _ := json.Marshal(got[k])
				if string(want) != string(have) {
					t.Errorf("%s: got %s, want %s", k, have, want)
				}
			}
		})
	}
}

func TestPatchingBackMaskedSecretsKeepsThem(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "s", "settings": map[string]any{"secrets": map[string]any{"TOKEN": "hunter2", "OTHER": "x"}}})
	got := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}).Data(t)
	settings := got["settings"].(map[string]any)
	settings["secrets"].(map[string]any)["OTHER"] = "y"
	res := h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: map[string]any{"settings": settings}})
	if c := res.Data(t)["changes"]; fmt.Sprint(c) != "[settings]" {
		t.Fatalf("changes %v", c)
	}
	agent, err := h.store.Agents().GetAgent(context.Background(), h.account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(agent.Fields["settings"]); s != `{"secrets":{"OTHER":"y","TOKEN":"hunter2"}}` {
		t.Errorf("stored settings %s", s)
	}
	res = h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: map[string]any{"settings": settings}})
	if c := res.Data(t)["changes"]; fmt.Sprint(c) != "[]" {
		t.Errorf("second identical patch changed %v", c)
	}
}

func TestPatchProviderMovesDefaultModel(t *testing.T) {
	h := newHarness(t)
	defaulted := h.createAgent(map[string]any{"name": "d"})
	chosen := h.createAgent(map[string]any{"name": "c", "model": "gpt-4.1"})
	for id, want := range map[string]string{defaulted: llm.DefaultModels["anthropic"], chosen: "gpt-4.1"} {
		res := h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: map[string]any{"modelProvider": "anthropic"}})
		if res.Code != 200 {
			t.Fatalf("%d %s", res.Code, res.Body)
		}
		got := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}).Data(t)
		if got["modelProvider"] != "anthropic" || got["model"] != want {
			t.Errorf("%s: %v/%v, want anthropic/%s", id, got["modelProvider"], got["model"], want)
		}
	}
	res := h.do(request{method: "PATCH", path: "/v1/agents/" + chosen, key: h.writeKey, body: map[string]any{"modelProvider": "ollama", "model": "mistral"}})
	if fmt.Sprint(res.Data(t)["changes"]) != "[model modelProvider]" {
		t.Errorf("changes %s", res.Body)
	}
}

func TestRequestVariantsAccepted(t *testing.T) {
	h := newHarness(t)
	res := h.do(request{method: "POST", path: "/v1/agents", body: `{"name":"charset"}`, contentType: "application/json; charset=utf-8",
		header: map[string]string{"Authorization": "bearer " + h.writeKey}})
	if res.Code != 201 {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
}

// conditional is a resource with an ETag: how to make one, a request that
// must leave its ETag as it is, and a text member PATCHes change.
type conditional struct {
	name   string
	create func(h *harness) string // its path
	idle   func(h *harness, path string) response
	field  string
}

var conditionals = []conditional{
	{name: "agent", create: func(h *harness) string { return "/v1/agents/" + h.createAgent(map[string]any{"name": "Ada"}) },
		idle: func(h *harness, path string) response {
			h.openai.Respond(llmtest.Reply{Text: "hi"})
			return h.do(request{method: http.MethodPost, path: path + "/messages", key: h.writeKey, body: map[string]any{"text": "hi"}})
		},
		field: "bio"},
	{name: "webhook", create: func(h *harness) string {
		return "/v1/webhooks/" + h.created(h.t, "/v1/webhooks",
			map[string]any{"url": "https://hooks.example.com/a", "events": []string{"message.completed"}})
	},
		idle: func(h *harness, path string) response {
			return h.do(request{method: http.MethodPost, path: path + "/test", key: h.writeKey})
		},
		field: "description"},
}

// TestETagAndConditionalWrites: Get's ETag moves with every change and
// only then, If-None-Match answers 304, and a stale If-Match is 412 and
// changes nothing; on agents and webhooks, on both databases.
func TestETagAndConditionalWrites(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarnessAt(t, dsn, nil, nil)
		for _, c := range conditionals {
			t.Run(c.name, func(t *testing.T) { testConditionalWrites(t, h.with(t), c) })
		}
	})
}

func testConditionalWrites(t *testing.T, h *harness, c conditional) {
	path := c.create(h)
	get := func(header map[string]string) response {
		return h.do(request{method: http.MethodGet, path: path, key: h.writeKey, header: header})
	}
	first := get(nil).Header.Get("ETag")
	if first == "" {
		t.Fatal("Get has no ETag")
	}
	if res := get(map[string]string{"If-None-Match": first}); res.Code != 304 || len(res.Body) != 0 || res.Header.Get("ETag") != first {
		t.Fatalf("If-None-Match the current ETag: %d %q %q", res.Code, res.Body, res.Header.Get("ETag"))
	}
	if res := c.idle(h, path); res.Code >= 300 {
		t.Fatalf("idle request: %d %s", res.Code, res.Body)
	}
	if got := get(nil).Header.Get("ETag"); got != first {
		t.Fatalf("a request that changes nothing shown moved the ETag: %s -> %s", first, got)
	}
	patch := h.do(request{method: http.MethodPatch, path: path, key: h.writeKey, header: map[string]string{"If-Match": first},
		body: map[string]any{c.field: "Curious"}})
	second := patch.Header.Get("ETag")
	if patch.Code != 200 || second == "" || second == first || get(nil).Header.Get("ETag") != second {
		t.Fatalf("PATCH with the current ETag: %d %s, ETag %q", patch.Code, patch.Body, second)
	}
	if res := get(map[string]string{"If-None-Match": first}); res.Code != 200 {
		t.Fatalf("If-None-Match a stale ETag: %d", res.Code)
	}
	before := get(nil).Body
	stale := h.do(request{method: http.MethodPatch, path: path, key: h.writeKey, header: map[string]string{"If-Match": first},
		body: map[string]any{c.field: "Overwritten"}})
	if stale.Code != 412 || stale.ErrorCode(t) != "PRECONDITION_FAILED" {
		t.Fatalf("PATCH with a stale ETag: %d %s", stale.Code, stale.Body)
	}
	if res := get(nil); !bytes.Equal(res.Body, before) || !strings.Contains(string(res.Body), "Curious") || res.Header.Get("ETag") != second {
		t.Fatalf("a refused PATCH changed it: %s", res.Body)
	}
	if res := h.do(request{method: http.MethodDelete, path: path, key: h.writeKey, header: map[string]string{"If-Match": first}}); res.Code != 412 {
		t.Fatalf("DELETE with a stale ETag: %d %s", res.Code, res.Body)
	}
	if res := get(nil); res.Code != 200 {
		t.Fatalf("a refused DELETE deleted it: %d", res.Code)
	}
	if res := h.do(request{method: http.MethodDelete, path: path, key: h.writeKey, header: map[string]string{"If-Match": second}}); res.Code/100 != 2 {
		t.Fatalf("DELETE with the current ETag: %d %s", res.Code, res.Body)
	}
}
