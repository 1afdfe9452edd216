package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// browser is a headless Chromium driven over the DevTools protocol, with
// every URL it requested.
type browser struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
	mu        sync.Mutex
	requests  []string
	// missing are the URLs answered 404.
	missing []string
}

// newBrowser starts Debian's chromium with a fresh profile, for a walk of
// at most 100 s. Without it the test is skipped on a developer's machine
// and fails in CI (.ci/run installs it).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	return newBrowserWithin(t, 100*time.Second)
}

// newBrowserWithin is newBrowser for a walk of at most limit.
func newBrowserWithin(t *testing.T, limit time.Duration) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		testutil.Unavailable(t, "chromium (Debian's package) for the browser test", err)
	}
	// A fresh profile each run; removed after the browser has exited (a
	// t.TempDir could be removed while Chromium still writes to it).
	profile, err := os.MkdirTemp("", "agentd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// No network but this machine's: nothing to update, sync or report.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	// The whole walk is bounded: a stuck wait fails instead of hanging.
	ctx, cancelTimeout := context.WithTimeout(ctx, limit)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		if c := chromedp.FromContext(ctx); c != nil && c.Allocator != nil {
			c.Allocator.Wait()
		}
		if err := os.RemoveAll(profile); err != nil {
			t.Logf("remove the browser profile: %v", err)
		}
	})

	b := &browser{t: t, ctx: ctx, artifacts: shotsDir(t)}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.mu.Lock()
			b.requests = append(b.requests, e.Request.URL)
			b.mu.Unlock()
		case *network.EventResponseReceived:
			if e.Response.Status == http.StatusNotFound {
				b.mu.Lock()
				b.missing = append(b.missing, e.Response.URL)
				b.mu.Unlock()
			}
		}
	})
	b.run("start", network.Enable())
	return b
}

// shotsDir is where a test's screenshots go: $AGENTD_ARTIFACTS/<test>
// when set (.ci/run sets it, and keeps them), else a temporary folder that
// is removed when the test passes and kept, with its path logged, when it
// fails.
func shotsDir(t *testing.T) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	if root := os.Getenv("AGENTD_ARTIFACTS"); root != "" {
		dir := filepath.Join(root, name)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshots in %s", dir)
		return dir
	}
	dir, err := os.MkdirTemp("", "agentd-shots-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screenshots kept in %s", dir)
		} else if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove the screenshots: %v", err)
		}
	})
	return dir
}

// notFound returns the URLs answered 404 so far.
func (b *browser) notFound() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.missing...)
}

// run runs actions, failing the test with what was being done.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %v", what, err)
	}
}

// shot saves a screenshot of the viewport as NAME.png in the artifacts.
func (b *browser) shot(name string) {
	b.t.Helper()
	var png []byte
	if err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot(&png)); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.artifacts, name+".png"), png, 0o644); err != nil {
		b.t.Errorf("save screenshot %s: %v", name, err)
	}
}

// until waits for a JavaScript condition to hold, 30 s at most: a wait
// that fails then leaves time for the failure's screenshot.
func until(cond string) chromedp.Action {
	return chromedp.Poll(cond, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))
}

