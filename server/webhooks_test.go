package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store"
)

func TestWebhookAPI(t *testing.T) {
	for name, h := range map[string]*harness{"sqlite": newHarness(t), "postgres": newHarnessPostgres(t)} {
		t.Run(name, func(t *testing.T) { webhookAPI(t, h.with(t)) })
	}
}

func webhookAPI(t *testing.T, h *harness) {
	agent := h.createAgent(map[string]any{"name": "hooked"})
	res := h.do(request{method: "POST", path: "/v1/webhooks", key: h.writeKey,
		body: map[string]any{"url": "https://hooks.example.com/a", "events": []string{"message.completed"}, "agentId": agent}})
	if res.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Code, res.Body)
	}
	created := res.Data(t)
	id, secret := created["id"].(string), created["secret"].(string)
	if !strings.HasPrefix(id, "wh_") || !strings.HasPrefix(secret, store.SecretPrefix) || created["agentId"] != agent {
		t.Fatalf("created %v", created)
	}
	// The secret is shown on create and rotate only.
	got := h.do(request{method: "GET", path: "/v1/webhooks/" + id, key: h.readKey})
	if got.Code != 200 || strings.Contains(string(got.Body), secret) || got.Data(t)["secret"] != nil {
		t.Fatalf("get: %d %s", got.Code, got.Body)
	}
	// Operations without a body are called without one, and no Content-Type.
	rotated := h.do(request{method: "POST", path: "/v1/webhooks/" + id + "/rotate-secret", key: h.writeKey})
	if rotated.Code != 200 || rotated.Data(t)["secret"] == secret {
		t.Fatalf("rotate: %d %s", rotated.Code, rotated.Body)
	}
	if res := h.do(request{method: "POST", path: "/v1/webhooks/" + id + "/test", key: h.writeKey}); res.Code != http.StatusAccepted || len(res.Body) != 0 {
		t.Fatalf("test: %d %s", res.Code, res.Body)
	}
	list := h.do(request{method: "GET", path: "/v1/webhooks/" + id + "/deliveries?status=pending", key: h.readKey})
	items, _ := list.Data(t)["items"].([]any)
	if list.Code != 200 || len(items) != 1 {
		t.Fatalf("deliveries: %d %s", list.Code, list.Body)
	}
	delivery := items[0].(map[string]any)["id"].(string)
	if res := h.do(request{method: "POST", path: "/v1/webhooks/" + id + "/deliveries/" + delivery + "/retry", key: h.writeKey}); res.Code != http.StatusAccepted {
		t.Fatalf("retry: %d %s", res.Code, res.Body)
	}
	if res := h.do(request{method: "POST", path: "/v1/webhooks/" + id + "/deliveries/whd_missing/retry", key: h.writeKey}); res.ErrorCode(t) != "DELIVERY_NOT_FOUND" {
		t.Errorf("retry of a missing delivery: %d %s", res.Code, res.Body)
	}

	// PATCH reports what changed; a bad url is refused naming the field.
	patched := h.do(request{method: "PATCH", path: "/v1/webhooks/" + id, key: h.writeKey,
		body: map[string]any{"description": "ops", "enabled": true}})
	if patched.Code != 200 || strings.Join(toStrings(patched.Data(t)["changes"]), ",") != "description" {
		t.Fatalf("patch: %d %s", patched.Code, patched.Body)
	}
	for _, bad := range []string{"ftp://hooks.example.com/a", "https://", "not a url", "https://user:pw@hooks.example.com/"} {
		res := h.do(request{method: "PATCH", path: "/v1/webhooks/" + id, key: h.writeKey, body: map[string]any{"url": bad}})
		if res.Code != 400 || res.Details(t)["field"] != "url" {
			t.Errorf("url %q: %d %s", bad, res.Code, res.Body)
		}
	}
	if res := h.do(request{method: "POST", path: "/v1/webhooks", key: h.writeKey,
		body: map[string]any{"url": "https://hooks.example.com/a", "events": []string{"*"}, "agentId": "agent_missing"}}); res.Code != 400 || res.Details(t)["field"] != "agentId" {
		t.Errorf("unknown agentId: %d %s", res.Code, res.Body)
	}

	// Another account sees none of it.
	h.newAccount("other", domain.TierEnterprise)
	other := h.newKey("other", domain.ScopeWrite)
	for _, r := range []request{
		{method: "GET", path: "/v1/webhooks/" + id},
		{method: "PATCH", path: "/v1/webhooks/" + id, body: map[string]any{"enabled": false}},
		{method: "POST", path: "/v1/webhooks/" + id + "/rotate-secret"},
		{method: "POST", path: "/v1/webhooks/" + id + "/test"},
		{method: "GET", path: "/v1/webhooks/" + id + "/deliveries"},
		{method: "POST", path: "/v1/webhooks/" + id + "/deliveries/" + delivery + "/retry"},
		{method: "DELETE", path: "/v1/webhooks/" + id},
	} {
		r.key = other
		if res := h.do(r); res.Code != 404 || res.ErrorCode(t) != "WEBHOOK_NOT_FOUND" {
			t.Errorf("%s %s from another account: %d %s", r.method, r.path, res.Code, res.Body)
		}
	}
	if res := h.do(request{method: "GET", path: "/v1/webhooks", key: other}); len(res.Data(t)["items"].([]any)) != 0 {
		t.Errorf("another account lists %s", res.Body)
	}
	if res := h.do(request{method: "DELETE", path: "/v1/webhooks/" + id, key: h.writeKey}); res.Code != 200 {
		t.Fatalf("delete: %d %s", res.Code, res.Body)
	}
	if res := h.do(request{method: "GET", path: "/v1/webhooks/" + id + "/deliveries", key: h.readKey}); res.Code != 404 {
		t.Errorf("deliveries of a deleted webhook: %d", res.Code)
	}
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, len(list))
	for i, x := range list {
		out[i], _ = x.(string)
	}
	return out
}
