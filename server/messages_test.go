package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
)

// character is a small character with every prompt-shaping member.
func character(provider, model string) map[string]any {
	return map[string]any{
		"name": "Fozzie", "modelProvider": provider, "model": model,
		"system": "You are Fozzie Bear.", "bio": []string{"Aspiring comedian"},
		"lore": []string{"Started small"}, "knowledge": []string{"Puns"}, "goals": []string{"Make people laugh"},
		"personality":   map[string]any{"traits": []string{"optimistic"}, "tone": "cheerful"},
		"modelSettings": map[string]any{"temperature": 0.7, "topP": 0.9, "maxTokens": 300},
	}
}

func (h *harness) send(agentID string, body map[string]any) response {
	h.t.Helper()
	return h.do(request{method: "POST", path: "/v1/agents/" + agentID + "/messages", key: h.writeKey, body: body})
}

// providerFor returns the wire-format server behind a provider.
func (h *harness) providerFor(provider string) *llmtest.Server {
	switch provider {
	case "anthropic":
		return h.anthropic
	case "ollama":
		return h.ollama
	}
	return h.openai
}

var providerCases = []struct{ provider, model string }{
	{"openai", "gpt-4o-mini"}, {"anthropic", "claude-haiku-4-5"}, {"groq", "openai/gpt-oss-20b"},
	{"google", "gemini-3.5-flash"}, {"ollama", "llama3.2"},
}

func TestSendMessageEveryProvider(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.provider, func(t *testing.T) {
			h := newHarness(t)
			wire := h.providerFor(pc.provider)
			wire.Respond(llmtest.Reply{Text: "Wocka wocka! Here is a joke.", PromptTokens: 40, CompletionTokens: 9})
			id := h.createAgent(character(pc.provider, pc.model))
			res := h.send(id, map[string]any{"text": "Tell me a joke", "userId": "kermit", "context": map[string]any{"platform": "discord", "channel": "jokes"}})
			if res.Code != 200 {
				t.Fatalf("%d %s", res.Code, res.Body)
			}
			d := res.Data(t)
			if d["response"] != "Wocka wocka! Here is a joke." || d["agentId"] != id || d["userId"] != "kermit" {
				t.Errorf("reply %s", res.Body)
			}
			if !strings.HasPrefix(d["messageId"].(string), "msg_") || !timestampPattern.MatchString(d["timestamp"].(string)) {
				t.Errorf("ids %s", res.Body)
			}
			meta := d["metadata"].(map[string]any)
			if meta["tokensUsed"] != 49.0 || meta["model"] != pc.model || meta["responseTime"].(float64) <= 0 {
				t.Errorf("metadata %v", meta)
			}
			got := wire.Last(t)
			system, msgs := got.Conversation()
			for _, want := range []string{"You are Fozzie Bear.", "Fozzie", "Aspiring comedian", "Started small", "Puns", "Make people laugh", "optimistic", "cheerful", "discord", "jokes"} {
				if !strings.Contains(system, want) {
					t.Errorf("system prompt lacks %q:\n%s", want, system)
				}
			}
			if len(msgs) != 1 || msgs[0].Role != "user" || msgs[0].Content != "Tell me a joke" {
				t.Errorf("messages %+v", msgs)
			}
			if got.Body["model"] != pc.model {
				t.Errorf("model sent %v", got.Body["model"])
			}
			opts := got.Options()
			wantTopP := any(0.9)
			if pc.provider == "anthropic" {
				wantTopP = nil // Anthropic's current models refuse it beside temperature
			}
			if opts["temperature"] != 0.7 || opts["top_p"] != wantTopP {
				t.Errorf("sampling options sent: %v", opts)
			}
			rec := httptest.NewRecorder()
			h.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if want := `agentd_provider_calls_total{outcome="ok",provider="` + pc.provider + `"} 1`; !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %s", want)
			}
		})
	}
}

// event is one parsed server-sent event.
type event map[string]any

