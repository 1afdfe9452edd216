package server

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/getkin/kin-openapi/openapi3"
)

// specOperations returns the operationIds of the embedded contract.
func specOperations(t testing.TB, spec *openapi3.T) []string {
	t.Helper()
	var ids []string
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, specOperationID(op))
		}
	}
	if len(ids) == 0 {
		t.Fatal("the embedded spec has no operations")
	}
	return ids
}

func TestEndpointLimitsCoverEveryOperation(t *testing.T) {
	t.Parallel()
	spec, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEndpointLimits(spec, endpointLimits); err != nil {
		t.Fatalf("the table does not match openapi.yaml: %v", err)
	}
	for _, id := range specOperations(t, spec) {
		limits := maps.Clone(endpointLimits)
		delete(limits, id)
		if err := checkEndpointLimits(spec, limits); err == nil || !strings.Contains(err.Error(), "operation "+id+" has no rate limit") {
			t.Errorf("without %s: error %v, want one naming it", id, err)
		}
		limits[id] = 0
		if err := checkEndpointLimits(spec, limits); err == nil {
			t.Errorf("%s limited to 0: no error", id)
		}
	}
	limits := maps.Clone(endpointLimits)
	limits["renamedOperation"] = 5
	if err := checkEndpointLimits(spec, limits); err == nil || !strings.Contains(err.Error(), "renamedOperation names no operation") {
		t.Errorf("stale entry: error %v, want one naming it", err)
	}
}

// rateLimitHeaders go out with every response the gate authenticated.
var rateLimitHeaders = []string{
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
}

// contractHeaders are the response headers openapi.yaml must declare on
// every response that carries them.
var contractHeaders = append(slices.Clone(rateLimitHeaders), "Retry-After")

