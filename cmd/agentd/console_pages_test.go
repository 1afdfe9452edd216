package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// markdownReply is what the fake model answers by default: markdown with a
// link, a code block and a link that must not become one.
const markdownReply = "Here is **bold** text, a [safe link](https://example.com/docs) and a " +
	"[trap](javascript:alert(1)).\n\n```go\nfmt.Println(\"hi\")\n```\n\n- one\n- two"

// TestConsolePagesInBrowser walks the console as a newcomer found it
// wanting, then every page at 1280 and 390 px in the light and the dark
// theme, in one browser against one server:
//   - the playground: Enter while a reply streams sends nothing more; the
//     header's metrics move after a turn (read past the browser's cache);
//     replies render as markdown (a javascript: link refused) with copy
//     buttons; a temperature set beside the chat reaches the model with
//     the next message;
//   - conversations are listed by title and found by their words;
//   - the theme toggle is kept across a reload;
//   - runs: a message sent in the background from the playground shows
//     its run, then its reply; a slow run is cancelled from its page;
//   - every page: no sideways scrolling, every button and link legible
//     against what is behind it (white on white was), a screenshot each;
//   - no request answered 404 (the favicon was) and none left this host;
//   - on a server with no provider key, the overview says what to set;
//   - budgets: each reply says what it cost, the agent's page shows its
//     spend against its budgets and the overview the account's, the form
//     shows the budget, and a budget reached is marked on the agent's bar
//     and refuses a message saying which budget.
func TestConsolePagesInBrowser(t *testing.T) {
	b := newBrowserWithin(t, 4*time.Minute)
	hooks := newReceiver(t)
	// The action's result is long, so history shows "Show the whole result".
	handler := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"symbol":"ADA","price":0.42,"history":[`+strings.Repeat(`0.41,`, 80)+`0.42]}`)
	}))
	t.Cleanup(handler.Close)
	openai := llmtest.NewOpenAI(t)
	openai.Respond(llmtest.Reply{Text: markdownReply, PromptTokens: 30, CompletionTokens: 12})
	in, key := bootUnlimited(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL,
		"AGENTD_PROVIDER_TIMEOUT": "10s", "AGENTD_ALLOW_PRIVATE_NETWORKS": "true", "AGENTD_WEBHOOK_ALLOW_PRIVATE": "true"})
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 10 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Ticker", "modelProvider": "openai", "model": "gpt-4o-mini",
		"bio": []string{"Knows token prices."}, "settings": map[string]any{"budget": map[string]any{"daily": 5, "monthly": 100}},
		"actions": []map[string]any{{"name": "get_price", "description": "Look up a token price", "examples": []string{},
			"handler": handler.URL + "/price", "parameters": map[string]any{"type": "object",
				"properties": map[string]any{"symbol": map[string]any{"type": "string"}}}}}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	// One conversation with a tool step, for history and the overview.
	openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "get_price", Arguments: `{"symbol":"ADA"}`}}})
	expect(t, "seed a conversation", c.do("POST", "/v1/agents/"+id+"/messages", key,
		map[string]any{"text": "What does ADA cost today?", "userId": "ann"}), 200, "")
	r = c.do("GET", "/v1/runs?agentId="+id, key, nil)
	expect(t, "the seed's run", r, 200, "")
	seedRun := asList(r.data(t)["items"])[0].(map[string]any)["id"].(string)
	r = c.do("POST", "/v1/webhooks", key, map[string]any{"url": hooks.URL + "/hook", "events": []string{"agent.deleted"}})
	expect(t, "create a webhook", r, 201, "")
	webhook := r.data(t)["id"].(string)

	b.run("sign in", chromedp.Navigate(in.base+"/"), signInWith(key),
		until(`document.querySelector(".recent a")?.textContent.length > 0`))
	b.playground(in.base, id, openai, func() float64 {
		r := c.do("GET", "/v1/agents/"+id, key, nil)
		expect(t, "get the agent", r, 200, "")
		return r.data(t)["metrics"].(map[string]any)["totalMessages"].(float64)
	})
	b.conversations(in.base, id)
	b.runs(in.base, id, openai, c, key)
	b.themeToggle()
	r = c.do("GET", "/v1/agents/"+id+"/conversations?userId=ann", key, nil)
	expect(t, "ann's conversation", r, 200, "")
	b.pages(in.base, id, webhook, asList(r.data(t)["items"])[0].(map[string]any)["id"].(string), seedRun)
	b.resetView()
	b.budgetReached(in.base, id, c, key)

	if bad := b.notFound(); len(bad) > 0 {
		t.Errorf("requests answered 404: %v", bad)
	}
	if !containsAny(b.requested(), "/ui/favicon.svg") {
		t.Errorf("the pages never asked for their icon: %v", b.requested())
	}
	b.checkOnlyFrom(in.base)

	// A server with no provider key: the overview says what to set, and
	// that there are no agents yet.
	bare := boot(t, nil, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	b.run("no provider key", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(bare.base+"/"),
		signInWith(keyFrom(t, bare.stdout.String())),
		until(`document.querySelector(".provider-notice")?.textContent.includes("No provider key is configured: set OPENAI_API_KEY")`),
		until(`document.querySelector(".empty")?.textContent.includes("No agents yet")`))
	b.shot("no-provider")
}

// pressEnter presses Enter in the element sel as a person does: one key
// down that would type a line break unless the page prevents it. (SendKeys
// sends the character as an event of its own, which no handler can stop.)
func pressEnter(sel string) chromedp.Action {
	return chromedp.Tasks{chromedp.Focus(sel, chromedp.ByQuery),
		input.DispatchKeyEvent(input.KeyDown).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13).WithText("\r"),
		input.DispatchKeyEvent(input.KeyUp).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13)}
}

// header is the agent header's line of metrics.
const header = `document.querySelector(".agent-head p.meta").textContent`

// playground checks the defects of the chat and the playground's parts;
// exchanges is the agent's count of exchanges, as the API has it.
func (b *browser) playground(base, id string, openai *llmtest.Server, exchanges func() float64) {
	t := b.t
	t.Helper()
	// A reply that stalls after its first fragment, so it is still
	// streaming when Enter is pressed again.
	openai.Enqueue(llmtest.Reply{Fragments: []string{"Thinking", " more"}, StallMidStream: true, FailAfter: 1})
	before := openai.Count()
	b.run("playground", chromedp.Navigate(base+"/#/agents/"+id+"/chat"), chromedp.WaitVisible("#text", chromedp.ByQuery),
		until(`document.querySelector(".config .tool-list")?.textContent.includes("get_price")`),
		until(header+`.includes("1 exchanges answered")`),
		fill("#text", "First question"), pressEnter("#text"),
		until(`document.querySelector('.turn.agent .text[data-streaming="true"]')?.textContent.startsWith("Thinking")`),
		fill("#text", "Second question"), pressEnter("#text"),
		pressEnter("#text"), chromedp.Sleep(300*time.Millisecond))
	b.shot("playground-busy")
	if n := b.eval(`document.querySelectorAll(".turn.user").length`); n != float64(1) {
		t.Errorf("Enter while a reply streams sent again: %v user turns", n)
	}
	if got := b.eval(`document.querySelector("#text").value`); got != "Second question" {
		t.Errorf("the message typed while busy became %q; it must wait in the box", got)
	}
	if n := openai.Count() - before; n != 1 {
		t.Errorf("the provider got %d requests while one reply streamed", n)
	}
	b.run("stop", chromedp.Click("form.send button[type=button]", chromedp.ByQuery),
		until(`!document.querySelector('[data-streaming="true"]') && !document.querySelector("form.send button[type=button]")`))

	// The metrics move after a turn, without leaving the tab, to what the
	// API counts. (The stopped turn may still be counted: let it settle.)
	shown := `parseInt(` + header + `.match(/(\d+) exchanges/)[1])`
	b.run("settle", chromedp.Sleep(500*time.Millisecond))
	count, _ := b.eval(shown).(float64)
	b.run("a whole turn", pressEnter("#text"),
		until(`document.querySelectorAll(".turn.agent .meta").length === 2`),
		until(fmt.Sprintf(shown+` > %d`, int(count))))
	if got, want := b.eval(shown), exchanges(); got != want {
		t.Errorf("the header counts %v exchanges, the API %v", got, want)
	}

	reply := `[...document.querySelectorAll(".turn.agent .text")].pop()`
	if got := b.eval(reply + `.querySelector("strong")?.textContent`); got != "bold" {
		t.Errorf("**bold** renders as %v", b.eval(reply+`.innerHTML`))
	}
	if got := b.eval(reply + `.querySelector("a")?.outerHTML`); got != `<a href="https://example.com/docs" target="_blank" rel="noopener noreferrer">safe link</a>` {
		t.Errorf("the safe link renders as %v", got)
	}
	if got := b.eval(reply + `.querySelectorAll("a").length`); got != float64(1) {
		t.Errorf("the javascript: link became a link: %v", b.eval(reply+`.innerHTML`))
	}
	if got := b.eval(reply + `.querySelector(".code pre code")?.textContent`); got != `fmt.Println("hi")` {
		t.Errorf("the code block renders as %v", got)
	}
	b.run("copy the code", chromedp.Evaluate(`document.querySelector(".turn.agent:last-child .code button.copy").click()`, nil),
		until(`document.querySelector(".turn.agent:last-child .code button.copy").textContent.startsWith("Copied")`))
	if got := b.eval(`[...document.querySelectorAll(".turn.agent")].pop().querySelector(".turn-head button.copy") !== null`); got != true {
		t.Errorf("the reply has no copy button")
	}
	// 30 tokens in and 12 out at gpt-4o-mini's $0.15 and $0.60 a million.
	if got, _ := b.eval(`[...document.querySelectorAll(".turn.agent .meta")].pop().textContent`).(string); !strings.Contains(got, "$0.000012 · 42 tokens (30 in, 12 out)") {
		t.Errorf("the reply's line reads %q; want its cost and tokens", got)
	}
	b.shot("playground-markdown")

	// A temperature set beside the chat reaches the model with the next
	// message.
	b.run("set a temperature", fill("#temperature", "0.3"),
		until(`document.querySelector(".config .pending")`),
		fill("#text", "And now?"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(`document.querySelectorAll(".turn.agent .meta").length === 3`),
		until(`!document.querySelector(".config .pending")`))
	if got := openai.Last(t).Body["temperature"]; got != 0.3 {
		t.Errorf("the model was asked with temperature %v; want the 0.3 set beside the chat", got)
	}
	b.shot("playground-applied")
}

// conversations checks the list: titled by the first user message, with
// who and where, and searched by words.
func (b *browser) conversations(base, id string) {
	t := b.t
	t.Helper()
	rows := `[...document.querySelectorAll("section[aria-labelledby=conversations-title] tbody tr")]`
	b.run("conversations", chromedp.Navigate(base+"/#/agents/"+id+"/conversations"), until(rows+`.length === 2`))
	if got, _ := b.eval(rows + `.map(r => r.textContent).join("|")`).(string); !strings.Contains(got, "What does ADA cost today?") ||
		!strings.Contains(got, "user ann") || !strings.Contains(got, "First question") {
		t.Errorf("the conversations read %q; want them titled by their first message, with whom", got)
	}
	b.run("search", fill("#conversations-q", "ADA cost"), chromedp.Click("form.conversation-search button[type=submit]", chromedp.ByQuery),
		until(rows+`.length === 1 && `+rows+`[0].textContent.includes("What does ADA cost today?")`))
	b.run("clear the search", chromedp.Click("form.conversation-search button.quiet", chromedp.ByQuery), until(rows+`.length === 2`))
}

// runs checks the playground's background send, whose run shows in the
// reply's place until its reply replaces it, and Cancel on the page of a
// run whose model is slow.
func (b *browser) runs(base, id string, openai *llmtest.Server, c *client, key string) {
	t := b.t
	t.Helper()
	last := `[...document.querySelectorAll(".turn.agent")].pop()`
	b.backgroundSend(base, id, last, openai)

	// A run whose model takes 20 s, sent by another client that waits for
	// it: cancelled from its page, it ends cancelled there and in the API.
	openai.Enqueue(llmtest.Reply{Text: "Too late.", Delay: 20 * time.Second})
	// Plain net/http: c.do may call t.Fatal, which only the test's own
	// goroutine may.
	sent := make(chan error, 1)
	go func() {
		req, err := http.NewRequest("POST", base+"/v1/agents/"+id+"/messages",
			strings.NewReader(`{"text":"Take your time","userId":"slow"}`))
		if err != nil {
			sent <- err
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			err = res.Body.Close()
		}
		sent <- err
	}()
	var run string
	for deadline := time.Now().Add(10 * time.Second); run == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r := c.do("GET", "/v1/runs?agentId="+id+"&status=running", key, nil)
		expect(t, "the slow run", r, 200, "")
		if items := asList(r.data(t)["items"]); len(items) > 0 {
			run = items[0].(map[string]any)["id"].(string)
		}
	}
	if run == "" {
		t.Fatal("the slow message's run never ran")
	}
	b.run("a slow run's page", chromedp.Navigate(base+"/#/agents/"+id+"/runs/"+run),
		until(`document.querySelector(".run-page .status.run-running") && document.querySelector("button.cancel-run")`))
	b.shot("run-slow")
	b.run("cancel it", chromedp.Click("button.cancel-run", chromedp.ByQuery),
		until(`document.querySelector(".run-page .title-row .status.run-cancelled") && !document.querySelector("button.cancel-run")`))
	b.shot("run-cancelled")
	r := c.do("GET", "/v1/agents/"+id+"/runs/"+run, key, nil)
	expect(t, "the cancelled run", r, 200, "")
	if got := r.data(t)["status"]; got != "cancelled" {
		t.Errorf("after Cancel the run is %v", got)
	}
	select {
	case <-sent:
	case <-time.After(15 * time.Second):
		t.Error("the cancelled run's Send Message still waits")
	}
}

// backgroundSend sends a message from the playground with "Run in the
// background": its run shows in the reply's place at once, and its reply
// there when it has ended; last is the last reply.
func (b *browser) backgroundSend(base, id, last string, openai *llmtest.Server) {
	t := b.t
	t.Helper()
	b.run("background send", chromedp.Navigate(base+"/#/agents/"+id+"/chat"), chromedp.WaitVisible("#text", chromedp.ByQuery),
		chromedp.Click("#background", chromedp.ByQuery), until(`document.querySelector("#background").checked`),
		fill("#text", "Later, please"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector(".run-chip a[href^='#/agents/`+id+`/runs/run_']")`),
		until(last+`.querySelector(".run-chip .status.run-completed") && `+last+`.querySelector(".text strong")?.textContent === "bold"`))
	b.shot("playground-background")
	if !containsAny(b.requested(), "wait=30") {
		t.Errorf("the console did not follow the background run with ?wait=30: %v", b.requested())
	}
	if got := openai.Last(t).Body["messages"]; !strings.Contains(fmt.Sprint(got), "Later, please") {
		t.Errorf("the model was not asked the background message: %v", got)
	}
}