// parseSSE splits a stream body into its data events, checking the framing.
// An agent's stream (its events have ids) must number them 1, 2, 3, ... and
// open with a start event naming the reply the done event names; that
// start event is checked and left out of what parseSSE returns.
func parseSSE(t testing.TB, body []byte) (events []event) {
	t.Helper()
	var ids []int
	for _, frame := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		if strings.HasPrefix(frame, ": ping") {
			continue
		}
		if idLine, rest, ok := strings.Cut(frame, "\n"); ok && strings.HasPrefix(idLine, "id: ") {
			id, err := strconv.Atoi(strings.TrimPrefix(idLine, "id: "))
			if err != nil {
				t.Fatalf("bad id in frame %q", frame)
			}
			ids, frame = append(ids, id), rest
		}
		data, ok := strings.CutPrefix(frame, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("bad frame %q", frame)
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad event %q: %v", data, err)
		}
		events = append(events, ev)
	}
	if len(ids) == 0 {
		return events
	}
	for i, id := range ids {
		if len(ids) != len(events) || id != i+1 {
			t.Fatalf("event ids %v, want 1, 2, 3, ... on every event; body %s", ids, body)
		}
	}
	start, last := events[0], events[len(events)-1]
	if start["type"] != "start" || !strings.HasPrefix(fmt.Sprint(start["messageId"]), "msg_") ||
		last["type"] == "done" && last["messageId"] != start["messageId"] {
		t.Fatalf("start event %v, last %v", start, last)
	}
	return events[1:]
}

func TestStreamEveryProvider(t *testing.T) {
	for _, pc := range providerCases {
		for _, path := range []string{"/messages/stream", "/messages"} {
			t.Run(pc.provider+path, func(t *testing.T) {
				h := newHarness(t)
				h.providerFor(pc.provider).Respond(llmtest.Reply{Text: "one two three four", PromptTokens: 5, CompletionTokens: 4})
				id := h.createAgent(character(pc.provider, pc.model))
				res := h.do(request{method: "POST", path: "/v1/agents/" + id + path, key: h.writeKey,
					body: map[string]any{"text": "count", "userId": "u1", "stream": true}})
				if res.Code != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
					t.Fatalf("%d %v %s", res.Code, res.Header, res.Body)
				}
				events := parseSSE(t, res.Body)
				var text strings.Builder
				for _, ev := range events[:len(events)-1] {
					if ev["type"] != "token" {
						t.Fatalf("event %v before the end", ev)
					}
					text.WriteString(ev["content"].(string))
				}
				if len(events) < 3 || text.String() != "one two three four" {
					t.Errorf("tokens %d: %q", len(events)-1, text.String())
				}
				done := events[len(events)-1]
				meta, _ := done["metadata"].(map[string]any)
				if done["type"] != "done" || !strings.HasPrefix(fmt.Sprint(done["messageId"]), "msg_") || meta["tokensUsed"] != 9.0 || meta["model"] != pc.model {
					t.Errorf("done event %v", done)
				}
				if res.Header.Get("X-RateLimit-Limit") == "" {
					t.Error("stream lacks rate-limit headers")
				}
			})
		}
	}
}

// history returns the conversation of the latest provider request.
func history(t *testing.T, wire *llmtest.Server) []string {
	t.Helper()
	_, msgs := wire.Last(t).Conversation()
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role + ":" + m.Content
	}
	return out
}

func TestConversationContext(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Text: "ok"})
	id := h.createAgent(map[string]any{"name": "ctx"})
	say := func(body map[string]any) []string {
		t.Helper()
		if res := h.send(id, body); res.Code != 200 {
			t.Fatalf("%d %s", res.Code, res.Body)
		}
		return history(t, h.openai)
	}
	say(map[string]any{"text": "hi from a", "userId": "a"})
	if got := fmt.Sprint(say(map[string]any{"text": "again a", "userId": "a"})); got != "[user:hi from a assistant:ok user:again a]" {
		t.Errorf("same user: %s", got)
	}
	if got := fmt.Sprint(say(map[string]any{"text": "hi from b", "userId": "b"})); got != "[user:hi from b]" {
		t.Errorf("other user: %s", got)
	}
	say(map[string]any{"text": "room hello", "userId": "a", "roomId": "r1"})
	if got := fmt.Sprint(say(map[string]any{"text": "room reply", "userId": "b", "roomId": "r1"})); got != "[user:a: room hello assistant:ok user:b: room reply]" {
		t.Errorf("room: %s", got)
	}
	say(map[string]any{"text": "anon 1"})
	if got := fmt.Sprint(say(map[string]any{"text": "anon 2"})); got != "[user:anon 2]" {
		t.Errorf("no ids: %s", got)
	}
	d := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}).Data(t)
	if m := d["metrics"].(map[string]any); m["totalMessages"] != 7.0 || m["totalConversations"] != 3.0 || m["uptime"] != "100.00%" {
		t.Errorf("metrics %v", m)
	}
}