// fill replaces an input's value and fires the input event typing fires,
// so the page's handler sees it (SendKeys would add to what is there).
func fill(sel, value string) chromedp.Action {
	js := fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		el.value = %s;
		el.dispatchEvent(new Event("input", {bubbles: true}));
		return true;
	})()`, jsString(sel), jsString(value))
	var done bool
	return chromedp.Tasks{chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.Evaluate(js, &done)}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

// signInWith signs in on the sign-in page with key and waits for the
// overview.
func signInWith(key string) chromedp.Action {
	return chromedp.Tasks{fill("#api-key", key), chromedp.Click(".signin button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#overview-title", chromedp.ByQuery)}
}

// requested returns the URLs requested so far.
func (b *browser) requested() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// checkOnlyFrom fails for every request to another host than base's:
// the pages load nothing from a CDN or any outside service.
func (b *browser) checkOnlyFrom(base string) {
	b.t.Helper()
	own, err := url.Parse(base)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, raw := range b.requested() {
		u, err := url.Parse(raw)
		if err != nil {
			b.t.Errorf("unparsable request URL %q", raw)
			continue
		}
		if u.Scheme == "data" || u.Scheme == "blob" {
			continue
		}
		if u.Host != own.Host {
			b.t.Errorf("request to another host: %s", raw)
		}
	}
}

// TestConsoleInBrowser walks the console in a real browser against a real
// `agentd serve` and a wire-format provider: the API reference, sign-in,
// create from a character file, a validation error at its field, a chat
// streamed token by token (a reply stopped with the cancel operation and
// stored cut), a conversation, analytics, delete protection and delete,
// then a webhook: its secret shown once, a test delivered.
func TestConsoleInBrowser(t *testing.T) {
	b := newBrowser(t)
	hooks := newReceiver(t)
	openai := llmtest.NewOpenAI(t)
	// The first reply stalls after its first fragment, so the page must show
	// that fragment while the stream is still open; the second is whole.
	openai.Enqueue(
		llmtest.Reply{Fragments: []string{"Loops", " repeat", " steps."}, StallMidStream: true, FailAfter: 1},
		llmtest.Reply{Fragments: []string{"A", " loop", " repeats", " a", " step."}, PromptTokens: 20, CompletionTokens: 5},
	)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL, "AGENTD_PROVIDER_TIMEOUT": "10s",
		// The receiver listens on loopback, which webhooks may not reach otherwise.
		"AGENTD_WEBHOOK_ALLOW_PRIVATE": "true"}
	in := boot(t, env, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	character, err := filepath.Abs("testdata/ada.character.json")
	if err != nil {
		t.Fatal(err)
	}

	b.run("open /docs", chromedp.Navigate(in.base+"/docs"), chromedp.WaitVisible(".opblock", chromedp.ByQuery),
		until(`document.querySelector(".servers select")?.value === "`+in.base+`/v1"`))
	b.shot("docs")

	b.run("open the console", chromedp.Navigate(in.base+"/"), chromedp.WaitVisible("#api-key", chromedp.ByQuery))
	b.shot("signin")
	signIn := chromedp.Click(".signin button[type=submit]", chromedp.ByQuery)
	b.run("wrong key", chromedp.SendKeys("#api-key", "agk_wrong", chromedp.ByQuery), signIn,
		until(`document.querySelector(".error")?.textContent.includes("UNAUTHORIZED")`))
	b.run("sign in", signInWith(key))
	if got := b.eval(`sessionStorage.getItem("agentd.apiKey")`); got != key {
		t.Errorf("session storage holds %q, want the key", got)
	}
	if got := b.eval(`localStorage.length`); got != float64(0) {
		t.Errorf("local storage has %v items; the key belongs in session storage only", got)
	}

	b.run("new agent page", chromedp.Click(`a[href="#/agents/new"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#character-file", chromedp.ByQuery),
		chromedp.SetUploadFiles("#character-file", []string{character}, chromedp.ByQuery),
		until(`document.querySelector(".character")?.textContent.includes("Ada")`))
	b.shot("create")
	b.run("create from the character file", chromedp.Click(".character button", chromedp.ByQuery),
		until(`document.querySelector("#agent-title")?.textContent === "Ada"`))
	id, _ := b.eval(`location.hash.split("/")[2]`).(string)
	if !strings.HasPrefix(id, "agent_") {
		t.Fatalf("after create the page is at %q", b.eval(`location.hash`))
	}
	if got, _ := b.eval(`document.querySelector("#agent-json").value`).(string); !strings.Contains(got, `"messageExamples"`) {
		t.Errorf("the JSON view lacks the character's messageExamples: %.200s", got)
	}
	b.shot("agent")
	// The header counts exchanges, which Analytics' "messages" counts twice:
	// the page must say which it shows.
	if got, _ := b.eval(`document.querySelector("p.meta").textContent`).(string); !strings.Contains(got, "0 exchanges answered") {
		t.Errorf("the agent header reads %q; want it to count exchanges answered", got)
	}

	// A name of spaces passes the schema (minLength 1) and is refused by the
	// server, which names the field: the error must appear at the input.
	b.run("save a blank name", fill("#name", "   "), chromedp.Click("form.agent-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#name-error", chromedp.ByQuery))
	if got := b.eval(`document.querySelector("#name").getAttribute("aria-describedby")`); got != "name-error" {
		t.Errorf("name input described by %v, want its error", got)
	}
	b.shot("edit-error")
	b.run("save the name back", fill("#name", "Ada"), chromedp.Click("form.agent-form button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector(".ok")?.textContent.startsWith("Saved")`),
		until(`!document.querySelector("#name-error")`))

	chat := `a[href="#/agents/` + id + `/chat"]`
	b.run("chat", chromedp.Click(chat, chromedp.ByQuery), chromedp.WaitVisible("#text", chromedp.ByQuery),
		fill("#userId", "grace"), fill("#text", "What is a loop?"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		// The first fragment is on the page while the stream is still open.
		until(`document.querySelector('.turn.agent .text[data-streaming="true"]')?.textContent.startsWith("Loops")`))
	b.shot("chat-streaming")
	// Stop cancels the reply on the server, whose stream then ends by
	// itself with done marked partial: what was said is stored, cut.
	b.run("stop the stalled reply", chromedp.Click("form.send button[type=button]", chromedp.ByQuery),
		until(`!document.querySelector('[data-streaming="true"]') && !document.querySelector("form.send button[type=button]")`),
		until(`document.querySelector(".turn.agent .stopped")?.textContent.includes("(stopped)")`))
	if !containsAny(b.requested(), "/cancel") {
		t.Errorf("Stop did not call the cancel operation: %v", b.requested())
	}
	if got, _ := b.eval(`document.querySelector(".turn.agent .text").textContent`).(string); got != "Loops (stopped)" {
		t.Errorf("the stopped reply shows as %q", got)
	}
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 10 * time.Second}, contract: loadContract(t)}
	if m := onlyReply(t, c, key, id); m["text"] != "Loops" || m["partial"] != true {
		t.Errorf("the stopped reply is stored as %v; want Loops, partial", m)
	}
	b.run("second message", fill("#text", "And again?"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(`[...document.querySelectorAll(".turn.agent .meta")].some(m => m.textContent.includes("25 tokens"))`))
	if got := b.eval(`[...document.querySelectorAll(".turn.agent .text")].pop().textContent`); got != "A loop repeats a step." {
		t.Errorf("streamed reply shown as %q", got)
	}
	b.shot("chat")
	reqs := openai.Requests()
	if len(reqs) != 2 || reqs[1].Body["stream"] != true {
		t.Errorf("provider requests %d; want 2, streamed", len(reqs))
	}
	if !containsAny(b.requested(), "/messages/stream") {
		t.Errorf("the console did not call the stream operation: %v", b.requested())
	}

	b.run("conversations", chromedp.Click(`a[href="#/agents/`+id+`/conversations"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`a[href^="#/agents/`+id+`/conversations/conv_"]`, chromedp.ByQuery))
	b.shot("conversations")
	b.run("one conversation", chromedp.Click(`a[href^="#/agents/`+id+`/conversations/conv_"]`, chromedp.ByQuery),
		until(`document.querySelectorAll(".transcript li").length === 4`),
		until(`document.querySelector(".transcript").textContent.includes("A loop repeats a step.")`))
	b.shot("conversation")
	b.run("delete the conversation", chromedp.Click("div.danger button", chromedp.ByQuery),
		chromedp.Click(`[role=alertdialog] button.danger`, chromedp.ByQuery),
		until(`document.querySelector("#conversations-title") && document.body.textContent.includes("No conversations yet")`))

	b.run("analytics", chromedp.Click(`a[href="#/agents/`+id+`/analytics"]`, chromedp.ByQuery),
		until(`document.querySelectorAll(".chart canvas").length === 4`))
	b.shot("analytics")

	// The agent has no platform credentials in the test: its clients show
	// as connections that wait for them, with the reason.
	b.run("connections", chromedp.Click(`a[href="#/agents/`+id+`/connections"]`, chromedp.ByQuery),
		until(`document.querySelector("#connections-title") && document.querySelector("section[aria-labelledby=connections-title] table, section[aria-labelledby=connections-title] p")`))
	b.shot("connections")

	settings := `a[href="#/agents/` + id + `"]`
	// The settings tab loads the agent again (and its tools) when it opens,
	// and a load that lands after the tick resets the form: tick once the
	// tab has loaded, and save only what is ticked.
	b.run("protect", chromedp.Click(settings, chromedp.ByQuery), chromedp.WaitVisible("#deleteProtection", chromedp.ByQuery),
		until(`document.querySelector("section.tools")?.getAttribute("aria-busy") === "false"`),
		chromedp.Click("#deleteProtection", chromedp.ByQuery), until(`document.querySelector("#deleteProtection").checked`),
		chromedp.Click("form.agent-form button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector(".ok")?.textContent.includes("deleteProtection")`))
	b.run("delete refused", chromedp.Click("section.danger > button", chromedp.ByQuery),
		chromedp.Click(`[role=alertdialog] button.danger`, chromedp.ByQuery),
		until(`document.querySelector("section.danger .error")?.textContent.includes("DELETE_PROTECTED")`))
	if got, _ := b.eval(`document.querySelector("section.danger .error").textContent`).(string); !strings.Contains(got, "Protect from deletion") {
		t.Errorf("protected delete not explained: %q", got)
	}
	b.shot("delete-protected")
	b.run("unprotect and delete", chromedp.Click("#deleteProtection", chromedp.ByQuery),
		chromedp.Click("form.agent-form button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector(".ok")?.textContent.includes("deleteProtection")`),
		chromedp.Click("section.danger > button", chromedp.ByQuery),
		chromedp.Click(`[role=alertdialog] button.danger`, chromedp.ByQuery),
		chromedp.WaitVisible("#agents-title", chromedp.ByQuery),
		until(`document.body.textContent.includes("No agents yet")`))
	expect(t, "deleted from the console", c.do("GET", "/v1/agents/"+id, key, nil), 404, "AGENT_NOT_FOUND")

	webhook := b.webhooks(hooks)

	b.run("narrow screen", chromedp.EmulateViewport(360, 740), chromedp.Navigate(in.base+"/#/agents/new"),
		chromedp.WaitVisible("#name", chromedp.ByQuery))
	b.checkNarrow()
	b.shot("create-360px")
	b.run("narrow webhook", chromedp.Navigate(in.base+"/#/webhooks/"+webhook),
		until(`document.querySelector(".deliveries .status.succeeded")`))
	b.checkNarrow()
	b.shot("webhooks-360px")

	b.checkOnlyFrom(in.base)
}

// onlyReply is the agent's stored reply, which must be the only one of
// its only conversation.
func onlyReply(t *testing.T, c *client, key, agentID string) map[string]any {
	t.Helper()
	replies := storedReplies(t, c, key, agentID)
	if len(replies) != 1 {
		t.Fatalf("%d replies stored, want 1: %v", len(replies), replies)
	}
	return replies[0]
}

// storedReplies are the agent's stored replies, in its only conversation.
func storedReplies(t *testing.T, c *client, key, agentID string) []map[string]any {
	t.Helper()
	r := c.do("GET", "/v1/agents/"+agentID+"/conversations", key, nil)
	expect(t, "conversations", r, 200, "")
	items, _ := r.data(t)["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("%d conversations, want 1: %s", len(items), r.body)
	}
	conv, _ := items[0].(map[string]any)["id"].(string)
	r = c.do("GET", "/v1/agents/"+agentID+"/conversations/"+conv+"/messages", key, nil)
	expect(t, "messages", r, 200, "")
	var replies []map[string]any
	for _, m := range asList(r.data(t)["items"]) {
		if m, _ := m.(map[string]any); m["role"] == "agent" {
			replies = append(replies, m)
		}
	}
	return replies
}

// TestConsoleStreamsAndMovesInBrowser walks what keeps a reply and an
// agent whole: a streamed reply whose connection drops after its first
// token is resumed by the console from the last event it got, shown and
// stored once; the send carried an Idempotency-Key. Then the agent is
// exported with its memories, knowledge and history (the file downloaded),
// and that file imported on the agents list makes a new agent with them;
// a file the server refuses shows the member it names. Last, a reply that
// fails midway shows its error and is not resumed.
func TestConsoleStreamsAndMovesInBrowser(t *testing.T) {
	b := newBrowser(t)
	openai := llmtest.NewOpenAI(t)
	openai.Respond(llmtest.Reply{Fragments: []string{"Resumed", " without", " a", " gap."}, FragmentDelay: 20 * time.Millisecond,
		PromptTokens: 10, CompletionTokens: 4})
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL, "AGENTD_PROVIDER_TIMEOUT": "10s"},
		"--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 10 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Ada", "modelProvider": "openai", "model": "gpt-4o-mini",
		"memory": map[string]any{"longTermEnabled": true}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	expect(t, "add a memory", c.do("POST", "/v1/agents/"+id+"/memories", key,
		map[string]any{"text": "Grace prefers short answers.", "userId": "grace"}), 201, "")
	expect(t, "add a document", c.do("POST", "/v1/agents/"+id+"/knowledge", key,
		map[string]any{"name": "loops.md", "text": "A loop repeats a step."}), 201, "")
	cutter := newStreamCutter(t, in.base)
	tokens := `document.querySelector(".turn.agent .meta")?.textContent.includes("14 tokens")`

	// The stream drops after its first token, once the page shows it: the
	// console resumes from the token's event id.
	cut := cutter.cutAfterToken(t)
	b.run("chat", chromedp.Navigate(cutter.URL+"/"), signInWith(key), chromedp.Navigate(cutter.URL+"/#/agents/"+id+"/chat"),
		chromedp.WaitVisible("#text", chromedp.ByQuery), fill("#userId", "grace"), fill("#text", "Are you there?"),
		chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector('.turn.agent .text[data-streaming="true"]')?.textContent.startsWith("Resumed")`))
	cut()
	b.run("resumed", until(tokens))
	if got := b.eval(`document.querySelector(".turn.agent .text").textContent`); got != "Resumed without a gap." {
		t.Errorf("the resumed reply shows as %q", got)
	}
	if got := b.eval(`!!document.querySelector(".chat .error")`); got != false {
		t.Errorf("the chat shows an error after resuming: %v", b.eval(`document.querySelector(".chat .error").textContent`))
	}
	b.shot("chat-resumed")
	sends, resumes := cutter.seen()
	if len(sends) != 1 || !uuidPattern.MatchString(sends[0].idempotencyKey) {
		t.Errorf("streamed sends %+v; want one, with a UUID Idempotency-Key", sends)
	}
	// Event 1 is start, event 2 the token.
	if len(resumes) != 1 || resumes[0].lastEventID != "2" || !strings.Contains(resumes[0].path, "/messages/msg_") {
		t.Errorf("resumes %+v; want one GET of the reply's stream with Last-Event-ID 2", resumes)
	}
	if n := openai.Count(); n != 1 {
		t.Errorf("the provider got %d chat requests; the resume must not send again", n)
	}
	if m := onlyReply(t, c, key, id); m["text"] != "Resumed without a gap." || m["partial"] != nil {
		t.Errorf("the reply is stored as %v", m)
	}

	// The stream drops before its first byte: the console sends again with
	// the same Idempotency-Key, and the server answers with the first
	// send's reply rather than a second one.
	cutter.cutAtOnce()
	b.run("chat again", fill("#text", "Still there?"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(`document.querySelectorAll(".turn.agent .meta").length === 2 && !document.querySelector("form.send button[type=button]")`))
	if got := b.eval(`[...document.querySelectorAll(".turn.agent .text")].pop().textContent`); got != "Resumed without a gap." {
		t.Errorf("the reply sent again shows as %q", got)
	}
	sends, _ = cutter.seen()
	if len(sends) < 3 || sends[1].idempotencyKey != sends[2].idempotencyKey || sends[1].idempotencyKey == sends[0].idempotencyKey {
		t.Errorf("streamed sends %+v; want the second sent again with its own key", sends)
	}
	if n := openai.Count(); n != 2 {
		t.Errorf("the provider got %d chat requests; want 2, one a message", n)
	}
	if replies := storedReplies(t, c, key, id); len(replies) != 2 {
		t.Errorf("%d replies stored after two messages: %v", len(replies), replies)
	}
	b.shot("chat-sent-again")

	downloads := t.TempDir()
	b.run("allow downloads", cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(downloads))
	b.run("export", chromedp.Click(`nav.tabs a[href="#/agents/`+id+`"]`, chromedp.ByQuery), chromedp.WaitVisible("#export", chromedp.ByQuery),
		chromedp.Click("#export", chromedp.ByQuery),
		until(`document.querySelector(".export .ok")?.textContent === "Exported Ada.character.json: 1 memory, 1 document, 1 conversation."`))
	b.shot("exported")
	if !containsAny(b.requested(), "/agents/"+id+"/export?include=memories,knowledge,history") {
		t.Errorf("the console did not ask for the export with memories, knowledge and history: %v", b.requested())
	}
	exported := filepath.Join(downloads, "Ada.character.json")
	var character map[string]any
	testutil.Eventually(t, "the downloaded file", func() error {
		raw, err := os.ReadFile(exported)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &character)
	})
	bundle, _ := character["agentd"].(map[string]any)
	if character["name"] != "Ada" || len(asList(bundle["memories"])) != 1 || len(asList(bundle["knowledge"])) != 1 ||
		len(asList(bundle["history"])) != 1 {
		t.Errorf("the downloaded character file: %v", character)
	}

	rows := `document.querySelectorAll("section[aria-labelledby=agents-title] tbody tr").length`
	b.run("import", chromedp.Click(`header a[href="#/agents"]`, chromedp.ByQuery), chromedp.WaitVisible("#import-file", chromedp.ByQuery),
		until(rows+` === 1`), chromedp.SetUploadFiles("#import-file", []string{exported}, chromedp.ByQuery),
		until(`document.querySelector(".import .ok")?.textContent === "Imported Ada from Ada.character.json."`),
		until(rows+` === 2`))
	b.shot("imported")
	imported, _ := b.eval(`document.querySelector(".import .ok a").getAttribute("href").split("/")[2]`).(string)
	if !strings.HasPrefix(imported, "agent_") || imported == id {
		t.Fatalf("the imported agent links to %q", imported)
	}
	if replies := storedReplies(t, c, key, imported); len(replies) != 2 || replies[1]["text"] != "Resumed without a gap." {
		t.Errorf("the imported agent's replies: %v", replies)
	}
	r = c.do("GET", "/v1/agents/"+imported+"/memories", key, nil)
	expect(t, "imported memories", r, 200, "")
	if items := asList(r.data(t)["items"]); len(items) != 1 || items[0].(map[string]any)["text"] != "Grace prefers short answers." {
		t.Errorf("the imported agent's memories: %s", r.body)
	}

	dir := t.TempDir()
	blank := filepath.Join(dir, "blank.character.json")
	notJSON := filepath.Join(dir, "notes.json")
	if err := os.WriteFile(blank, []byte(`{"name": "   "}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notJSON, []byte("name: Ada"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.run("import a refused file", chromedp.SetUploadFiles("#import-file", []string{blank}, chromedp.ByQuery),
		until(`document.querySelector(".import .field-error")?.textContent.includes("name")`),
		until(`document.querySelector(".import .error")?.textContent.includes("INVALID_REQUEST")`))
	if got := b.eval(`!!document.querySelector(".import .ok")`); got != false {
		t.Errorf("a refused import still says imported")
	}
	b.shot("import-refused")
	b.run("import a file that is not JSON", chromedp.SetUploadFiles("#import-file", []string{notJSON}, chromedp.ByQuery),
		until(`document.querySelector(".import .error")?.textContent.includes("notes.json is not JSON")`))
	b.run("still two agents", until(rows+` === 2`))

	// A reply that fails midway ends with an error event: shown as it is,
	// not taken for a dropped stream and resumed.
	openai.Enqueue(llmtest.Reply{Fragments: []string{"Half", " a", " reply"}, FailMidStream: true, FailAfter: 1})
	b.run("a failed reply", chromedp.Navigate(cutter.URL+"/#/agents/"+id+"/chat"), chromedp.WaitVisible("#text", chromedp.ByQuery),
		fill("#text", "And now?"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector(".chat .error")?.textContent.includes("AGENT_UNAVAILABLE") && !document.querySelector("form.send button[type=button]")`))
	b.shot("chat-failed")
	if _, resumes := cutter.seen(); len(resumes) != 1 {
		t.Errorf("resumes %+v; a stream that ended with an error event must not be resumed", resumes)
	}
	b.checkOnlyFrom(cutter.URL)
}

// uuidPattern matches a version 4 UUID, as the console's Idempotency-Key.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// asList is v as a JSON array, nil when it is not one.
func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// streamCutter is a reverse proxy to agentd that cuts streamed sends as a
// network that drops would, as it is told for each, and keeps the requests
// to the stream operations.
type streamCutter struct {
	*httptest.Server
	mu       sync.Mutex
	requests []streamRequest
	// cuts are the cuts of the next streamed sends, in order; a send
	// without one passes whole.
	cuts []*cutStream
}

// streamRequest is a request to a stream operation as the cutter got it.
type streamRequest struct {
	method, path, idempotencyKey, lastEventID string
}

func newStreamCutter(t *testing.T, target string) *streamCutter {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &streamCutter{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(res *http.Response) error {
		if res.Request.Method != http.MethodPost || !strings.HasSuffix(res.Request.URL.Path, "/messages/stream") ||
			res.StatusCode != http.StatusOK {
			return nil
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.cuts) > 0 {
			cut := c.cuts[0]
			c.cuts = c.cuts[1:]
			cut.r, cut.body = bufio.NewReader(res.Body), res.Body
			res.Body = cut
		}
		return nil
	}
	// A cut is a failed copy, which the proxy would log.
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/stream") {
			c.mu.Lock()
			c.requests = append(c.requests, streamRequest{method: r.Method, path: r.URL.Path,
				idempotencyKey: r.Header.Get("Idempotency-Key"), lastEventID: r.Header.Get("Last-Event-ID")})
			c.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		c.mu.Lock()
		for _, cut := range c.cuts {
			cut.let()
		}
		c.mu.Unlock()
		c.Close()
	})
	return c
}

// cutAfterToken cuts the next streamed send after its first token event,
// once the returned function is called (the test has seen the token on the
// page, so the browser has it).
func (c *streamCutter) cutAfterToken(t *testing.T) func() {
	cut := &cutStream{afterToken: true, release: make(chan struct{})}
	t.Cleanup(cut.let)
	c.mu.Lock()
	c.cuts = append(c.cuts, cut)
	c.mu.Unlock()
	return cut.let
}

// cutAtOnce cuts the next streamed send before its first byte, so the
// console learns nothing of the reply, not even its id.
func (c *streamCutter) cutAtOnce() {
	c.mu.Lock()
	c.cuts = append(c.cuts, &cutStream{})
	c.mu.Unlock()
}

// seen returns the streamed sends (POST) and the resumes (GET) so far.
func (c *streamCutter) seen() (sends, resumes []streamRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.requests {
		if r.method == http.MethodPost {
			sends = append(sends, r)
		} else {
			resumes = append(resumes, r)
		}
	}
	return sends, resumes
}

// cutStream passes an event stream on line by line up to the end of its
// first token event (afterToken) or not at all, then fails once release is
// closed: the proxy then aborts the response, and the browser sees the
// connection drop.
type cutStream struct {
	r          *bufio.Reader
	body       io.Closer
	pending    []byte
	afterToken bool
	release    chan struct{}
	once       sync.Once
	token, cut bool
}

// let lets the cut happen.
func (c *cutStream) let() {
	if c.release != nil {
		c.once.Do(func() { close(c.release) })
	}
}

func (c *cutStream) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		if c.cut || !c.afterToken {
			if c.release != nil {
				<-c.release
			}
			return 0, errors.New("the test cut the stream")
		}
		line, err := c.r.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		c.token = c.token || bytes.Contains(line, []byte(`"type":"token"`))
		c.cut = c.token && len(bytes.TrimSpace(line)) == 0
		c.pending = line
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *cutStream) Close() error { return c.body.Close() }

// TestConsoleToolsInBrowser walks the console's tools: an action handler
// and an MCP server added in the agent form (parameters that are not a
// JSON object refused before sending, the header's value masked and kept
// through a second save), the Tools section (the tool, its parameters, the
// server that could not be asked), then a streamed chat whose tool call
// shows as a card, running until the handler answers, and again in the
// conversation's history.
func TestConsoleToolsInBrowser(t *testing.T) {
	b := newBrowser(t)
	// The handler holds each call until the test has seen the card run.
	release := make(chan struct{})
	var once sync.Once
	handler := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var call struct {
			Data struct{ Arguments map[string]any }
		}
		if err := json.NewDecoder(r.Body).Decode(&call); err != nil || call.Data.Arguments["symbol"] != "ADA" {
			t.Errorf("action call: %v, arguments %v", err, call.Data.Arguments)
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"symbol":"ADA","price":0.42}`)
	}))
	t.Cleanup(handler.Close)
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // runs before handler.Close
	// The MCP server refuses every request; it keeps the Authorization
	// header of each, to show which value agentd stored.
	var mu sync.Mutex
	var auths []string
	mcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no entry", http.StatusForbidden)
	}))
	t.Cleanup(mcp.Close)
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), auths...)
	}

	openai := llmtest.NewOpenAI(t)
	openai.Respond(llmtest.Reply{Fragments: []string{"ADA", " is", " at", " 0.42."}})
	openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "get_price", Arguments: `{"symbol":"ADA"}`}}})
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL, "AGENTD_PROVIDER_TIMEOUT": "10s",
		// The handler and the MCP server listen on loopback.
		"AGENTD_ALLOW_PRIVATE_NETWORKS": "true"}, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 10 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Ticker", "modelProvider": "openai", "model": "gpt-4o-mini"})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)

	save := chromedp.Click("form.agent-form button[type=submit]", chromedp.ByQuery)
	b.run("sign in", chromedp.Navigate(in.base+"/"), signInWith(key),
		chromedp.Navigate(in.base+"/#/agents/"+id), chromedp.WaitVisible("#add-action", chromedp.ByQuery),
		until(`document.querySelector("#tools-title") && !document.querySelector(".tools[aria-busy=true]")`))
	b.run("add an action", chromedp.Click("#add-action", chromedp.ByQuery), fill("#action-0-name", "get_price"),
		fill("#action-0-description", "Look up a token price"), fill("#action-0-handler", handler.URL+"/price"),
		fill("#action-0-parameters", `["symbol"]`), chromedp.WaitVisible("#action-0-parameters-error", chromedp.ByQuery),
		save, until(`document.activeElement?.id === "action-0-parameters" && document.querySelector("form.agent-form .error")`))
	b.shot("tools-form-refused")
	b.run("add an MCP server", fill("#action-0-parameters", `{"type":"object","properties":{"symbol":{"type":"string"}}}`),
		until(`!document.querySelector("#action-0-parameters-error")`),
		chromedp.Click("#add-server", chromedp.ByQuery), fill("#server-0-name", "tracker"), fill("#server-0-url", mcp.URL+"/mcp"),
		chromedp.Click("#server-0-add-header", chromedp.ByQuery), fill("#server-0-header-0-name", "Authorization"),
		fill("#server-0-header-0-value", "Bearer sekrit"), chromedp.Click("#mcp-plugin", chromedp.ByQuery),
		save, until(`document.querySelector(".ok")?.textContent.includes("actions")`))
	// The saved agent comes back with the header masked, and the Tools
	// section lists the action and the server that refused.
	b.run("tools listed", until(`document.querySelector("#server-0-header-0-value")?.value === "********"`),
		until(`[...document.querySelectorAll(".tools tbody tr")].some(r => r.textContent.includes("get_price") && r.textContent.includes("offered"))`),
		until(`document.querySelector(".tools .warning")?.textContent.includes("tracker")`),
		chromedp.Click(`button[aria-controls="tool-get_price-parameters"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#tool-get_price-parameters", chromedp.ByQuery))
	if got, _ := b.eval(`document.querySelector("#tool-get_price-parameters").textContent`).(string); !strings.Contains(got, `"symbol"`) {
		t.Errorf("the parameters shown: %q", got)
	}
	b.shot("tools")
	// Saved again untouched, the mask keeps the stored value: the tools
	// do not change, and the server is still sent the real header.
	asked := len(seen())
	b.run("save again", save, until(`/^Saved/.test(document.querySelector(".ok")?.textContent) && !document.querySelector(".ok").textContent.includes("actions")`))
	if got, _ := b.eval(`document.querySelector(".ok").textContent`).(string); strings.Contains(got, "settings") || strings.Contains(got, "plugins") {
		t.Errorf("saving the form untouched says %q", got)
	}
	b.run("ask again", chromedp.Click("#tools-reload", chromedp.ByQuery))
	testutil.Eventually(t, "the MCP server asked again", func() error {
		if n := len(seen()); n <= asked {
			return fmt.Errorf("%d requests, as before", n)
		}
		return nil
	})
	for _, a := range seen() {
		if a != "Bearer sekrit" {
			t.Errorf("the MCP server was sent Authorization %q", a)
		}
	}

	b.run("chat", chromedp.Click(`a[href="#/agents/`+id+`/chat"]`, chromedp.ByQuery), chromedp.WaitVisible("#text", chromedp.ByQuery),
		fill("#text", "What does ADA cost?"), chromedp.Click("form.send button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector('.turn.agent .tool-call.running[data-tool="get_price"] .tool-args')?.textContent.includes('"ADA"')`))
	b.shot("chat-tool-running")
	once.Do(func() { close(release) })
	card := `.turn.agent .tool-call.ok[data-tool="get_price"]`
	b.run("tool result", until(`document.querySelector('`+card+` .tool-result')?.textContent.includes("0.42")`),
		until(`document.querySelector(".turn.agent .text")?.textContent === "ADA is at 0.42."`),
		until(`document.querySelector('`+card+` .tool-head')?.textContent.includes("ms")`))
	if got := b.eval(`!!document.querySelector(".turn.agent .tool-calls + .text")`); got != true {
		t.Errorf("the tool card is not before the answer's text")
	}
	b.shot("chat-tool")
	if reqs := openai.Requests(); len(reqs) != 2 || len(reqs[1].ToolResults()) != 1 || !strings.Contains(reqs[1].ToolResults()[0].Content, "0.42") {
		t.Errorf("provider requests %d; want the second to carry the handler's result", len(reqs))
	}

	b.run("history", chromedp.Click(`a[href="#/agents/`+id+`/conversations"]`, chromedp.ByQuery),
		chromedp.Click(`a[href^="#/agents/`+id+`/conversations/conv_"]`, chromedp.ByQuery),
		until(`document.querySelector('.transcript .tool-call.ok[data-tool="get_price"] .tool-result')?.textContent.includes("0.42")`))
	b.shot("history-tool")
	b.checkOnlyFrom(in.base)
}

