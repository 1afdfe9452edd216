package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestScheduleAPI: the schedules through the API, on both databases: the
// members as created and defaulted, the 400s naming the member at fault
// (a PATCH of a member Create does not take included), null clearing a
// member, the quota's 403 with its details, and SCHEDULE_NOT_FOUND.
func TestScheduleAPI(t *testing.T) {
	for name, h := range map[string]*harness{"sqlite": newHarness(t), "postgres": newHarnessPostgres(t)} {
		t.Run(name, func(t *testing.T) { scheduleAPI(t, h.with(t)) })
	}
}

func scheduleAPI(t *testing.T, h *harness) {
	agent := h.createAgent(map[string]any{"name": "clocked"})
	base := "/v1/agents/" + agent + "/schedules"
	res := h.do(request{method: "POST", path: base, key: h.writeKey, body: map[string]any{
		"name": "Morning digest", "cron": "0 8 * * 1-5", "timezone": "Europe/Berlin", "text": "Summarize the news.",
		"target": map[string]any{"platform": "telegram", "chatId": "-1001234567890"}}})
	if res.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Code, res.Body)
	}
	created := res.Data(t)
	id, _ := created["id"].(string)
	next, _ := time.Parse(time.RFC3339, created["nextRunAt"].(string))
	if !strings.HasPrefix(id, "sch_") || created["userId"] != domain.DefaultScheduleUser || created["at"] != nil ||
		created["enabled"] != true || created["lastRunAt"] != nil || next.In(berlin(t)).Hour() != 8 {
		t.Fatalf("created %v", created)
	}

	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		method, path string
		body         map[string]any
		field        string
	}{
		{"POST", base, map[string]any{"text": "neither"}, "cron"},
		{"POST", base, map[string]any{"text": "both", "cron": "@daily", "at": at}, "cron"},
		{"POST", base, map[string]any{"text": "reversed", "cron": "5-1 * * * *"}, "cron"},
		{"POST", base, map[string]any{"text": "every", "cron": "@every 5m"}, "cron"},
		{"POST", base, map[string]any{"text": "zone", "cron": "@daily", "timezone": "Mars/Olympus"}, "timezone"},
		{"POST", base, map[string]any{"text": "past", "at": "2020-01-01T00:00:00Z"}, "at"},
		{"POST", base, map[string]any{"text": "far", "at": time.Now().AddDate(1, 1, 0).UTC().Format(time.RFC3339)}, "at"},
		{"POST", base, map[string]any{"text": "not a time", "at": "tomorrow"}, "at"},
		{"POST", base, map[string]any{"text": "", "cron": "@daily"}, "text"},
		{"POST", base, map[string]any{"text": "x", "cron": "@daily", "target": map[string]any{"platform": "x", "chatId": "1"}}, "target.platform"},
		{"PATCH", base + "/" + id, map[string]any{"nextRunAt": at}, "nextRunAt"},
		{"PATCH", base + "/" + id, map[string]any{"id": "sch_other"}, "id"},
		{"PATCH", base + "/" + id, map[string]any{"cron": "61 * * * *"}, "cron"},
	} {
		res := h.do(request{method: c.method, path: c.path, key: h.writeKey, body: c.body})
		if res.Code != http.StatusBadRequest || res.Details(t)["field"] != c.field {
			t.Errorf("%s %v: %d %s, want 400 naming %s", c.method, c.body, res.Code, res.Body, c.field)
		}
	}

	patched := h.do(request{method: "PATCH", path: base + "/" + id, key: h.writeKey,
		body: map[string]any{"at": at, "target": nil, "name": nil, "enabled": true}})
	if patched.Code != 200 {
		t.Fatalf("patch: %d %s", patched.Code, patched.Body)
	}
	if d := patched.Data(t); d["cron"] != nil || d["target"] != nil || d["name"] != nil || d["nextRunAt"] != strings.Replace(at, "Z", ".000Z", 1) {
		t.Fatalf("patched %v", d)
	}
	list := h.do(request{method: "GET", path: base + "?limit=1", key: h.readKey})
	if items, _ := list.Data(t)["items"].([]any); list.Code != 200 || len(items) != 1 {
		t.Fatalf("list: %d %s", list.Code, list.Body)
	}
	if res := h.do(request{method: "DELETE", path: base + "/" + id, key: h.writeKey}); res.Code != 200 || res.Data(t)["id"] != id {
		t.Fatalf("delete: %d %s", res.Code, res.Body)
	}
	for _, r := range []request{{method: "GET"}, {method: "PATCH", body: map[string]any{"text": "x"}}, {method: "DELETE"}} {
		r.path, r.key = base+"/"+id, h.writeKey
		if res := h.do(r); res.Code != 404 || res.ErrorCode(t) != "SCHEDULE_NOT_FOUND" {
			t.Errorf("%s of a deleted schedule: %d %s", r.method, res.Code, res.Body)
		}
	}

	for range domain.ScheduleQuota {
		if res := h.do(request{method: "POST", path: base, key: h.writeKey, body: map[string]any{"cron": "@hourly", "text": "tick"}}); res.Code != 201 {
			t.Fatalf("create: %d %s", res.Code, res.Body)
		}
	}
	full := h.do(request{method: "POST", path: base, key: h.writeKey, body: map[string]any{"cron": "@hourly", "text": "one more"}})
	if d := full.Details(t); full.Code != 403 || full.ErrorCode(t) != "INSUFFICIENT_QUOTA" || d["quota"] != float64(domain.ScheduleQuota) || d["used"] != float64(domain.ScheduleQuota) {
		t.Errorf("past the quota: %d %s", full.Code, full.Body)
	}
}

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