func TestMemorySettings(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Text: "ok"})
	stateless := h.createAgent(map[string]any{"name": "goldfish", "memory": map[string]any{"enabled": false}})
	windowed := h.createAgent(map[string]any{"name": "short", "memory": map[string]any{"shortTermContext": 2}})
	for i := 0; i < 3; i++ {
		h.send(stateless, map[string]any{"text": fmt.Sprint("s", i), "userId": "u"})
		h.send(windowed, map[string]any{"text": fmt.Sprint("w", i), "userId": "u"})
	}
	h.send(stateless, map[string]any{"text": "last", "userId": "u"})
	if got := fmt.Sprint(history(t, h.openai)); got != "[user:last]" {
		t.Errorf("stateless: %s", got)
	}
	h.send(windowed, map[string]any{"text": "last", "userId": "u"})
	if got := fmt.Sprint(history(t, h.openai)); got != "[user:w2 assistant:ok user:last]" {
		t.Errorf("window of 2: %s", got)
	}
}

func TestHistorySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	dbPath := dir + "/agentd.db"
	wire := llmtest.NewOpenAI(t)
	wire.Respond(llmtest.Reply{Text: "remembered"})
	boot := func() (*Server, *store.Store) {
		st := storetest.Open(t, dbPath)
		turns, err := turn.New(turn.Config{Stores: turnStoresOf(st), Semaphore: limit.NewMemorySemaphore(),
			Model: llm.New(llm.Config{OpenAI: llm.ProviderConfig{APIKey: "k", BaseURL: wire.URL}})})
		if err != nil {
			t.Fatal(err)
		}
		return newServer(t, Config{Store: storesOf(st), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Turns: turns}), st
	}
	srv, st := boot()
	if _, err := st.Accounts().CreateAccount(context.Background(), domain.Account{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	key, _, _ := st.Accounts().CreateKey(context.Background(), "a", domain.ScopeWrite, nil)
	call := func(srv *Server, method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	var created struct{ Data struct{ ID string } }
	_ = json.Unmarshal(call(srv, "POST", "/v1/agents", `{"name":"persistent"}`).Body.Bytes(), &created)
	call(srv, "POST", "/v1/agents/"+created.Data.ID+"/messages", `{"text":"before restart","userId":"u"}`)
	_ = st.Close()
	srv, _ = boot()
	if rec := call(srv, "POST", "/v1/agents/"+created.Data.ID+"/messages", `{"text":"after restart","userId":"u"}`); rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got := fmt.Sprint(history(t, wire)); got != "[user:before restart assistant:remembered user:after restart]" {
		t.Errorf("history after restart: %s", got)
	}
}

func TestSendMessageRefusals(t *testing.T) {
	h := newHarnessLLM(t, func(c *llm.Config) { c.OpenAI.APIKey = "" })
	inactive := h.createAgent(map[string]any{"name": "sleepy", "modelProvider": "anthropic"})
	h.do(request{method: "PATCH", path: "/v1/agents/" + inactive, key: h.writeKey, body: map[string]any{"status": "inactive"}})
	unkeyed := h.createAgent(map[string]any{"name": "nokey", "modelProvider": "openai"})
	path := "/v1/agents/" + unkeyed + "/messages"
	for _, tc := range []errorCase{
		{name: "missing text", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"userId": "u"}}, status: 400, code: "INVALID_MESSAGE", field: "text"},
		{name: "empty text", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"text": ""}}, status: 400, code: "INVALID_MESSAGE", field: "text"},
		{name: "blank text", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"text": " \n\t "}}, status: 400, code: "INVALID_MESSAGE", field: "text"},
		{name: "text wrong type", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"text": 3}}, status: 400, code: "INVALID_MESSAGE", field: "text"},
		{name: "text too long", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"text": strings.Repeat("a", 16001)}}, status: 400, code: "INVALID_MESSAGE", field: "text"},
		{name: "stream blank text", req: request{method: "POST", path: path + "/stream", key: h.writeKey, body: map[string]any{"text": " "}}, status: 400, code: "INVALID_MESSAGE", field: "text"},
		{name: "userId too long", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"text": "hi", "userId": strings.Repeat("u", 129)}}, status: 400, code: "INVALID_REQUEST", field: "userId"},
		{name: "roomId control char", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"text": "hi", "roomId": "a\nb"}}, status: 400, code: "INVALID_REQUEST", field: "roomId"},
		{name: "stream wrong type", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"text": "hi", "stream": "yes"}}, status: 400, code: "INVALID_REQUEST", field: "stream"},
		{name: "malformed", req: request{method: "POST", path: path, key: h.writeKey, body: `{"text":`}, status: 400, code: "INVALID_REQUEST", field: "body"},
		{name: "read key", req: request{method: "POST", path: path, key: h.readKey, body: map[string]any{"text": "hi"}}, status: 403, code: "INSUFFICIENT_PERMISSIONS"},
		{name: "unknown agent", req: request{method: "POST", path: "/v1/agents/agent_nope/messages", key: h.writeKey, body: map[string]any{"text": "hi"}}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "unknown agent stream", req: request{method: "POST", path: "/v1/agents/agent_nope/messages/stream", key: h.writeKey, body: map[string]any{"text": "hi"}}, status: 404, code: "AGENT_NOT_FOUND"},
		{name: "inactive", req: request{method: "POST", path: "/v1/agents/" + inactive + "/messages", key: h.writeKey, body: map[string]any{"text": "hi"}}, status: 503, code: "AGENT_UNAVAILABLE"},
		{name: "inactive stream", req: request{method: "POST", path: "/v1/agents/" + inactive + "/messages/stream", key: h.writeKey, body: map[string]any{"text": "hi"}}, status: 503, code: "AGENT_UNAVAILABLE"},
		{name: "no provider key", req: request{method: "POST", path: path, key: h.writeKey, body: map[string]any{"text": "hi"}}, status: 503, code: "AGENT_UNAVAILABLE", reason: "OPENAI_API_KEY"},
		{name: "no provider key stream", req: request{method: "POST", path: path + "/stream", key: h.writeKey, body: map[string]any{"text": "hi"}}, status: 503, code: "AGENT_UNAVAILABLE", reason: "OPENAI_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) { h.checkError(t, tc) })
	}
	res := h.send(inactive, map[string]any{"text": "hi"})
	if d := res.Details(t); d["status"] != "inactive" || d["reason"] == "" {
		t.Errorf("inactive details %v", d)
	}
	if h.anthropic.Count() != 0 || h.openai.Count() != 0 {
		t.Errorf("refused messages reached a provider")
	}
	if got := h.do(request{method: "GET", path: "/v1/agents/" + unkeyed, key: h.readKey}).Data(t)["status"]; got != "active" {
		t.Errorf("missing key changed status to %v", got)
	}
}

