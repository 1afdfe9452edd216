package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/chromedp/chromedp"
)

// priceDesk is an action handler that answers a price and keeps the
// arguments of each call it got, by tool.
type priceDesk struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string][]map[string]any
}

func newPriceDesk(t *testing.T) *priceDesk {
	d := &priceDesk{calls: map[string][]map[string]any{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var call struct {
			Data struct{ Arguments map[string]any }
		}
		if err := json.NewDecoder(r.Body).Decode(&call); err != nil {
			t.Errorf("action call: %v", err)
		}
		tool := strings.TrimPrefix(r.URL.Path, "/")
		d.mu.Lock()
		d.calls[tool] = append(d.calls[tool], call.Data.Arguments)
		d.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"symbol":%q,"price":142}`, call.Data.Arguments["symbol"])
	}))
	t.Cleanup(d.Close)
	return d
}

// got is the arguments of each call of tool, in order.
func (d *priceDesk) got(tool string) []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]map[string]any(nil), d.calls[tool]...)
}

// TestConsoleApprovalsInBrowser walks the approvals of tool calls in the
// console against a real server whose agent's two actions ask a person
// first:
//   - the agent form shows an action's approval and switches another's on;
//   - two runs wait (one on a call, one on two): the sidebar counts 2, the
//     inbox shows each with its agent, conversation and message, at 1280
//     and 390 px, light and dark, as does a waiting run's page;
//   - a run approved on its page goes on there at once;
//   - arguments made invalid JSON disable Approve with a message; edited
//     and approved with a reason, the handler gets the edited arguments,
//     the run completes, and its page shows the call approved by the key,
//     with the reason;
//   - the run on two calls is decided in one request: one approved, one
//     denied (its handler never called), the page shows both decisions;
//   - in the playground, a streamed reply whose run waits shows the card
//     inline; denied there, the same stream goes on to the answer, and the
//     call reads denied with its reason; a background send's waiting run
//     shows the card too, and approved there its reply follows.
func TestConsoleApprovalsInBrowser(t *testing.T) {
	b := newBrowserWithin(t, 4*time.Minute)
	desk := newPriceDesk(t)
	openai := llmtest.NewOpenAI(t)
	openai.Respond(llmtest.Reply{Fragments: []string{"Done", " as", " decided."}})
	in, key := bootUnlimited(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL,
		"AGENTD_PROVIDER_TIMEOUT": "10s", "AGENTD_ALLOW_PRIVATE_NETWORKS": "true"})
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 10 * time.Second}, contract: loadContract(t)}
	symbol := map[string]any{"type": "object", "properties": map[string]any{"symbol": map[string]any{"type": "string"}}}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Ticker", "modelProvider": "openai", "model": "gpt-4o-mini",
		"actions": []map[string]any{
			{"name": "get_price", "description": "Look up a token price", "examples": []string{}, "handler": desk.URL + "/get_price",
				"parameters": symbol},
			{"name": "send_mail", "description": "Mail someone", "examples": []string{}, "handler": desk.URL + "/send_mail",
				"requiresApproval": true},
		}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)

	// The form shows send_mail's approval, and its switch asks one of
	// get_price too.
	badge := `document.querySelector('header nav a[href="#/approvals"] .badge')?.textContent`
	b.run("sign in", chromedp.Navigate(in.base+"/"), signInWith(key), chromedp.Navigate(in.base+"/#/agents/"+id),
		chromedp.WaitVisible("#action-1-approval", chromedp.ByQuery),
		until(`document.querySelector("#action-1-approval").checked && !document.querySelector("#action-0-approval").checked`),
		chromedp.Click("#action-0-approval", chromedp.ByQuery),
		chromedp.Click("form.agent-form button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector(".ok")?.textContent.includes("actions")`))
	r = c.do("GET", "/v1/agents/"+id, key, nil)
	expect(t, "the saved agent", r, 200, "")
	for _, a := range asList(r.data(t)["actions"]) {
		if a.(map[string]any)["requiresApproval"] != true {
			t.Errorf("after the switch, action %v", a)
		}
	}
	wait := func(text, user string, calls ...llmtest.ToolCall) string {
		t.Helper()
		openai.Enqueue(llmtest.Reply{ToolCalls: calls})
		r := c.do("POST", "/v1/agents/"+id+"/messages", key, map[string]any{"text": text, "userId": user})
		expect(t, "a send whose run waits", r, 202, "")
		if st := r.data(t)["status"]; st != "requires_action" {
			t.Fatalf("the run is %v; want requires_action", st)
		}
		return r.data(t)["id"].(string)
	}
	one := wait("What does SOL cost?", "ann", llmtest.ToolCall{Name: "get_price", Arguments: `{"symbol":"SOL"}`})
	two := wait("Price BTC and mail Bob", "bob", llmtest.ToolCall{Name: "get_price", Arguments: `{"symbol":"BTC"}`},
		llmtest.ToolCall{Name: "send_mail", Arguments: `{"input":"bob@example.com"}`})

	card := func(run string) string { return `section.approval[data-run="` + run + `"]` }
	// A page loaded afresh counts at once (else within 30 s).
	b.run("the count", chromedp.Navigate(in.base+"/#/overview"), chromedp.Reload(), until(badge+` === "2 waiting"`))
	b.walk(in.base, []consolePage{
		{"approvals", "/#/approvals", `document.querySelectorAll("section.approval").length === 2 && document.querySelector('` +
			card(two) + ` .approval-context')?.textContent.includes("with bob")`},
		{"run-waiting", "/#/agents/" + id + "/runs/" + one, `document.querySelector('.run-page ` + card(one) + ` button.approve')`},
	})
	b.resetView()

	// A run decided on its own page: the page follows it on at once.
	three := wait("What does XRP cost?", "cy", llmtest.ToolCall{Name: "get_price", Arguments: `{"symbol":"XRP"}`})
	page := `document.querySelector(".run-page")`
	b.run("approve on the run's page", chromedp.Navigate(in.base+"/#/agents/"+id+"/runs/"+three),
		until(page+`?.querySelector('`+card(three)+` button.approve')`),
		chromedp.Click(`.run-page `+card(three)+` button.approve`, chromedp.ByQuery),
		until(`!`+page+`.querySelector("section.approval")`),
		until(`document.activeElement?.matches(".run-page .decided-line") && document.activeElement.textContent.includes("get_price approved")`),
		until(page+`.querySelector(".title-row .status.run-completed")`),
		until(page+`.querySelector('.tool-call.ok[data-tool="get_price"] .approval-note.approved')`))
	b.decideInInbox(in.base, one, two, desk)
	b.checkDecided(c, key, id, one, two, desk)
	b.decideInChat(in.base, id, openai, desk)

	if bad := b.notFound(); len(bad) > 0 {
		t.Errorf("requests answered 404: %v", bad)
	}
	b.checkOnlyFrom(in.base)
}

