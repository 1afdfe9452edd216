package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/cronspec"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestConsoleSchedulesInBrowser walks an agent's Schedules tab against a
// real server, in a browser whose own zone is America/New_York:
//   - the new-schedule form starts daily at 09:00 in the browser's zone,
//     with the next five times shown;
//   - an expression that is wrong says why at its field, and shows no times;
//     "Once" asks a date and time instead, and says when that is;
//   - a daily schedule typed in Europe/Berlin shows the five times the
//     server's own cron evaluation (cronspec) gives; created, the list shows
//     it, and the API holds its cron, its zone and, as its next run, the
//     first of the five;
//   - a refusal of the API that names a member shows at that field, which
//     takes the focus;
//   - the tab at 1280 and 390 px, light and dark, fits and is legible;
//   - at 390 px: switched off, the API has it disabled with no next run,
//     and on again; edited, only the text changes; deleted after the
//     confirmation, it is gone from the list and the API.
func TestConsoleSchedulesInBrowser(t *testing.T) {
	b := newBrowserWithin(t, 3*time.Minute)
	openai := llmtest.NewOpenAI(t)
	openai.Respond(llmtest.Reply{Text: "Here is your digest."})
	in, key := bootUnlimited(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL})
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 10 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Herald", "modelProvider": "openai", "model": "gpt-4o-mini"})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	// A one-off two days ahead whose reply also goes to a Telegram chat,
	// so the list holds both kinds.
	r = c.do("POST", "/v1/agents/"+id+"/schedules", key, map[string]any{"name": "Dentist", "text": "Remind ann of the dentist.",
		"at": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339), "timezone": "Asia/Tokyo", "userId": "ann",
		"target": map[string]any{"platform": "telegram", "chatId": "-1001234567890"}})
	expect(t, "a one-off", r, 201, "")

	page := in.base + "/#/agents/" + id + "/schedules"
	next := `[...document.querySelectorAll(".cron-next time")]`
	b.run("the tab", emulation.SetTimezoneOverride("America/New_York"), chromedp.Navigate(in.base+"/"), signInWith(key),
		chromedp.Navigate(page), chromedp.WaitVisible("#cron", chromedp.ByQuery),
		until(`document.querySelector('nav.tabs a[aria-current="page"]')?.textContent === "Schedules"`),
		until(`document.querySelector('tr[data-schedule] td.when')?.textContent.startsWith("once")`),
		until(`document.querySelector("#cron").value === "0 9 * * *" && document.querySelector("#timezone").value === "America/New_York"`),
		until(next+`.length === 5`))
	b.shot("schedules-new")

	b.run("a wrong expression", fill("#cron", "0 25 * * *"),
		until(`document.querySelector("#cron-error")?.textContent === "The hour field: 25 is above 23."`),
		until(`document.querySelector("#cron").getAttribute("aria-invalid") === "true" && !document.querySelector(".cron-next")`))
	b.shot("schedules-invalid")

	// Once: a date and time in the zone, at the next whole hour to begin
	// with; back to the expression, which is kept.
	b.run("once", chromedp.Click("#repeat-once", chromedp.ByQuery),
		until(`document.querySelector("#at")?.type === "datetime-local" && /^\d{4}-\d\d-\d\dT\d\d:00$/.test(document.querySelector("#at").value)`),
		until(`document.querySelector("#at-hint").textContent.startsWith("Fires in ") && !document.querySelector(".cron-next") && !document.querySelector("#cron")`))
	b.shot("schedules-once")
	b.run("back to cron", chromedp.Click("#repeat-cron", chromedp.ByQuery),
		until(`document.querySelector("#cron")?.value === "0 25 * * *"`))

	b.run("a daily schedule in Berlin", fill("#cron", "30 7 * * *"), fill("#timezone", "Europe/Berlin"),
		until(`document.querySelector(".cron-next .label")?.textContent === "Next five times in Europe/Berlin"`),
		until(next+`.length === 5`))
	b.shot("schedules-helper")
	shown := b.times(next)
	b.checkTimes(shown, "30 7 * * *", "Europe/Berlin")

	row := `document.querySelector('tr[data-schedule]:last-child')`
	b.run("create it", fill("#name", "Morning digest"), fill("#text", "Summarize the news for me."),
		chromedp.Click(".schedule-form button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector("#schedules-done")?.textContent.startsWith("Created “Morning digest”")`),
		until(`document.querySelectorAll("tr[data-schedule]").length === 2 && `+row+`.textContent.includes("Morning digest")`))
	b.shot("schedules-created")
	made := c.scheduleNamed(key, id, "Morning digest")
	sid := made["id"].(string)
	if made["cron"] != "30 7 * * *" || made["timezone"] != "Europe/Berlin" || made["userId"] != "schedule" || made["enabled"] != true {
		t.Errorf("the console made %v", made)
	}
	if next, _ := made["nextRunAt"].(string); len(shown) == 0 || !sameInstant(next, shown[0]) {
		t.Errorf("the API's next run is %v; the form showed %v first", made["nextRunAt"], shown)
	}
	// The row says when, where and next, in the schedule's zone.
	if got, _ := b.eval(row + `.textContent`).(string); !strings.Contains(got, "30 7 * * *") || !strings.Contains(got, "Europe/Berlin") ||
		!strings.Contains(got, "never") {
		t.Errorf("the row reads %q", got)
	}

	// A member the form does not check (a user id over 128 characters):
	// the API's refusal shows at its field, which takes the focus.
	b.run("refused", fill("#text", "Again"), fill("#userId", strings.Repeat("u", 129)),
		chromedp.Click(".schedule-form button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector("#userId-error")?.textContent.startsWith("userId")`),
		until(`document.activeElement?.id === "userId" && document.querySelector("#userId").getAttribute("aria-invalid") === "true"`))
	b.shot("schedules-field-error")

	// The walk alternates with the Runs tab, so each visit of the tab is a
	// fresh one (a navigation to the same address keeps the page as it is).
	b.walk(in.base, []consolePage{
		{"agent-runs", "/#/agents/" + id + "/runs", `document.querySelector("#agent-runs-title") && document.body.textContent.includes("No runs yet")`},
		{"schedules", "/#/agents/" + id + "/schedules", `document.querySelectorAll("tr[data-schedule]").length === 2 && ` +
			`document.querySelectorAll(".cron-next li").length === 5 && document.querySelector("#timezone").value === "America/New_York"`},
	})

	// The walk leaves the browser at 390 px, dark: the rest is done there.
	b.schedulesOnPhone(c, key, id, sid)
	b.resetView()
	if bad := b.notFound(); len(bad) > 0 {
		t.Errorf("requests answered 404: %v", bad)
	}
	b.checkOnlyFrom(in.base)
}

// schedulesOnPhone switches schedule sid off and on, edits its text and
// deletes it, on the tab as it is (390 px).
func (b *browser) schedulesOnPhone(c *client, key, agent, sid string) {
	t := b.t
	t.Helper()
	row := fmt.Sprintf(`tr[data-schedule=%q]`, sid)
	sw := row + ` input[role="switch"]`
	q := func(sel string) string { return fmt.Sprintf(`document.querySelector(%s)`, jsString(sel)) }
	b.run("switch it off", chromedp.Navigate(c.base+"/#/agents/"+agent+"/schedules"), until(q(sw)+` && `+q(sw)+`.checked`),
		chromedp.Click(sw, chromedp.ByQuery),
		until(`!`+q(sw)+`.checked && !`+q(sw)+`.disabled && `+q(row+` td.next-run`)+`.textContent === "off"`))
	b.shot("schedules-off")
	got := c.schedule(key, agent, sid)
	if got["enabled"] != false || got["nextRunAt"] != nil {
		t.Errorf("switched off, the schedule is %v", got)
	}
	b.run("switch it on", chromedp.Click(sw, chromedp.ByQuery),
		until(q(sw)+`.checked && !`+q(sw)+`.disabled && `+q(row+` td.next-run time`)))
	if got := c.schedule(key, agent, sid); got["enabled"] != true || got["nextRunAt"] == nil {
		t.Errorf("switched on again, the schedule is %v", got)
	}

	b.run("edit it", chromedp.Click(row+` button.edit-schedule`, chromedp.ByQuery),
		until(`document.activeElement?.id === "schedule-form-title" && document.activeElement.textContent === "Edit “Morning digest”"`),
		until(`document.querySelector("#cron").value === "30 7 * * *" && document.querySelector("#timezone").value === "Europe/Berlin"`),
		fill("#text", "Summarize the news, briefly."))
	b.shot("schedules-edit")
	b.run("save it", chromedp.Click(".schedule-form button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector("#schedules-done")?.textContent.startsWith("Saved “Morning digest”")`),
		until(`document.querySelector("#schedule-form-title").textContent === "New schedule"`))
	if got := c.schedule(key, agent, sid); got["text"] != "Summarize the news, briefly." || got["cron"] != "30 7 * * *" ||
		got["timezone"] != "Europe/Berlin" || got["name"] != "Morning digest" {
		t.Errorf("after the edit the schedule is %v", got)
	}

	b.run("ask to delete it", chromedp.Click(row+` td.row-actions button.danger`, chromedp.ByQuery),
		until(q(row+` [role="alertdialog"]`)+`?.textContent.includes("Delete the schedule “Morning digest”?")`))
	b.shot("schedules-confirm")
	b.checkFits("the delete confirmation at 390px", 390)
	b.run("delete it", chromedp.Click(row+` [role="alertdialog"] button.danger`, chromedp.ByQuery),
		until(`!`+q(row)+` && document.querySelectorAll("tr[data-schedule]").length === 1`),
		until(`document.querySelector("#schedules-done")?.textContent === "Deleted “Morning digest”."`))
	b.shot("schedules-deleted")
	expect(t, "the deleted schedule", c.do("GET", "/v1/agents/"+agent+"/schedules/"+sid, key, nil), 404, "SCHEDULE_NOT_FOUND")
}

// times reads the datetime of each element the expression list gives.
func (b *browser) times(list string) []string {
	b.t.Helper()
	var out []string
	for _, v := range asList(b.eval(list + `.map(t => t.dateTime)`)) {
		out = append(out, v.(string))
	}
	return out
}

// checkTimes fails unless shown are five due times of expr in zone as the
// server's cronspec finds them: one after the other from the first, which
// lies within a day from now.
func (b *browser) checkTimes(shown []string, expr, zone string) {
	t := b.t
	t.Helper()
	spec, err := cronspec.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := cronspec.Zone(zone)
	if err != nil {
		t.Fatal(err)
	}
	if len(shown) != 5 {
		t.Fatalf("the form shows %d times: %v", len(shown), shown)
	}
	first, err := time.Parse(time.RFC3339, shown[0])
	if err != nil {
		t.Fatalf("the first time %q: %v", shown[0], err)
	}
	if until := time.Until(first); until <= -time.Minute || until > 24*time.Hour {
		t.Errorf("the first time shown, %v, is not within the coming day", first)
	}
	want := []string{}
	for at := spec.Next(first.Add(-time.Second), loc); len(want) < 5; at = spec.Next(at, loc) {
		want = append(want, at.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	if fmt.Sprint(shown) != fmt.Sprint(want) {
		t.Errorf("the form shows %v; cronspec gives %v", shown, want)
	}
}

// sameInstant reports whether two RFC 3339 timestamps name one instant.
func sameInstant(a, b string) bool {
	x, errA := time.Parse(time.RFC3339, a)
	y, errB := time.Parse(time.RFC3339, b)
	return errA == nil && errB == nil && x.Equal(y)
}

// schedule reads one schedule of the agent.
func (c *client) schedule(key, agent, id string) map[string]any {
	c.t.Helper()
	r := c.do("GET", "/v1/agents/"+agent+"/schedules/"+id, key, nil)
	expect(c.t, "get the schedule", r, 200, "")
	return r.data(c.t)
}

// scheduleNamed finds the agent's schedule called name.
func (c *client) scheduleNamed(key, agent, name string) map[string]any {
	c.t.Helper()
	r := c.do("GET", "/v1/agents/"+agent+"/schedules", key, nil)
	expect(c.t, "list the schedules", r, 200, "")
	for _, s := range asList(r.data(c.t)["items"]) {
		if m := s.(map[string]any); m["name"] == name {
			return m
		}
	}
	c.t.Fatalf("no schedule named %q: %s", name, r.body)
	return nil
}