// status reads an agent's status through Get Agent.
func (h *harness) status(id string) (string, map[string]any) {
	d := h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}).Data(h.t)
	return d["status"].(string), d["metrics"].(map[string]any)
}

// checkRetryAfter checks that a 503 of an agent cooling down for about
// cooldownS seconds says when to come back: Retry-After in whole seconds,
// rounded up, and details.retryAfter the same in an envelope.
func checkRetryAfter(t *testing.T, what string, res response, cooldownS int, envelope bool) {
	t.Helper()
	header, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if res.Code != 503 || err != nil || header < cooldownS-2 || header > cooldownS {
		t.Errorf("%s: %d with Retry-After %q, want 503 with about %d", what, res.Code, res.Header.Get("Retry-After"), cooldownS)
	}
	if envelope && res.Details(t)["retryAfter"] != float64(header) {
		t.Errorf("%s: details %v, want retryAfter %d", what, res.Details(t), header)
	}
}

// TestProviderFailuresMoveAgentToError: a failure of the provider itself
// puts the agent in error for a cool-down (the provider's Retry-After, else
// 30 s) and its 503s, the failed message's and those refused meanwhile on
// every path, say when to come back.
func TestProviderFailuresMoveAgentToError(t *testing.T) {
	cases := []struct {
		name      string
		reply     llmtest.Reply
		calls     int
		reason    string
		cooldownS int
	}{
		{name: "rate limited", reply: llmtest.Reply{Status: 429, RetryAfter: "7"}, calls: 1, reason: "rate limit", cooldownS: 7},
		{name: "bad credentials", reply: llmtest.Reply{Status: 401}, calls: 1, reason: "401", cooldownS: 30},
		{name: "server error", reply: llmtest.Reply{Status: 500}, calls: 3, cooldownS: 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.openai.Respond(tc.reply)
			id := h.createAgent(map[string]any{"name": "flaky"})
			res := h.send(id, map[string]any{"text": "hi"})
			if res.Code != 503 || res.ErrorCode(t) != "AGENT_UNAVAILABLE" || res.Details(t)["status"] != "error" {
				t.Fatalf("%d %s", res.Code, res.Body)
			}
			if reason := strings.ToLower(fmt.Sprint(res.Details(t)["reason"])); !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q lacks %q", reason, tc.reason)
			}
			if n := h.openai.Count(); n != tc.calls {
				t.Errorf("provider called %d times, want %d", n, tc.calls)
			}
			checkRetryAfter(t, "the failed message", res, tc.cooldownS, true)
			if st, _ := h.status(id); st != "error" {
				t.Errorf("status %s", st)
			}
			agent, _ := h.store.Agents().GetAgent(context.Background(), h.account.ID, id)
			if left := time.Until(agent.RetryAt); left < time.Duration(tc.cooldownS-2)*time.Second || left > time.Duration(tc.cooldownS)*time.Second {
				t.Errorf("cool-down ends in %v, want about %ds", left, tc.cooldownS)
			}
			// During the cool-down nothing reaches the provider.
			res = h.send(id, map[string]any{"text": "again"})
			if res.Code != 503 || res.Details(t)["status"] != "error" {
				t.Fatalf("during cool-down: %d %s", res.Code, res.Body)
			}
			checkRetryAfter(t, "during the cool-down", res, tc.cooldownS, true)
			checkRetryAfter(t, "Chat Completions during the cool-down", h.chat(map[string]any{"model": id, "messages": []any{map[string]any{"role": "user", "content": "again"}}}), tc.cooldownS, false)
			if n := h.openai.Count(); n != tc.calls {
				t.Errorf("provider called during the cool-down")
			}
			// PATCH status active clears the error at once.
			res = h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: map[string]any{"status": "active"}})
			if fmt.Sprint(res.Data(t)["changes"]) != "[status]" {
				t.Errorf("patch active: %s", res.Body)
			}
			h.openai.Respond(llmtest.Reply{Text: "back"})
			if res := h.send(id, map[string]any{"text": "again"}); res.Code != 200 {
				t.Fatalf("after PATCH active: %d %s", res.Code, res.Body)
			}
		})
	}
}