// decideInInbox approves run one's call with edited arguments, after
// invalid ones were refused, then decides run two's calls in one request.
func (b *browser) decideInInbox(base, one, two string, desk *priceDesk) {
	t := b.t
	t.Helper()
	args, approve := "#approval-"+one+"-0-arguments", `section.approval[data-run="`+one+`"] button.approve`
	b.run("invalid arguments", chromedp.Navigate(base+"/#/approvals"), chromedp.WaitVisible(args, chromedp.ByQuery),
		fill(args, `{"symbol": `),
		until(`document.querySelector('`+approve+`').disabled && document.querySelector("`+args+`-error")?.textContent.includes("not valid JSON")`),
		until(`document.querySelector("`+args+`").getAttribute("aria-invalid") === "true"`))
	b.shot("approvals-invalid-arguments")
	if got := b.eval(`document.querySelector('` + approve + `').getAttribute("aria-describedby")`); got == nil {
		t.Error("the disabled Approve does not say why")
	}
	b.run("approve edited", fill(args, `{"symbol": "ETH"}`), until(`!document.querySelector('`+approve+`').disabled`),
		fill("#approval-"+one+"-0-reason", "ETH instead"), chromedp.Click(approve, chromedp.ByQuery),
		until(`!document.querySelector('section.approval[data-run="`+one+`"]')`),
		until(`document.querySelector(".decided-line")?.textContent.includes("get_price approved")`),
		until(`document.activeElement?.classList.contains("decided-line")`),
		until(`document.querySelector('header nav a[href="#/approvals"] .badge')?.textContent === "1 waiting"`))
	b.shot("approvals-one-decided")

	// Two calls: Send waits for a choice on each; then one request.
	run2 := `section.approval[data-run="` + two + `"]`
	send := run2 + ` button.send-decisions`
	b.run("choose", chromedp.Click(run2+` li[data-tool="get_price"] button.approve`, chromedp.ByQuery),
		until(`document.querySelector('`+run2+` li[data-tool="get_price"] button.approve').getAttribute("aria-pressed") === "true"`),
		until(`document.querySelector('`+send+`').disabled`),
		fill("#approval-"+two+"-1-reason", "no mail today"),
		chromedp.Click(run2+` li[data-tool="send_mail"] button.deny`, chromedp.ByQuery),
		until(`!document.querySelector('`+send+`').disabled`))
	b.shot("approvals-two-chosen")
	if n := len(desk.got("get_price")); n != 2 {
		t.Errorf("choosing sent something: the handler got %d calls, 2 before", n)
	}
	b.run("send decisions", chromedp.Click(send, chromedp.ByQuery),
		until(`document.querySelector(".decided-line")?.textContent.includes("2 calls: 1 approved, 1 denied")`),
		until(`document.body.textContent.includes("Nothing waits for a decision")`),
		until(`!document.querySelector('header nav a[href="#/approvals"] .badge')`))
}