// themeToggle checks that the toggle switches the theme and that the
// choice is kept across a reload; it then forgets the choice, so the
// pages follow the system's setting.
func (b *browser) themeToggle() {
	t := b.t
	t.Helper()
	b.run("dark", chromedp.Click("header button.theme-toggle", chromedp.ByQuery),
		until(`document.documentElement.dataset.theme === "dark"`), chromedp.Reload(),
		chromedp.WaitVisible("header button.theme-toggle", chromedp.ByQuery))
	if got := b.eval(`document.documentElement.dataset.theme + " " + getComputedStyle(document.documentElement).backgroundColor`); got != "dark rgb(14, 17, 22)" {
		t.Errorf("after a reload the theme is %v; want dark kept", got)
	}
	b.run("forget the theme", chromedp.Evaluate(`localStorage.removeItem("agentd.theme")`, nil), chromedp.Reload(),
		chromedp.WaitVisible("header button.theme-toggle", chromedp.ByQuery))
}

// consolePage is a page of the walk: its route and when it has loaded.
type consolePage struct{ name, route, ready string }

// pages visits every page at 1280 and 390 px, light and dark: conv is a
// conversation with a tool step, run the run that made it.
func (b *browser) pages(base, id, webhook, conv, run string) {
	agent := "/#/agents/" + id
	pages := []consolePage{
		{"overview", "/#/overview", `document.querySelector(".recent li") && document.querySelector(".by-status") && document.querySelector(".run-totals") && document.querySelector(".spend-card .spend")`},
		{"runs", "/#/runs", `document.querySelector("section[aria-labelledby=runs-title] tbody tr .status.run-completed")`},
		// The overview's counts link to the list filtered by their status.
		{"runs-failed", "/#/runs?status=failed", `document.querySelector("#run-status")?.value === "failed" && document.body.textContent.includes("No runs with status “failed”")`},
		{"approvals-empty", "/#/approvals", `document.querySelector("#approvals-title") && document.body.textContent.includes("Nothing waits for a decision")`},
		{"agent-runs", agent + "/runs", `document.querySelector("section[aria-labelledby=agent-runs-title] tbody tr")`},
		{"run", agent + "/runs/" + run, `document.querySelector(".run-page .tool-call.ok") && document.querySelector(".run-page .status.run-completed")`},
		{"agents", "/#/agents", `document.querySelector("section[aria-labelledby=agents-title] tbody tr")`},
		{"new-agent", "/#/agents/new", `document.querySelector("#name")`},
		{"playground", agent + "/chat", `document.querySelector(".config .tool-list")`},
		{"settings", agent, `document.querySelector("section.tools[aria-busy=false] tbody tr") && document.querySelector("#budget-daily").value === "5" && document.querySelector(".agent-spend .spend-bar")`},
		{"conversations", agent + "/conversations", `document.querySelector("section[aria-labelledby=conversations-title] tbody tr")`},
		{"memory", agent + "/memory", `document.querySelector("#memory-title") && document.body.textContent.includes("No memories yet")`},
		{"knowledge", agent + "/knowledge", `document.querySelector("#knowledge-file") && document.body.textContent.includes("No documents yet")`},
		{"context", agent + "/context", `document.querySelector("form.context-form")`},
		{"analytics", agent + "/analytics", `document.querySelectorAll(".chart canvas").length === 4 && document.querySelector(".totals").textContent.includes("Cost$0.0")`},
		{"connections", agent + "/connections", `document.querySelector("#connections-title")`},
		{"webhooks", "/#/webhooks", `document.querySelector("a[href='#/webhooks/` + webhook + `']")`},
		{"webhook", "/#/webhooks/" + webhook, `document.querySelector("#webhook-title") && document.body.textContent.includes("No deliveries")`},
		{"signin", "/#/signin", `document.querySelector("#api-key")`},
		// Swagger UI's own colours are its own: the API reference is only
		// checked to fit.
		{"docs", "/docs", `!!document.querySelector(".opblock") && !!document.querySelector("nav a[href='/']")`},
	}
	pages = append(pages, consolePage{"conversation", agent + "/conversations/" + conv,
		`document.querySelector(".transcript .tool-call.ok") && document.querySelector(".transcript .tool-call button.link")`})
	b.walk(base, pages)
}