func TestCooldownEndsAndSuccessRecovers(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.Turn.ErrorCooldown = 300 * time.Millisecond })
	h.openai.Respond(llmtest.Reply{Status: 401})
	id := h.createAgent(map[string]any{"name": "flaky"})
	h.send(id, map[string]any{"text": "hi"})
	time.Sleep(400 * time.Millisecond)
	h.openai.Respond(llmtest.Reply{Text: "fine now"})
	if res := h.send(id, map[string]any{"text": "hi"}); res.Code != 200 {
		t.Fatalf("after cool-down: %d %s", res.Code, res.Body)
	}
	st, metrics := h.status(id)
	if st != "active" || metrics["uptime"] == "100.00%" {
		t.Errorf("status %s uptime %v", st, metrics["uptime"])
	}
}

// TestModelErrorKeepsStatus: a provider's answer that the agent's model
// does not exist or was retired is 502 MODEL_ERROR naming the provider, the
// model and the provider's reason, on Send Message and Chat Completions,
// and leaves the agent active: the next message goes to the provider.
func TestModelErrorKeepsStatus(t *testing.T) {
	for _, pc := range []struct{ provider, model string }{
		{"openai", "gpt-9"}, {"anthropic", "claude-2.1"}, {"google", "gemini-1.0-pro"}, {"ollama", "llama9"},
	} {
		t.Run(pc.provider, func(t *testing.T) {
			h := newHarness(t)
			wire := h.providerFor(pc.provider)
			wire.Respond(llmtest.Reply{Status: 404})
			id := h.createAgent(map[string]any{"name": "m", "modelProvider": pc.provider, "model": pc.model})
			res := h.send(id, map[string]any{"text": "hi"})
			d := res.Details(t)
			reason, _ := d["reason"].(string)
			if res.Code != 502 || res.ErrorCode(t) != "MODEL_ERROR" || d["provider"] != pc.provider || d["model"] != pc.model ||
				!strings.Contains(reason, pc.model) || strings.Contains(reason, "test-key") {
				t.Fatalf("%d %s", res.Code, res.Body)
			}
			chat := h.do(request{method: "POST", path: "/v1/chat/completions", key: h.writeKey,
				body: map[string]any{"model": id, "messages": userMessage("hi")}})
			if msg, _ := chat.JSON(t)["error"].(map[string]any)["message"].(string); chat.Code != 502 || !strings.Contains(msg, reason) {
				t.Errorf("chat completions: %d %s", chat.Code, chat.Body)
			}
			if st, _ := h.status(id); st != "active" {
				t.Errorf("status %s", st)
			}
			wire.Respond(llmtest.Reply{Text: "fixed"})
			if res := h.send(id, map[string]any{"text": "hi"}); res.Code != 200 {
				t.Errorf("the next message: %d %s", res.Code, res.Body)
			}
			rec := httptest.NewRecorder()
			h.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if want := `agentd_provider_calls_total{outcome="request_failed",provider="` + pc.provider + `"} 2`; !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %s", want)
			}
		})
	}
}