// TestConsoleMemoryInBrowser walks the console's memory and knowledge: a
// memory added for a user, found by a search and forgotten with the user;
// a document refused for its size before sending, then one uploaded and
// one pasted; the context preview showing the document recalled into the
// system prompt; the memory switches of the agent form; a conversation's
// summary above its messages; and, signed in with a read key, the memory
// list without its write controls once the API has refused a write.
func TestConsoleMemoryInBrowser(t *testing.T) {
	b := newBrowser(t)
	openai := llmtest.NewOpenAI(t)
	// Every chat call (the reply, then the summary) answers this.
	openai.Respond(llmtest.Reply{Text: "Ann asked about trading fees."})
	// An account whose limits never bind: the walk signs in twice, and each
	// overview asks a request a card (runs, conversations, connections…),
	// which a standard account's 60 a minute refused by the end.
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "e2e", "--tier", "enterprise", "--rpm", "1000000", "--endpoint-multiplier", "10000")
	key := keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "e2e").stdout)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL, "AGENTD_PROVIDER_TIMEOUT": "10s"},
		"--addr", "127.0.0.1:0", "--db", db)
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 10 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Broker", "modelProvider": "openai", "model": "gpt-4o-mini",
		"memory": map[string]any{"longTermEnabled": true, "shortTermContext": 1}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	tab := func(name string) chromedp.Action {
		if name != "" {
			name = "/" + name
		}
		return chromedp.Click(`nav.tabs a[href="#/agents/`+id+name+`"]`, chromedp.ByQuery)
	}
	rows := `[...document.querySelectorAll("section.memory tbody tr")]`

	b.run("memory tab", chromedp.Navigate(in.base+"/"), signInWith(key), chromedp.Navigate(in.base+"/#/agents/"+id+"/memory"),
		chromedp.WaitVisible("#memory-title", chromedp.ByQuery), until(`document.body.textContent.includes("No memories yet")`))
	if got := b.eval(`!!document.querySelector("#memory-off")`); got != false {
		t.Errorf("the memory tab says long-term memory is off for an agent that has it on")
	}
	add := chromedp.Click("form.add-memory button[type=submit]", chromedp.ByQuery)
	b.run("add memories", fill("#text", "Ann prefers short answers about trading fees."), fill("#userId", "ann"), add,
		until(`document.querySelector("form.add-memory .ok")?.textContent.includes("Saved for ann")`),
		until(rows+`.length === 1`),
		fill("#text", "The office opens at nine."), fill("#userId", ""), add,
		until(`document.querySelector("form.add-memory .ok")?.textContent.includes("agent-wide")`),
		until(rows+`.length === 2`))
	if got, _ := b.eval(rows + `[0].textContent`).(string); !strings.Contains(got, "office") || !strings.Contains(got, "agent-wide") {
		t.Errorf("the newest memory is not first: %q", got)
	}
	b.shot("memory")
	b.run("search", fill("#memory-q", "short answers"), chromedp.Click("form.memory-search button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector("#memory-ranked")?.textContent.includes("short answers")`),
		until(rows+`[0]?.textContent.includes("Ann prefers short answers")`))
	if !containsAny(b.requested(), "q=short+answers") && !containsAny(b.requested(), "q=short%20answers") {
		t.Errorf("the search did not send q: %v", b.requested())
	}
	b.shot("memory-search")
	b.run("filter by user", fill("#memory-q", ""), fill("#memory-user", "ann"),
		chromedp.Click("form.memory-search button[type=submit]", chromedp.ByQuery),
		until(`!document.querySelector("#memory-ranked") && `+rows+`.length === 1 && `+rows+`[0].textContent.includes("ann")`),
		chromedp.Click("form.memory-search button.quiet", chromedp.ByQuery), until(rows+`.length === 2`))
	b.run("forget ann", fill("#forget-userId", "ann"), chromedp.Click(".forget button.danger", chromedp.ByQuery),
		until(`document.querySelector(".forget [role=alertdialog]")?.textContent.includes("ann")`),
		chromedp.Click(".forget [role=alertdialog] button.danger", chromedp.ByQuery),
		until(`document.querySelector("#forget-done")?.textContent === "Forgot ann: 1 memory deleted."`),
		until(rows+`.length === 1 && `+rows+`[0].textContent.includes("office")`))
	b.shot("memory-forgot")

	dir := t.TempDir()
	big := filepath.Join(dir, "big.md")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", 1_000_001)), 0o644); err != nil {
		t.Fatal(err)
	}
	fees := filepath.Join(dir, "fees.md")
	if err := os.WriteFile(fees, []byte("# Fees\n\nA trade costs a fee of 0.1% of its value.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docs := `[...document.querySelectorAll("section.knowledge tbody tr")]`
	b.run("knowledge tab", tab("knowledge"), chromedp.WaitVisible("#knowledge-file", chromedp.ByQuery),
		until(`document.body.textContent.includes("No documents yet")`))
	b.run("too large", chromedp.SetUploadFiles("#knowledge-file", []string{big}, chromedp.ByQuery),
		until(`document.querySelector(".dropzone .error")?.textContent.includes("at most 1,000,000 bytes")`))
	if got := b.eval(`document.querySelector("#knowledge-upload").disabled`); got != true {
		t.Errorf("a file over the limit can still be sent")
	}
	b.shot("knowledge-too-large")
	b.run("upload", chromedp.SetUploadFiles("#knowledge-file", []string{fees}, chromedp.ByQuery),
		until(`!document.querySelector(".dropzone .error") && !document.querySelector("#knowledge-upload").disabled`),
		chromedp.Click("#knowledge-upload", chromedp.ByQuery),
		until(`document.querySelector(".dropzone .ok")?.textContent.startsWith("Added fees.md")`),
		until(docs+`.some(r => r.textContent.includes("fees.md"))`))
	b.run("paste", fill("#name", "hours.txt"), fill("#text", "The office opens at nine and closes at five."),
		chromedp.Click("form.paste-document button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector("form.paste-document .ok")?.textContent.startsWith("Added hours.txt")`),
		until(docs+`.length === 2`))
	b.shot("knowledge")
	r = c.do("GET", "/v1/agents/"+id+"/knowledge", key, nil)
	expect(t, "list knowledge", r, 200, "")
	if items, _ := r.data(t)["items"].([]any); len(items) != 2 {
		t.Errorf("the agent has %d documents, want 2 (the large one refused before sending)", len(items))
	}

	b.run("context tab", tab("context"), chromedp.WaitVisible("form.context-form", chromedp.ByQuery),
		fill("form.context-form #text", "What fee does a trade cost?"), chromedp.Click("form.context-form button[type=submit]", chromedp.ByQuery),
		until(`[...document.querySelectorAll("#context-knowledge .document")].some(d => d.textContent === "fees.md")`),
		chromedp.Click("#context-system summary", chromedp.ByQuery), chromedp.WaitVisible("#context-system pre", chromedp.ByQuery))
	if got, _ := b.eval(`document.querySelector("#context-system pre").textContent`).(string); !strings.Contains(got, "fees.md") || !strings.Contains(got, "0.1%") {
		t.Errorf("the system prompt shown lacks the document: %.300s", got)
	}
	if got, _ := b.eval(`document.querySelector("#context-tools").textContent`).(string); !strings.Contains(got, "memory_search") {
		t.Errorf("the tools shown lack memory_search: %q", got)
	}
	if got, _ := b.eval(`document.querySelector("#context-tokens").textContent`).(string); got == "" || got == "0" {
		t.Errorf("estimated tokens shown as %q", got)
	}
	b.shot("context")
	if n := openai.Count(); n != 0 {
		t.Errorf("the provider got %d chat requests before any chat; the preview must not call the model", n)
	}

	// The form keeps longTermEnabled (and shortTermContext, which it does
	// not show) when a switch is ticked.
	b.run("memory switches", tab(""), chromedp.WaitVisible("#memory-rememberConversations", chromedp.ByQuery),
		until(`document.querySelector("#memory-longTermEnabled").checked && document.querySelector("#memory-rememberUsers").checked`),
		chromedp.Click("#memory-rememberConversations", chromedp.ByQuery),
		chromedp.Click("form.agent-form button[type=submit]", chromedp.ByQuery),
		until(`document.querySelector(".ok")?.textContent.includes("memory")`))
	r = c.do("GET", "/v1/agents/"+id, key, nil)
	expect(t, "get agent", r, 200, "")
	if m, _ := r.data(t)["memory"].(map[string]any); m["longTermEnabled"] != true || m["rememberConversations"] != true || m["shortTermContext"] != float64(1) {
		t.Errorf("after the form the memory member is %v", m)
	}

	// One turn puts a message out of the one-message window: the model
	// folds it into the summary, after the turn.
	r = c.do("POST", "/v1/agents/"+id+"/messages", key, map[string]any{"text": "What fee does a trade cost?", "userId": "ann"})
	expect(t, "message", r, 200, "")
	r = c.do("GET", "/v1/agents/"+id+"/conversations", key, nil)
	expect(t, "conversations", r, 200, "")
	items, _ := r.data(t)["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("%d conversations, want 1: %s", len(items), r.body)
	}
	conv, _ := items[0].(map[string]any)["id"].(string)
	testutil.Eventually(t, "the summary", func() error {
		r := c.do("GET", "/v1/agents/"+id+"/conversations/"+conv, key, nil)
		if s, _ := r.data(t)["summary"].(string); s == "" {
			return fmt.Errorf("no summary yet: %s", r.body)
		}
		return nil
	})
	b.run("summary", chromedp.Navigate(in.base+"/#/agents/"+id+"/conversations/"+conv),
		until(`document.querySelector(".summary")?.textContent.includes("Ann asked about trading fees.")`),
		until(`document.querySelectorAll(".transcript li").length === 2`))
	if got := b.eval(`!!document.querySelector(".summary + .transcript")`); got != true {
		t.Errorf("the summary is not above the messages")
	}
	b.shot("conversation-summary")

	b.run("narrow memory", chromedp.EmulateViewport(360, 740), chromedp.Navigate(in.base+"/#/agents/"+id+"/memory"),
		until(rows+`.length === 1`))
	b.checkNarrow()
	b.shot("memory-360px")
	// The memory tab has a #text too: fill only once the context form is
	// the one shown.
	b.run("narrow context", tab("context"), chromedp.WaitVisible("form.context-form", chromedp.ByQuery),
		fill("form.context-form #text", "What fee does a trade cost?"),
		chromedp.Click("form.context-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#context-knowledge .document", chromedp.ByQuery),
		chromedp.Click("#context-system summary", chromedp.ByQuery), chromedp.WaitVisible("#context-system pre", chromedp.ByQuery))
	b.checkNarrow()
	b.shot("context-360px")

	// A read key sees the list; its first refused write tells the console
	// that the key is read-only, and the write controls go.
	readKey := keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "e2e", "--scope", "read", "--expires", "1d").stdout)
	b.run("read key", chromedp.EmulateViewport(1280, 900), chromedp.Click("header button.sign-out", chromedp.ByQuery),
		chromedp.WaitVisible("#api-key", chromedp.ByQuery), signInWith(readKey),
		chromedp.Navigate(in.base+"/#/agents/"+id+"/memory"), until(rows+`.length === 1`),
		fill("#text", "Read keys cannot write."), add,
		until(`document.querySelector("section.memory .read-only") && !document.querySelector("form.add-memory") && !document.querySelector(".forget")`))
	if got := b.eval(`document.querySelectorAll("section.memory tbody button").length`); got != float64(0) {
		t.Errorf("a read key still sees %v delete buttons", got)
	}
	b.shot("memory-read-key")
	b.run("read-only knowledge", tab("knowledge"), until(docs+`.length === 2`),
		until(`document.querySelector("section.knowledge .read-only") && !document.querySelector("#knowledge-file")`))
	b.checkOnlyFrom(in.base)
}