// walk visits pages at 1280 and 390 px, light and dark: each must fit
// the width, its buttons and links must stand out (the API reference's
// own colours aside), and each is shot. It leaves the browser at 390 px,
// dark: resetView undoes that.
func (b *browser) walk(base string, pages []consolePage) {
	for _, size := range [][2]int64{{1280, 900}, {390, 844}} {
		for _, scheme := range []string{"light", "dark"} {
			b.run(fmt.Sprintf("%dpx %s", size[0], scheme), chromedp.EmulateViewport(size[0], size[1]),
				emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}))
			for _, p := range pages {
				what := fmt.Sprintf("%s at %dpx, %s", p.name, size[0], scheme)
				b.run(what, chromedp.Navigate(base+p.route), until(p.ready))
				b.checkFits(what, size[0])
				if p.name != "docs" {
					b.checkLegible(what)
				}
				b.shot(fmt.Sprintf("page-%d-%s-%s", size[0], scheme, p.name))
			}
		}
	}
}

// resetView sets the browser back to 1280 px and the system's colours.
func (b *browser) resetView() {
	b.run("reset the view", chromedp.EmulateViewport(1280, 900),
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: ""}}))
}

// checkFits fails when the page scrolls sideways in a viewport width px
// wide, naming what sticks out.
func (b *browser) checkFits(what string, width int64) {
	b.t.Helper()
	if b.eval(`document.scrollingElement.scrollWidth <= innerWidth`) != true {
		wide := b.eval(`[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > innerWidth + 1)
			.slice(0, 8).map(e => e.tagName + (e.id ? "#" + e.id : "") + "." + [...e.classList].join(".")).join(" ")`)
		b.t.Errorf("%s: the page is %v px wide in %d (%v)", what, b.eval(`document.scrollingElement.scrollWidth`), width, wide)
	}
}