func TestTimeoutAndUnreachable(t *testing.T) {
	h := newHarnessLLM(t, func(c *llm.Config) {
		c.Timeout = 200 * time.Millisecond
		c.Groq.BaseURL = "http://127.0.0.1:1/v1"
	})
	h.openai.Respond(llmtest.Reply{Hang: true})
	slow := h.createAgent(map[string]any{"name": "slow"})
	if res := h.send(slow, map[string]any{"text": "hi"}); res.Code != 503 || res.Details(t)["status"] != "error" {
		t.Errorf("timeout: %d %s", res.Code, res.Body)
	}
	gone := h.createAgent(map[string]any{"name": "gone", "modelProvider": "groq"})
	if res := h.send(gone, map[string]any{"text": "hi"}); res.Code != 503 || res.Details(t)["status"] != "error" {
		t.Errorf("unreachable: %d %s", res.Code, res.Body)
	}
}

func TestStreamErrorMidway(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Text: "a b c d e f", FailMidStream: true, FailAfter: 2})
	id := h.createAgent(map[string]any{"name": "s"})
	res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/stream", key: h.writeKey, body: map[string]any{"text": "hi"}})
	events := parseSSE(t, res.Body)
	last := events[len(events)-1]
	if res.Code != 200 || last["type"] != "error" || len(events) < 2 {
		t.Fatalf("%d %s", res.Code, res.Body)
	}
	e := last["error"].(map[string]any)
	if e["code"] == "" || e["message"] == "" {
		t.Errorf("error event %v", last)
	}
	for _, ev := range events[:len(events)-1] {
		if ev["type"] != "token" {
			t.Errorf("unexpected event %v", ev)
		}
	}
}

// slotsFree is a check that all the slots of key can be taken.
func slotsFree(t *testing.T, sem turn.Semaphore, key string) func() error {
	return func() error {
		if !allSlotsFree(t, sem, key) {
			return fmt.Errorf("a slot of %s held", key)
		}
		return nil
	}
}

// allSlotsFree reports whether all 10 slots of key can be taken now.
func allSlotsFree(t *testing.T, sem turn.Semaphore, key string) bool {
	t.Helper()
	var releases []func()
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	for i := 0; i < turn.MaxInFlightPerAgent; i++ {
		release, ok, err := sem.TryAcquire(context.Background(), key, turn.MaxInFlightPerAgent)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
		if !ok {
			return false
		}
	}
	return true
}

// TestReplyStoredWhenClientLeavesAfterLastToken: the provider has answered
// in full, but the client goes away before the reply is stored; the reply
// is stored all the same, and the agent recovers from `error`. (Neither a
// stream nor a run depends on its client: the run goes on without it.)
func TestReplyStoredWhenClientLeavesAfterLastToken(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			var leave context.CancelFunc
			// answer gives the whole reply, then waits for the client to go.
			answer := func(ctx context.Context, onToken func(string) error) (llm.Reply, error) {
				for _, frag := range []string{"all ", "of ", "it"} {
					if err := onToken(frag); err != nil {
						return llm.Reply{}, err
					}
				}
				leave()
				return llm.Reply{Text: "all of it", Model: "m"}, nil
			}
			fail := true
			// down is the first message's failure: a cool-down that has
			// passed by the next message.
			down := &llm.Error{Kind: llm.KindUnavailable, Provider: "openai", Reason: "down", RetryAfter: time.Nanosecond}
			h := newHarness(t, func(c *harnessConfig) {
				c.Turn.Model = fakeReplier{
					generate: func(ctx context.Context, _ llm.Request) (llm.Reply, error) {
						if fail {
							return llm.Reply{}, down
						}
						return answer(ctx, func(string) error { return nil })
					},
					stream: func(ctx context.Context, _ llm.Request, onToken func(string) error) (llm.Reply, error) {
						if fail {
							return llm.Reply{}, down
						}
						return answer(ctx, onToken)
					},
				}
			})
			id := h.createAgent(map[string]any{"name": "quick"})
			h.send(id, map[string]any{"text": "hi", "userId": "u"})
			if st, _ := h.status(id); st != "error" {
				t.Fatalf("status %s, want error before the test", st)
			}
			fail = false
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			leave = cancel
			req := h.httpRequest(request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey,
				body: map[string]any{"text": "tell me", "userId": "u", "stream": stream}})
			rec := httptest.NewRecorder()
			h.srv.Handler().ServeHTTP(rec, req.WithContext(ctx))
			if stream && rec.Code != 200 {
				t.Fatalf("answered %d %s", rec.Code, rec.Body)
			}
			waitForRuns(t, h, id)
			if reply := h.storedReply(t, id, "u"); reply.Text != "all of it" || reply.Partial {
				t.Errorf("stored reply %+v, want the whole reply", reply)
			}
			if st, _ := h.status(id); st != "active" {
				t.Errorf("status %s, want active after a reply", st)
			}
		})
	}
}