// checkDecided checks the decided runs in the API and on their pages: the
// handler got the edited arguments, the denied call never reached its
// handler, and each call shows its decision.
func (b *browser) checkDecided(c *client, key, id, one, two string, desk *priceDesk) {
	t := b.t
	t.Helper()
	for _, run := range []string{one, two} {
		r := c.do("GET", "/v1/agents/"+id+"/runs/"+run+"?wait=10", key, nil)
		expect(t, "a decided run", r, 200, "")
		if st := r.data(t)["status"]; st != "completed" {
			t.Fatalf("run %s is %v after its decision", run, st)
		}
	}
	if got := desk.got("get_price"); len(got) != 3 || got[1]["symbol"] != "ETH" || got[2]["symbol"] != "BTC" {
		t.Errorf("get_price got %v; want XRP, ETH (edited), then BTC", got)
	}
	if got := desk.got("send_mail"); len(got) != 0 {
		t.Errorf("the denied send_mail reached its handler: %v", got)
	}
	page := `document.querySelector(".run-page")`
	b.run("the approved run", chromedp.Navigate(c.base+"/#/agents/"+id+"/runs/"+one),
		until(page+`?.querySelector(".title-row .status.run-completed")`),
		until(page+`.querySelector('.tool-call.ok[data-tool="get_price"] .approval-note.approved')?.textContent.includes("ETH instead")`))
	note, _ := b.eval(page + `.querySelector(".approval-note").textContent`).(string)
	if !strings.HasPrefix(note, "Approved by agk_") {
		t.Errorf("the approved call's note reads %q; want it approved by the key's prefix", note)
	}
	if got, _ := b.eval(page + `.querySelector(".tool-args").textContent`).(string); !strings.Contains(got, `"ETH"`) {
		t.Errorf("the call shows the arguments %s; want the edited ones it ran with", got)
	}
	b.shot("run-approved")
	b.run("the run of two decisions", chromedp.Navigate(c.base+"/#/agents/"+id+"/runs/"+two),
		until(page+`?.querySelector('.tool-call.ok[data-tool="get_price"] .approval-note.approved')`),
		until(page+`.querySelector('.tool-call.denied[data-tool="send_mail"] .approval-note.denied')?.textContent.includes("no mail today")`),
		until(page+`.querySelector('.tool-call.denied .status.denied')`))
	b.shot("run-denied")
}

// decideInChat sends from the playground: a streamed reply whose run waits
// shows the card in the chat, denied there the stream goes on; then a
// background send whose run waits, approved from the chat.
func (b *browser) decideInChat(base, id string, openai *llmtest.Server, desk *priceDesk) {
	t := b.t
	t.Helper()
	last := `[...document.querySelectorAll(".turn.agent")].pop()`
	openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "get_price", Arguments: `{"symbol":"ADA"}`}}})
	b.run("a streamed reply waits", chromedp.Navigate(base+"/#/agents/"+id+"/chat"), chromedp.WaitVisible("#text", chromedp.ByQuery),
		fill("#text", "What does ADA cost?"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(last+`?.querySelector('section.approval li[data-tool="get_price"] textarea')?.value.includes('"ADA"')`),
		until(last+`.querySelector('.text[data-streaming="true"]')`),
		until(`document.querySelector('header nav a[href="#/approvals"] .badge')?.textContent === "1 waiting"`))
	b.shot("chat-waiting")
	reason := `[...document.querySelectorAll(".turn.agent section.approval input")].pop()`
	b.run("deny in the chat", chromedp.Evaluate(`(() => { const el = `+reason+`; el.value = "not now";
			el.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, nil),
		chromedp.Click(`.turn.agent section.approval button.deny`, chromedp.ByQuery),
		until(`!document.querySelector(".turn.agent section.approval") && document.activeElement?.id === "text"`),
		until(last+`.querySelector(".text")?.textContent === "Done as decided."`),
		until(last+`.querySelector('.tool-call.denied[data-tool="get_price"] .approval-note.denied')?.textContent.includes("not now")`))
	b.shot("chat-denied")
	if got := desk.got("get_price"); len(got) != 3 {
		t.Errorf("the call denied in the chat reached its handler: %v", got)
	}

	openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "get_price", Arguments: `{"symbol":"DOT"}`}}})
	b.run("a background run waits", chromedp.Click("#background", chromedp.ByQuery), until(`document.querySelector("#background").checked`),
		fill("#text", "And DOT, later"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(last+`?.querySelector(".run-chip .status.run-requires_action") && `+last+`.querySelector("section.approval button.approve")`))
	b.shot("chat-background-waiting")
	b.run("approve in the chat", chromedp.Click(`.turn.agent section.approval button.approve`, chromedp.ByQuery),
		until(`!document.querySelector(".turn.agent section.approval")`),
		until(last+`.querySelector(".run-chip .status.run-completed") && `+last+`.querySelector(".text")?.textContent === "Done as decided."`),
		until(last+`.querySelector('.tool-call.ok[data-tool="get_price"] .approval-note.approved')`))
	b.shot("chat-background-approved")
	if got := desk.got("get_price"); len(got) != 4 || got[3]["symbol"] != "DOT" {
		t.Errorf("get_price got %v; want DOT last, approved from the chat", got)
	}
}