// legibility is a script that lists the visible, enabled buttons and links
// whose text contrasts less than 3:1 with the colour behind them (the
// first opaque background among their ancestors, blended down to the
// page's).
const legibility = `(() => {
	const parse = (c) => { const m = c.match(/[\d.]+/g) || []; return m.length >= 3 ? [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1] : [0, 0, 0, 0]; };
	const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
	const over = (top, below) => top.slice(0, 3).map((v, i) => v * top[3] + below[i] * (1 - top[3])).concat(1);
	const behind = (el) => {
		const layers = [];
		for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c[3] > 0) { layers.push(c); if (c[3] === 1) break; } }
		let bg = [255, 255, 255, 1];
		if (!layers.length || layers[layers.length - 1][3] < 1) bg = parse(getComputedStyle(document.documentElement).backgroundColor);
		for (const l of layers.reverse()) bg = over(l, bg);
		return bg;
	};
	const bad = [];
	for (const el of document.querySelectorAll("button, a")) {
		const r = el.getBoundingClientRect();
		if (el.disabled || r.width === 0 || r.height === 0 || el.closest(".visually-hidden, .skip") || !el.textContent.trim()) continue;
		const fg = over(parse(getComputedStyle(el).color), behind(el));
		const [a, b] = [lum(fg), lum(behind(el))];
		const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
		if (ratio < 3) bad.push(el.tagName + "." + [...el.classList].join(".") + " " + JSON.stringify(el.textContent.trim().slice(0, 30)) + " " + ratio.toFixed(2));
	}
	return bad;
})()`