// undeclaredHeaders returns the contract headers res carries that op does
// not declare for res's status; ValidateResponse checks only the declared
// ones.
func undeclaredHeaders(op *openapi3.Operation, res response) []string {
	var declared openapi3.Headers
	if ref := op.Responses.Status(res.Code); ref != nil && ref.Value != nil {
		declared = ref.Value.Headers
	}
	var missing []string
	for _, name := range contractHeaders {
		if res.Header.Get(name) != "" && declared[name] == nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// refusingCounter is a rate-limit counter whose every limit is exhausted.
type refusingCounter struct{}

func (refusingCounter) Take(context.Context, string, int64) (limit.Result, error) {
	return limit.Result{Limit: 1, Remaining: 0, Reset: time.Now().Add(30 * time.Second)}, nil
}

func (c refusingCounter) Peek(ctx context.Context, key string, l int64) (limit.Result, error) {
	return c.Take(ctx, key, l)
}

// operationCase is a valid call of one operation, and the invalid variant
// that provokes its 400 (nil for an operation that has none).
type operationCase struct {
	body any
	// bodyFor, when set, is the body of a call on the agent agentID, for
	// the operations that name their agent in the body (Chat Completions'
	// `model`).
	bodyFor func(agentID string) any
	query   string            // of the valid call
	header  map[string]string // of every call
	invalid func(r request) request
}

// withHeader returns r with the header name set to value.
func withHeader(r request, name, value string) request {
	h := map[string]string{}
	for k, v := range r.header {
		h[k] = v
	}
	h[name] = value
	r.header = h
	return r
}

// mcpAccept is the Accept header MCP's streamable HTTP transport requires.
var mcpAccept = map[string]string{"Accept": "application/json, text/event-stream"}

// chatBody is a Chat Completions body for the agent agentID.
func chatBody(agentID string) any {
	return map[string]any{"model": agentID, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
}

// responseBody is a Responses body for the agent agentID.
func responseBody(agentID string) any {
	return map[string]any{"model": agentID, "input": "hi"}
}

// operationCases has one entry per operation of openapi.yaml.
var operationCases = map[string]operationCase{
	"createAgent":   {body: map[string]any{"name": "walker"}, invalid: withBody(map[string]any{"bio": "no name"})},
	"listAgents":    {invalid: func(r request) request { r.path += "?limit=0"; return r }},
	"getAgent":      {invalid: withLongAgentID},
	"updateAgent":   {body: map[string]any{"name": "renamed"}, invalid: withBody(map[string]any{"name": ""})},
	"deleteAgent":   {invalid: withLongAgentID},
	"exportAgent":   {invalid: withLongAgentID},
	"sendMessage":   {body: map[string]any{"text": "hi"}, invalid: withBody(map[string]any{"text": ""})},
	"streamMessage": {body: map[string]any{"text": "hi"}, invalid: withBody(map[string]any{"text": "hi", "userId": ""})},
	"resumeStream":  {header: map[string]string{"Last-Event-ID": "1"}, invalid: func(r request) request { return withHeader(r, "Last-Event-ID", "one") }},
	"cancelMessage": {invalid: withLongMessageID},

	"listConversations":        {invalid: withQuery("limit=0")},
	"getConversation":          {invalid: withLongConversationID},
	"listConversationMessages": {invalid: withQuery("order=sideways")},
	"deleteConversation":       {invalid: withLongConversationID},
	"getAgentAnalytics":        {invalid: withQuery("interval=week")},
	"listConnections":          {invalid: withLongAgentID},
	"listAgentTools":           {invalid: withLongAgentID},
	"createMemory":             {body: map[string]any{"text": "Likes tea"}, invalid: withBody(map[string]any{"text": ""})},
	"listMemories":             {invalid: withQuery("limit=0")},
	"forgetUser":               {query: "userId=u1", invalid: withoutQuery},
	"deleteMemory":             {invalid: withLongLastID},
	"createKnowledge":          {body: map[string]any{"name": "faq.md", "text": "Fees are low."}, invalid: withBody(map[string]any{"name": "", "text": "x"})},
	"listKnowledge":            {invalid: withQuery("limit=0")},
	"deleteKnowledge":          {invalid: withLongLastID},
	"previewContext":           {body: map[string]any{"text": "hi"}, invalid: withBody(map[string]any{"text": 7})},

	"callMcp": {body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
		header: mcpAccept, invalid: withBody(map[string]any{"id": 1, "method": "tools/list"})},

	"createWebhook":         {body: map[string]any{"url": "https://hooks.example.com/a", "events": []string{"*"}}, invalid: withBody(map[string]any{"url": "ftp://hooks.example.com/a", "events": []string{"*"}})},
	"listWebhooks":          {invalid: withQuery("limit=0")},
	"getWebhook":            {invalid: withLongWebhookID},
	"updateWebhook":         {body: map[string]any{"description": "renamed"}, invalid: withBody(map[string]any{"events": []string{}})},
	"deleteWebhook":         {invalid: withLongWebhookID},
	"rotateWebhookSecret":   {invalid: withLongWebhookID},
	"testWebhook":           {invalid: withLongWebhookID},
	"listWebhookDeliveries": {invalid: withQuery("status=lost")},
	"retryWebhookDelivery":  {invalid: withLongWebhookID},

	"createChatCompletion":   {bodyFor: chatBody, invalid: withBody(map[string]any{"model": "agent_x", "messages": []any{}})},
	"listModels":             {},
	"createResponse":         {bodyFor: responseBody, invalid: withBody(map[string]any{"model": "agent_x", "input": []any{}})},
	"getResponse":            {invalid: withQuery("stream=true&starting_after=-1")},
	"deleteResponse":         {},
	"cancelResponse":         {},
	"listResponseInputItems": {invalid: withQuery("limit=0")},
	"getStatus":              {},
	"listModelPrices":        {},
	"getAccount":             {},
	"getAgentSpend":          {},

	"listRuns":      {query: "status=queued", invalid: withQuery("status=lost")},
	"listAgentRuns": {invalid: withQuery("limit=0")},
	"getRun":        {invalid: withQuery("wait=31")},
	"streamRun":     {header: map[string]string{"Last-Event-ID": "0"}, invalid: withLongAgentID},
	"cancelRun":     {invalid: withLongAgentID},
	"decideApprovals": {body: map[string]any{"decisions": []any{map[string]any{"callId": "call_walked", "approve": true}}},
		invalid: withBody(map[string]any{"decisions": []any{}})},

	"createSchedule": {body: map[string]any{"cron": "0 8 * * *", "text": "walked"},
		invalid: withBody(map[string]any{"cron": "5-1 * * * *", "text": "walked"})},
	"listSchedules":  {invalid: withQuery("limit=0")},
	"getSchedule":    {invalid: withLongAgentID},
	"updateSchedule": {body: map[string]any{"text": "renamed"}, invalid: withBody(map[string]any{"id": "sch_other"})},
	"deleteSchedule": {invalid: withLongAgentID},

	"getA2AAgentCard": {invalid: withLongAgentID},
	"callA2A": {body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
		"params": map[string]any{"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}}},
		invalid: withLongAgentID},
}

// responseOf is the id of a kept response of agent agentID.
func (h *harness) responseOf(t testing.TB, agentID string) string {
	t.Helper()
	res := h.do(request{method: http.MethodPost, path: "/v1/responses", key: h.writeKey, body: responseBody(agentID)})
	if res.Code != http.StatusOK {
		t.Fatalf("create response: %d %s", res.Code, res.Body)
	}
	return res.JSON(t)["id"].(string)
}

// queuedRun is the id of a run of agent agentID that stays queued: it is
// stored as accepted, and no turn runs it.
func (h *harness) queuedRun(agentID string) string {
	h.t.Helper()
	run, _, err := h.store.Runs().AcceptRun(context.Background(), domain.Run{AccountID: h.account.ID, AgentID: agentID,
		Source: domain.SourceAPI, Text: "waiting", MessageID: "msg_walked", Strategy: domain.StrategyEnqueue})
	if err != nil {
		h.t.Fatal(err)
	}
	return run.ID
}

// waitingRun is the id of a run of agent agentID that waits for a
// decision on its call call_walked.
func (h *harness) waitingRun(agentID string) string {
	h.t.Helper()
	ctx := context.Background()
	id := h.queuedRun(agentID)
	if _, started, err := h.store.Runs().StartRun(ctx, id); err != nil || !started {
		h.t.Fatalf("start: %v, %v", started, err)
	}
	steps := []domain.RunStep{{Calls: []domain.StepCall{{ProviderID: "p1", Arguments: "{}", Waits: true,
		Record: domain.ToolCall{ID: "call_walked", Name: "get_price", Arguments: json.RawMessage("{}")}}}}}
	if _, err := h.store.Runs().AwaitDecision(ctx, id, steps, time.Now().Add(time.Hour)); err != nil {
		h.t.Fatal(err)
	}
	return id
}

// endedRun is the id of a run of agent agentID that was cancelled while
// it was queued.
func (h *harness) endedRun(agentID string) string {
	h.t.Helper()
	id := h.queuedRun(agentID)
	if _, err := h.store.Runs().CancelRun(context.Background(), h.account.ID, agentID, id); err != nil {
		h.t.Fatal(err)
	}
	return id
}

// withLongWebhookID swaps the webhook id for one longer than its maxLength.
func withLongWebhookID(r request) request {
	r.path = strings.Replace(r.path, "/webhooks/wh_", "/webhooks/wh_"+strings.Repeat("x", 200), 1)
	return r
}

// withoutQuery drops the query of the valid call.
func withoutQuery(r request) request {
	r.path, _, _ = strings.Cut(r.path, "?")
	return r
}

// withLongLastID makes the id ending the path longer than its maxLength.
func withLongLastID(r request) request {
	r.path += strings.Repeat("x", 100)
	return r
}

func withQuery(q string) func(request) request {
	return func(r request) request { r.path += "?" + q; return r }
}

// withLongConversationID swaps the conversation id for one longer than its
// maxLength.
func withLongConversationID(r request) request {
	r.path = strings.Replace(r.path, "/conversations/conv_", "/conversations/conv_"+strings.Repeat("x", 200), 1)
	return r
}

func withBody(body any) func(request) request {
	return func(r request) request { r.body = body; return r }
}

// withLongMessageID swaps the message id for one longer than its maxLength.
func withLongMessageID(r request) request {
	r.path = strings.Replace(r.path, "/messages/msg_", "/messages/msg_"+strings.Repeat("x", 100), 1)
	return r
}

// withLongAgentID swaps the agent id for one longer than AgentId's maxLength.
func withLongAgentID(r request) request {
	r.path = strings.Replace(r.path, "/agents/agent_", "/agents/agent_"+strings.Repeat("x", 200), 1)
	return r
}

// walkedOperation is one operation of the spec as the walk calls it.
type walkedOperation struct {
	id, method, path string
	op               *openapi3.Operation
	operationCase
}

// request is the operation's valid call on target: an agent id, and a
// conversation id of that agent for the operations on conversations; or a
// webhook id, and a delivery id of that webhook.
func (w walkedOperation) request(key string, target [2]string) request {
	path := strings.NewReplacer("{agentId}", target[0], "{conversationId}", target[1],
		"{webhookId}", target[0], "{deliveryId}", target[1], "{memoryId}", target[1], "{knowledgeId}", target[1], "{messageId}", target[1],
		"{runId}", target[1], "{scheduleId}", target[1], "{responseId}", target[1]).Replace(w.path)
	if w.query != "" {
		path += "?" + w.query
	}
	body := w.body
	if w.bodyFor != nil {
		body = w.bodyFor(target[0])
	}
	return request{method: w.method, path: "/v1" + path, key: key, body: body, header: w.header}
}

func (w walkedOperation) onAgent() bool {
	return strings.Contains(w.path, "{agentId}") || w.bodyFor != nil
}

// sendsMessage reports whether the operation sends its agent a message.
// sendsMessage reports whether the operation sends an agent a message and
// answers its refusals with HTTP statuses (A2A answers them in JSON-RPC).
func (w walkedOperation) sendsMessage() bool {
	return messageLimited[w.id] && w.op.Responses.Status(http.StatusServiceUnavailable) != nil
}

func (w walkedOperation) onWebhook() bool { return strings.Contains(w.path, "{webhookId}") }

// TestEveryResponseIsDeclared provokes every status each operation can
// answer and checks each response against openapi.yaml, headers included
// (harness.do validates), and that the rate-limit headers the server sends
// are declared. It fails when a status the contract declares was not
// provoked, so new responses get a provocation here.
func TestEveryResponseIsDeclared(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.MaxBodyBytes = 4 << 10 })
	refusing := newHarness(t, func(c *harnessConfig) { c.Counter = refusingCounter{} })
	impatient := newHarness(t, func(c *harnessConfig) { c.RunWait = 50 * time.Millisecond })
	broken := newHarness(t)
	if err := broken.store.Close(); err != nil {
		t.Fatal(err)
	}
	var walked []walkedOperation
	for path, item := range h.spec.Paths.Map() {
		for method, op := range item.Operations() {
			id := specOperationID(op)
			oc, ok := operationCases[id]
			if !ok {
				t.Fatalf("operation %s has no entry in operationCases", id)
			}
			walked = append(walked, walkedOperation{id: id, method: method, path: path, op: op, operationCase: oc})
		}
	}
	for _, w := range walked {
		t.Run(w.id, func(t *testing.T) {
			provoked := map[int]bool{}
			// call sends req through hh and checks what the contract cannot
			// say: an authenticated answer carries the rate-limit headers,
			// and a 429 Retry-After.
			call := func(hh *harness, req request, want int, authenticated bool) {
				t.Helper()
				res := hh.with(t).do(req)
				if res.Code != want {
					t.Fatalf("%s %s: %d %s, want %d", req.method, req.path, res.Code, res.Body, want)
				}
				provoked[res.Code] = true
				for _, name := range rateLimitHeaders {
					if authenticated && res.Header.Get(name) == "" {
						t.Errorf("%d lacks %s", res.Code, name)
					}
				}
				if res.Code == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
					t.Error("429 lacks Retry-After")
				}
			}
			// agent makes a fresh target: an agent and, when the operation
			// needs one, a conversation of it.
			// A webhook operation works on the subtest's webhook and a
			// delivery of it: one per subtest keeps the account within its
			// webhook quota.
			var hook [2]string
			if w.onWebhook() {
				hook = h.webhookWithDelivery("https://hooks.example.com/walked")
			}
			agent := func() [2]string {
				if w.onWebhook() {
					return hook
				}
				id := h.createAgent(map[string]any{"name": "walked"})
				switch {
				case strings.Contains(w.path, "{conversationId}"):
					return [2]string{id, h.conversationOf(id, "walker")}
				case strings.Contains(w.path, "{memoryId}"):
					return [2]string{id, h.created(t, "/v1/agents/"+id+"/memories", map[string]any{"text": "walked"})}
				case strings.Contains(w.path, "{messageId}"):
					return [2]string{id, h.streamedReply(id)}
				case strings.HasSuffix(w.path, "{runId}/stream"):
					return [2]string{id, h.endedRun(id)}
				case strings.HasSuffix(w.path, "{runId}/approvals"):
					return [2]string{id, h.waitingRun(id)}
				case strings.Contains(w.path, "{runId}"):
					return [2]string{id, h.queuedRun(id)}
				case strings.Contains(w.path, "{responseId}"):
					return [2]string{id, h.responseOf(t, id)}
				case strings.Contains(w.path, "{scheduleId}"):
					return [2]string{id, h.created(t, "/v1/agents/"+id+"/schedules", map[string]any{"cron": "0 8 * * *", "text": "walked"})}
				case strings.Contains(w.path, "{knowledgeId}"):
					return [2]string{id, h.created(t, "/v1/agents/"+id+"/knowledge", map[string]any{"name": "w.md", "text": "walked"})}
				}
				return [2]string{id, ""}
			}
			missing := [2]string{"agent_missing", "conv_missing"}
			call(h, w.request(h.writeKey, agent()), successStatus(t, w.op), true)
			if w.invalid != nil {
				call(h, w.invalid(w.request(h.writeKey, agent())), 400, true)
			}
			call(h, w.request("", agent()), 401, false)
			call(refusing, w.request(refusing.writeKey, missing), 429, true)
			// The store fails before the key is known, so no limit was taken.
			call(broken, w.request(broken.writeKey, missing), 500, false)
			switch {
			case selfReadBodies[w.id]:
				// JSON-RPC answers a missing agent with its own error.
				call(h, w.request(h.writeKey, missing), 200, true)
			case w.onAgent():
				call(h, w.request(h.writeKey, missing), 404, true)
			}
			if w.onWebhook() {
				call(h, w.request(h.writeKey, [2]string{"wh_missing", "whd_missing"}), 404, true)
			}
			if strings.Contains(w.path, "{responseId}") {
				call(h, w.request(h.writeKey, [2]string{"", "resp_missing"}), 404, true)
			}
			if w.id == "sendMessage" {
				background := w.request(h.writeKey, agent())
				background.body = map[string]any{"text": "later", "background": true}
				call(h, background, 202, true)
			}
			if w.id == "decideApprovals" {
				queued := agent()
				queued[1] = h.queuedRun(queued[0])
				call(h, w.request(h.writeKey, queued), 409, true)
			}
			if w.id == "cancelRun" {
				cancelled := agent()
				call(h, w.request(h.writeKey, cancelled), 200, true)
				call(h, w.request(h.writeKey, cancelled), 409, true)
			}
			if w.id == "testWebhook" {
				disabled := h.webhookWithDelivery("https://hooks.example.com/off")
				if res := h.do(request{method: http.MethodPatch, path: "/v1/webhooks/" + disabled[0], key: h.writeKey,
					body: map[string]any{"enabled": false}}); res.Code != 200 {
					t.Fatalf("disable: %d %s", res.Code, res.Body)
				}
				call(h, w.request(h.writeKey, disabled), 409, true)
			}
			if w.id == "createWebhook" {
				// The quota, in an account of its own so the other
				// subtests keep theirs.
				h.newAccount("hooked", domain.TierEnterprise)
				key := h.newKey("hooked", domain.ScopeWrite)
				for range domain.WebhookQuota {
					if res := h.do(w.request(key, missing)); res.Code != 201 {
						t.Fatalf("create webhook: %d %s", res.Code, res.Body)
					}
				}
				call(h, w.request(key, missing), 403, true)
			}
			if w.method != http.MethodGet && !readingPosts[w.id] {
				call(h, w.request(h.readKey, agent()), 403, true)
			}
			if w.body != nil || w.bodyFor != nil {
				tooLarge, wrongType := w.request(h.writeKey, agent()), w.request(h.writeKey, agent())
				tooLarge.body = `{"pad":"` + strings.Repeat("x", int(h.srv.bodyLimit(w.id))+1) + `"}`
				wrongType.contentType = "text/plain"
				call(h, tooLarge, 413, true)
				call(h, wrongType, 415, true)
			}
			if w.sendsMessage() {
				inactive := agent()
				if res := h.do(request{method: http.MethodPatch, path: "/v1/agents/" + inactive[0], key: h.writeKey, body: map[string]any{"status": "inactive"}}); res.Code != 200 {
					t.Fatalf("deactivate: %d %s", res.Code, res.Body)
				}
				call(h, w.request(h.writeKey, inactive), 503, true)
			}
			if w.op.Responses.Status(http.StatusPaymentRequired) != nil {
				call(h, w.request(h.writeKey, [2]string{h.spentAgent(t)}), 402, true)
			}
			// Conditional requests: a version no resource has fails
			// If-Match; any version matches If-None-Match: *.
			// (A fresh target each: the walk's may be deleted by now.)
			fresh := agent
			if w.onWebhook() {
				fresh = func() [2]string { return h.webhookWithDelivery("https://hooks.example.com/conditional") }
			}
			if w.op.Responses.Status(http.StatusPreconditionFailed) != nil {
				call(h, withHeader(w.request(h.writeKey, fresh()), "If-Match", `"999999"`), 412, true)
			}
			if w.op.Responses.Status(http.StatusNotModified) != nil {
				call(h, withHeader(w.request(h.writeKey, fresh()), "If-None-Match", "*"), 304, true)
			}
			// Idempotency: a key whose first request still runs (claimed
			// here as another replica would) is 409; one that answered
			// another request is 422.
			if w.op.Responses.Status(http.StatusConflict) != nil && w.op.Parameters.GetByInAndName("header", idempotencyHeader) != nil {
				ctx := context.Background()
				claim := func(key string) domain.IdempotencyClaim {
					c, err := h.store.Idempotency().ClaimIdempotencyKey(ctx, domain.IdempotencyRequest{AccountID: h.account.ID,
						Key: key, Fingerprint: "another request", Lease: time.Hour})
					if err != nil {
						t.Fatal(err)
					}
					return c
				}
				busy, used := "walk-busy-"+w.id, "walk-used-"+w.id
				claim(busy)
				call(h, withHeader(w.request(h.writeKey, agent()), idempotencyHeader, busy), 409, true)
				if err := h.store.Idempotency().CompleteIdempotencyKey(ctx, h.account.ID, used, claim(used).Token, domain.IdempotentAnswer{Status: 200}); err != nil {
					t.Fatal(err)
				}
				call(h, withHeader(w.request(h.writeKey, agent()), idempotencyHeader, used), 422, true)
			}
			if w.id == "callMcp" {
				notice := w.request(h.writeKey, agent())
				notice.body = map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}
				call(h, notice, 202, true)
			}
			if w.id == "sendMessage" || w.id == "createChatCompletion" || w.id == "createResponse" {
				streamed := w.request(h.writeKey, agent())
				if w.id == "sendMessage" {
					streamed.body = map[string]any{"text": "hi", "stream": true}
				} else {
					streamed.body.(map[string]any)["stream"] = true
				}
				call(h, streamed, 200, true)
				h.openai.Enqueue(llmtest.Reply{Status: 404, ErrorType: "invalid_request_error", ErrorMessage: "The model `gpt-9` does not exist"})
				call(h, w.request(h.writeKey, agent()), 502, true)
			}
			if w.id == "createChatCompletion" || w.id == "createResponse" {
				// A run in the way under the agent's reject strategy.
				strict := h.createAgent(map[string]any{"name": "strict",
					"settings": map[string]any{"runs": map[string]any{"multitaskStrategy": "reject"}}})
				h.openai.Enqueue(llmtest.Reply{Text: "slow", Delay: 300 * time.Millisecond})
				if res := h.send(strict, map[string]any{"text": "first", "userId": "walker", "background": true}); res.Code != 202 {
					t.Fatalf("background send: %d %s", res.Code, res.Body)
				}
				busy := w.request(h.writeKey, [2]string{strict})
				busy.body.(map[string]any)["user"] = "walker"
				call(h, busy, 409, true)
				// A run that outlasts the wait.
				impatient.openai.Enqueue(llmtest.Reply{Text: "late", Delay: 300 * time.Millisecond})
				slow := impatient.createAgent(map[string]any{"name": "slow"})
				call(impatient, w.request(impatient.writeKey, [2]string{slow}), 504, true)
			}
			for code := range w.op.Responses.Map() {
				if status, err := strconv.Atoi(code); err != nil || !provoked[status] {
					t.Errorf("openapi.yaml declares %s for %s, which this test does not provoke", code, w.id)
				}
			}
		})
	}
}