// TestStreamToClientThatStopsReading: a client that sends the request and
// never reads holds neither the reply nor its concurrency slot: the reply
// is stored whole and the slot freed while the client still has not read,
// and the stream's goroutines end (the package's leak check) once a
// frame's write deadline gives the client up.
func TestStreamToClientThatStopsReading(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.StreamWriteTimeout = 200 * time.Millisecond })
	// Far more than the shrunken socket buffers hold.
	frags := make([]string, 2000)
	for i := range frags {
		frags[i] = strings.Repeat("x", 1000)
	}
	h.openai.Respond(llmtest.Reply{Fragments: frags})
	id := h.createAgent(map[string]any{"name": "talkative"})
	ts := httptest.NewUnstartedServer(h.srv.Handler())
	ts.Listener = smallBufferListener{ts.Listener}
	ts.Start()
	defer ts.Close()
	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := dialer.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"text":"talk","userId":"u"}`
	fmt.Fprintf(conn, "POST /v1/agents/%s/messages/stream HTTP/1.1\r\nHost: agentd\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", id, h.writeKey, len(body), body)
	// Wait until the stream has started: its slot is taken.
	testutil.Eventually(t, "the stream started", func() error {
		if allSlotsFree(t, h.cfg.Turn.Semaphore, "agent:"+id) {
			return errors.New("every slot free")
		}
		return nil
	})
	testutil.Eventually(t, "the slot of a client that stopped reading freed", slotsFree(t, h.cfg.Turn.Semaphore, "agent:"+id))
	if reply := h.storedReply(t, id, "u"); len(reply.Text) != len(frags)*1000 || reply.Partial {
		t.Errorf("stored %d characters, partial %v; want the whole reply", len(reply.Text), reply.Partial)
	}
}

// TestStreamOverHTTP2OutlivesItsFrameDeadline: over HTTP/2, which resets
// a stream whose write deadline passes even while nothing is written, a
// stream that waits longer than a frame's deadline for its reply gets it.
func TestStreamOverHTTP2OutlivesItsFrameDeadline(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.StreamWriteTimeout = 100 * time.Millisecond })
	h.openai.Respond(llmtest.Reply{Text: "Late but whole.", Delay: 500 * time.Millisecond})
	id := h.createAgent(map[string]any{"name": "slow"})
	ts := httptest.NewUnstartedServer(h.srv.Handler())
	ts.Config.Protocols = new(http.Protocols)
	ts.Config.Protocols.SetUnencryptedHTTP2(true)
	ts.Start()
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{Protocols: ts.Config.Protocols}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest("POST", ts.URL+"/v1/agents/"+id+"/messages/stream", strings.NewReader(`{"text":"hi","userId":"u"}`))
	testutil.OK(t, err)
	req.Header.Set("Authorization", "Bearer "+h.writeKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	testutil.OK(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.ProtoMajor != 2 {
		t.Fatalf("%s stream: %v", res.Proto, err)
	}
	events := parseSSE(t, body)
	if last := events[len(events)-1]; last["type"] != "done" {
		t.Fatalf("last event %v", last)
	}
}

// smallBufferListener shrinks the send buffer of accepted connections, so
// a client that stops reading blocks the server's writes early.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestProviderErrorTextStaysInTheLog: the provider's error text carries the
// organization id and the ends of the operator's key. Clients and the
// stored status reason get a fixed sentence per kind of failure; the text
// goes to the log only, masked.
func TestProviderErrorTextStaysInTheLog(t *testing.T) {
	const leaky = "Rate limit reached in organization org-abc123 for key sk-abc1****************1234."
	secrets := []string{"org-abc123", "sk-abc1", "*1234"}
	cases := []struct {
		name   string
		reply  llmtest.Reply
		status int
		reason string
		logged string
	}{
		{"auth", llmtest.Reply{Status: 401}, 503, "The model provider rejected the credentials (HTTP 401).", "Incorrect API key provided"},
		{"rate limited", llmtest.Reply{Status: 429}, 503, "The model provider is rate limiting requests (HTTP 429).", "Rate limit reached"},
		{"unavailable", llmtest.Reply{Status: 503, ErrorMessage: leaky}, 503, "The model provider is unavailable (HTTP 503).", "Rate limit reached"},
		{"request", llmtest.Reply{Status: 400, ErrorMessage: leaky}, 502, "The model provider rejected the request (HTTP 400).", "Rate limit reached"},
		{"mid-stream", llmtest.Reply{Text: "a b c d", FailMidStream: true, ErrorType: "server_error", ErrorMessage: leaky}, 503, "The model provider broke off the reply.", "Rate limit reached"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs testutil.SyncBuffer
			h := newHarness(t, func(c *harnessConfig) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			h.openai.Respond(tc.reply)
			var seen []string
			checkReason := func(what string, reason any) {
				if reason != tc.reason {
					t.Errorf("%s: reason %q, want %q", what, reason, tc.reason)
				}
			}
			id := h.createAgent(map[string]any{"name": "leaky"})
			res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/stream", key: h.writeKey, body: map[string]any{"text": "hi"}})
			events := parseSSE(t, res.Body)
			last, _ := events[len(events)-1]["error"].(map[string]any)
			details, _ := last["details"].(map[string]any)
			checkReason("stream error event", details["reason"])
			seen = append(seen, string(res.Body))
			requestID := res.Header.Get("X-Request-ID")
			if tc.status == 503 {
				// The agent is in error now; the stored reason is what the
				// next message is told.
				agent, err := h.store.Agents().GetAgent(context.Background(), h.account.ID, id)
				if err != nil {
					t.Fatal(err)
				}
				checkReason("stored status reason", agent.StatusReason)
				res = h.send(id, map[string]any{"text": "again"})
				checkReason("during the cool-down", res.Details(t)["reason"])
				seen = append(seen, agent.StatusReason, string(res.Body))
				h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: map[string]any{"status": "active"}})
			}
			if !tc.reply.FailMidStream { // a reply that is not streamed cannot fail midway
				res = h.send(id, map[string]any{"text": "hi"})
				if res.Code != tc.status {
					t.Fatalf("%d %s", res.Code, res.Body)
				}
				checkReason("reply", res.Details(t)["reason"])
				seen = append(seen, string(res.Body))
			}
			seen = append(seen, string(h.do(request{method: "GET", path: "/v1/agents/" + id, key: h.readKey}).Body))
			log := logs.String()
			for _, s := range append(seen, log) {
				for _, secret := range secrets {
					if strings.Contains(s, secret) {
						t.Errorf("%q leaked into %s", secret, s)
					}
				}
			}
			if !strings.Contains(log, tc.logged) || !strings.Contains(log, "request_id="+requestID) {
				t.Errorf("log lacks the provider's text %q with the request id %s:\n%s", tc.logged, requestID, log)
			}
		})
	}
}

// TestMaxLengthCutsAtAWordOnEveryPath: responseGuidelines.maxLength ends
// the reply at the last word boundary before the limit, appending nothing,
// on Send Message, with stream: true and on the stream path, and the
// stored reply is the cut one.
func TestMaxLengthCutsAtAWordOnEveryPath(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Text: "Héllo wörld, how are you?"})
	id := h.createAgent(map[string]any{"name": "Terse", "responseGuidelines": map[string]any{"maxLength": 15}})
	const want = "Héllo wörld,"
	res := h.send(id, map[string]any{"text": "hi", "userId": "u1"})
	if got := res.Data(t)["response"]; res.Code != 200 || got != want {
		t.Fatalf("Send Message: %d %v, want %q", res.Code, got, want)
	}
	for _, path := range []string{"/messages/stream", "/messages"} {
		res := h.do(request{method: "POST", path: "/v1/agents/" + id + path, key: h.writeKey,
			body: map[string]any{"text": "hi", "userId": "u1", "stream": true}})
		var text strings.Builder
		for _, ev := range parseSSE(t, res.Body) {
			if ev["type"] == "token" {
				text.WriteString(ev["content"].(string))
			}
		}
		if text.String() != want {
			t.Errorf("%s: streamed %q, want %q", path, text.String(), want)
		}
	}
	acct := h.account.ID
	msgs, err := h.store.Conversations().History(context.Background(), acct, id, domain.ConversationRef{UserID: "u1", Platform: domain.PlatformAPI}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Role == domain.RoleAssistant && m.Text != want {
			t.Errorf("stored reply %q, want %q", m.Text, want)
		}
	}
	if len(msgs) != 6 {
		t.Errorf("%d stored messages, want 6", len(msgs))
	}
}

// waitForRuns waits until no run of the agent is queued or running.
func waitForRuns(t *testing.T, h *harness, agentID string) {
	t.Helper()
	testutil.Eventually(t, "the agent's runs ended", func() error {
		for _, status := range []string{"queued", "running"} {
			if runs := h.items(h.get("/v1/agents/" + agentID + "/runs?status=" + status)); len(runs) > 0 {
				return fmt.Errorf("%d runs %s", len(runs), status)
			}
		}
		return nil
	})
}