// webhooks walks the Webhooks page: an events error at its field, create
// with the secret shown once, a test event delivered to hooks and listed
// as succeeded, and a rotated secret. It returns the webhook's id.
func (b *browser) webhooks(hooks *receiver) string {
	t := b.t
	t.Helper()
	b.run("webhooks page", chromedp.Click(`header a[href="#/webhooks"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#webhooks-title", chromedp.ByQuery),
		until(`document.body.textContent.includes("No webhooks yet")`))
	all := `#events input[value="*"]`
	b.run("create with no events", fill("#url", hooks.URL+"/hook"), chromedp.Click(all, chromedp.ByQuery),
		chromedp.Click("form.webhook-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#events-error", chromedp.ByQuery))
	if got := b.eval(`document.querySelector("#events").getAttribute("aria-describedby")`); !strings.Contains(fmt.Sprint(got), "events-error") {
		t.Errorf("events described by %v, want its error", got)
	}
	b.run("create", chromedp.Click(all, chromedp.ByQuery), fill("#description", "console test"),
		chromedp.Click("form.webhook-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#webhook-secret", chromedp.ByQuery),
		until(`document.querySelector("a[href^='#/webhooks/wh_']")`))
	secret, _ := b.eval(`document.querySelector("#webhook-secret").value`).(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Errorf("the created webhook's secret shows as %q", secret)
	}
	if got, _ := b.eval(`document.querySelector(".secret").textContent`).(string); !strings.Contains(got, "shown only this once") {
		t.Errorf("the secret has no copy-it-now note: %q", got)
	}
	b.shot("webhook-created")
	b.run("secret stored", chromedp.Click(".secret button.quiet", chromedp.ByQuery), until(`!document.querySelector(".secret")`))
	if got := b.eval(`document.body.innerHTML.includes(` + jsString(secret) + `)`); got != false {
		t.Errorf("the secret is still in the page after it was stored")
	}

	b.run("open the webhook", chromedp.Click("a[href^='#/webhooks/wh_']", chromedp.ByQuery),
		chromedp.WaitVisible("#webhook-title", chromedp.ByQuery),
		until(`document.body.textContent.includes("No deliveries")`))
	id, _ := b.eval(`location.hash.split("/")[2]`).(string)
	// The page refreshes its deliveries while one is due, without a click.
	b.run("send a test", chromedp.Click(".actions button", chromedp.ByQuery),
		until(`document.querySelector(".ok[role=status]")?.textContent.includes("queued")`),
		until(`document.querySelector(".deliveries .status.succeeded")`))
	if got, _ := b.eval(`document.querySelector(".deliveries tbody").textContent`).(string); !strings.Contains(got, "webhook.test") || !strings.Contains(got, "HTTP 204") {
		t.Errorf("the delivery shows as %q; want webhook.test answered 204", got)
	}
	if got := hooks.types(); len(got) != 1 || got[0] != "webhook.test" {
		t.Errorf("the receiver got %v; want one webhook.test", got)
	}
	b.shot("webhooks")

	b.run("rotate the secret", chromedp.Click(".actions button:nth-child(2)", chromedp.ByQuery),
		chromedp.WaitVisible("#webhook-secret", chromedp.ByQuery))
	if rotated, _ := b.eval(`document.querySelector("#webhook-secret").value`).(string); !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Errorf("the rotated secret shows as %q", rotated)
	}
	return id
}

// checkNarrow fails when the page is wider than a 360px viewport.
func (b *browser) checkNarrow() {
	b.t.Helper()
	if w := b.eval(`document.documentElement.scrollWidth`); w != float64(360) {
		wide := b.eval(`[...document.querySelectorAll("*")].filter(e => e.getBoundingClientRect().right > 360).map(e => e.tagName + "#" + e.id).join(" ")`)
		b.t.Errorf("at 360px the page is %v px wide (%v); it must not scroll sideways", w, wide)
	}
}

// receiver is a webhook endpoint on loopback that answers 204 and keeps
// the type of each event it got.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	events []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var event struct{ Type string }
		if err == nil {
			err = json.Unmarshal(body, &event)
		}
		if err != nil || req.Header.Get("webhook-signature") == "" {
			t.Errorf("webhook request: %v, signature %q, body %q", err, req.Header.Get("webhook-signature"), body)
		}
		r.mu.Lock()
		r.events = append(r.events, event.Type)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// types returns the types of the events received so far.
func (r *receiver) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// eval returns the value of a JavaScript expression in the page.
func (b *browser) eval(expr string) any {
	b.t.Helper()
	var v any
	b.run("evaluate "+expr, chromedp.Evaluate(expr, &v))
	return v
}

func containsAny(urls []string, part string) bool {
	for _, u := range urls {
		if strings.Contains(u, part) {
			return true
		}
	}
	return false
}