// spentAgent is a new agent that spent its daily budget of USD 0.000001
// on one priced reply: its next run is refused.
func (h *harness) spentAgent(t testing.TB) string {
	t.Helper()
	id := h.createAgent(map[string]any{"name": "spent", "modelSettings": map[string]any{"price": agentPrice},
		"settings": map[string]any{"budget": map[string]any{"daily": 0.000001}}})
	h.openai.Enqueue(llmtest.Reply{Text: "paid", PromptTokens: 10, CompletionTokens: 10})
	if res := h.send(id, map[string]any{"text": "spend"}); res.Code != http.StatusOK {
		t.Fatalf("spend: %d %s", res.Code, res.Body)
	}
	return id
}

// created POSTs body to path with the write key and returns the id made.
func (h *harness) created(t testing.TB, path string, body any) string {
	t.Helper()
	res := h.do(request{method: http.MethodPost, path: path, key: h.writeKey, body: body})
	if res.Code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, res.Code, res.Body)
	}
	return res.Data(t)["id"].(string)
}

// successStatus returns the lowest 2xx status op declares (MCP's also
// declares 202, for notifications).
func successStatus(t testing.TB, op *openapi3.Operation) int {
	t.Helper()
	lowest := 0
	for code := range op.Responses.Map() {
		if status, err := strconv.Atoi(code); err == nil && status/100 == 2 && (lowest == 0 || status < lowest) {
			lowest = status
		}
	}
	if lowest == 0 {
		t.Fatalf("%s declares no 2xx response", op.OperationID)
	}
	return lowest
}