// checkLegible fails for each button or link hard to read on its page.
func (b *browser) checkLegible(what string) {
	b.t.Helper()
	if bad, _ := b.eval(legibility).([]any); len(bad) > 0 {
		b.t.Errorf("%s: buttons or links that do not stand out from their background: %v", what, bad)
	}
}

// budgetReached lowers the agent's daily budget below what it has spent:
// the agent page's bar for the day is marked reached, and a message from the
// playground is refused with a 402 that says which budget, how much and
// when it resets, the message left in its box to send again.
func (b *browser) budgetReached(base, id string, c *client, key string) {
	t := b.t
	t.Helper()
	expect(t, "a budget already spent", c.do("PATCH", "/v1/agents/"+id, key,
		map[string]any{"settings": map[string]any{"budget": map[string]any{"daily": 0.00001, "monthly": 100}}}), 200, "")
	b.run("budget reached", chromedp.Navigate(base+"/#/agents/"+id),
		until(`document.querySelector(".agent-spend .spend-over")?.textContent.includes("reached")`))
	b.shot("budget-reached-bar")
	b.run("the budget in the form", until(`document.querySelector("#budget-daily").value === "0.00001"`),
		chromedp.Evaluate(`document.querySelector("#budget").scrollIntoView()`, nil))
	b.shot("budget-form")
	b.run("a message past the budget", chromedp.Navigate(base+"/#/agents/"+id+"/chat"), chromedp.WaitVisible("#text", chromedp.ByQuery),
		fill("#text", "One more?"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector(".chat div.error")?.textContent.includes("BUDGET_EXCEEDED")`))
	b.shot("budget-reached")
	got, _ := b.eval(`document.querySelector(".chat div.error").textContent`).(string)
	for _, want := range []string{"The agent's daily budget of $0.00001 is spent: $0.0", "today. It resets at 00:00 UTC (in ",
		"Raise it in the agent's Settings, under Budget"} {
		if !strings.Contains(got, want) {
			t.Errorf("the refusal reads %q; want %q in it", got, want)
		}
	}
	// Nothing was made: no turns stay, and the message waits in its box.
	if got := b.eval(`document.querySelectorAll(".transcript .turn").length + " " + document.querySelector("#text").value`); got != "0 One more?" {
		t.Errorf("after the refusal the chat has turns and box %q; want none, and the message back in the box", got)
	}
	b.checkLegible("the playground with a budget reached")
}