// TestContractSuitsGeneratedClients checks what makes openapi.yaml clumsy
// for client generators: inline enums (each generator invents its own
// name), the empty string as an enum value, YAML merge keys (not JSON
// Schema, not every YAML parser), a bearer scheme without bearerFormat,
// and a stream event that is not a discriminated union.
func TestContractSuitsGeneratedClients(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "<<:") {
		t.Error("openapi.yaml uses a YAML merge key")
	}
	spec, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	var visit func(where string, ref *openapi3.SchemaRef, component bool)
	visit = func(where string, ref *openapi3.SchemaRef, component bool) {
		if ref == nil || ref.Value == nil || (ref.Ref != "" && !component) {
			return
		}
		s := ref.Value
		if len(s.Enum) > 0 && !component {
			problems = append(problems, where+": inline enum")
		}
		if slices.Contains(s.Enum, any("")) {
			problems = append(problems, where+": empty string in enum")
		}
		for name, p := range s.Properties {
			visit(where+"."+name, p, false)
		}
		visit(where+"[]", s.Items, false)
		visit(where+"{}", s.AdditionalProperties.Schema, false)
		for i, sub := range slices.Concat(s.OneOf, s.AnyOf, s.AllOf) {
			visit(where+"|"+strconv.Itoa(i), sub, false)
		}
	}
	for name, ref := range spec.Components.Schemas {
		visit(name, ref, true)
	}
	for _, p := range spec.Components.Parameters {
		visit("parameter "+p.Value.Name, p.Value.Schema, false)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range op.Parameters {
				visit(method+" "+path+" parameter "+p.Value.Name, p.Value.Schema, false)
			}
		}
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if spec.Components.SecuritySchemes["bearerAuth"].Value.BearerFormat == "" {
		t.Error("bearerAuth has no bearerFormat")
	}
	event := spec.Components.Schemas["StreamEvent"].Value
	if event.Discriminator == nil || event.Discriminator.PropertyName != "type" {
		t.Fatal("StreamEvent is not discriminated by type")
	}
	for _, v := range spec.Components.Schemas["StreamEventType"].Value.Enum {
		target := event.Discriminator.Mapping[v.(string)]
		if !slices.ContainsFunc(event.OneOf, func(r *openapi3.SchemaRef) bool { return r.Ref == target.Ref }) {
			t.Errorf("stream event type %v maps to %q, not a branch of StreamEvent", v, target.Ref)
		}
	}
}
