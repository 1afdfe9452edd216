package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store/storetest"
)

// background sends text to the agent in the background as user and
// returns the run it answered 202 with.
func (h *harness) background(agentID, user, text string, extra map[string]any) map[string]any {
	h.t.Helper()
	body := map[string]any{"text": text, "userId": user, "background": true}
	for k, v := range extra {
		body[k] = v
	}
	res := h.send(agentID, body)
	if res.Code != http.StatusAccepted {
		h.t.Fatalf("background send: %d %s", res.Code, res.Body)
	}
	run := res.Data(h.t)
	if want := "/v1/agents/" + agentID + "/runs/" + run["id"].(string); res.Header.Get("Location") != want {
		h.t.Errorf("Location %q, want %q", res.Header.Get("Location"), want)
	}
	return run
}

// run reads a run, waiting up to wait seconds (0: not at all) for it to end.
func (h *harness) run(agentID, runID string, wait int) map[string]any {
	h.t.Helper()
	path := "/v1/agents/" + agentID + "/runs/" + runID
	if wait > 0 {
		path += fmt.Sprint("?wait=", wait)
	}
	res := h.get(path)
	if res.Code != http.StatusOK {
		h.t.Fatalf("get run: %d %s", res.Code, res.Body)
	}
	return res.Data(h.t)
}

// runningSoon waits until the run has started.
func (h *harness) runningSoon(agentID, runID string) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for h.run(agentID, runID, 0)["status"] != "running" {
		if time.Now().After(deadline) {
			h.t.Fatalf("run %s never started", runID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// asked waits until the provider has received n requests in all.
func (h *harness) asked(n int) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for h.openai.Count() < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("the provider got %d requests, want %d", h.openai.Count(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runsOf is the source and status of each run of the agent, newest
// first, as GET /v1/runs shows them: "api completed,openai completed".
func (h *harness) runsOf(agentID string) string {
	h.t.Helper()
	var out []string
	for _, r := range h.items(h.get("/v1/runs?agentId=" + agentID)) {
		out = append(out, fmt.Sprint(r["source"], " ", r["status"]))
	}
	return strings.Join(out, ",")
}

// askedSince is the last user message of each request the OpenAI test
// server got after its first n, in order: what each run asked.
func (h *harness) askedSince(n int) []string {
	h.t.Helper()
	var asked []string
	for _, req := range h.openai.Requests()[n:] {
		last := ""
		if _, msgs := req.Conversation(); len(msgs) > 0 {
			last = msgs[len(msgs)-1].Content
		}
		asked = append(asked, last)
	}
	return asked
}

// history is the texts of the user's direct conversation, oldest first.
func (h *harness) history(agentID, user string) string {
	h.t.Helper()
	convs := h.items(h.get("/v1/agents/" + agentID + "/conversations?userId=" + user))
	if len(convs) != 1 {
		h.t.Fatalf("conversations of %s: %v", user, convs)
	}
	return field(h.items(h.get("/v1/agents/"+agentID+"/conversations/"+convs[0]["id"].(string)+"/messages?limit=100")), "text")
}

// TestBackgroundRun: a background send answers 202 with the queued run and
// its Location; the run goes on without the client, `wait` holds the
// answer until it completed, and its reply is the one stored, naming the
// run, as the synchronous reply names its run too.
func TestBackgroundRun(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarnessAt(t, dsn, nil, nil)
		h.openai.Respond(llmtest.Reply{Text: "done later", Delay: 200 * time.Millisecond})
		id := h.createAgent(map[string]any{"name": "worker"})
		run := h.background(id, "ann", "work on it", nil)
		if run["status"] != "queued" && run["status"] != "running" || run["source"] != "api" ||
			run["multitaskStrategy"] != "enqueue" || run["reply"] != nil || run["input"].(map[string]any)["text"] != "work on it" ||
			!strings.HasPrefix(run["id"].(string), "run_") || run["conversationId"] == nil || run["userId"] != "ann" {
			t.Fatalf("accepted run = %v", run)
		}
		done := h.run(id, run["id"].(string), 10)
		reply, _ := done["reply"].(map[string]any)
		if done["status"] != "completed" || reply["response"] != "done later" || reply["runId"] != run["id"] ||
			reply["messageId"] != run["messageId"] || done["attempts"] != 1.0 || done["finishedAt"] == nil || done["startedAt"] == nil {
			t.Fatalf("finished run = %v", done)
		}
		if got := h.history(id, "ann"); got != "work on it,done later" {
			t.Errorf("history: %s", got)
		}

		h.openai.Respond(llmtest.Reply{Text: "now"})
		sync := h.send(id, map[string]any{"text": "and now?", "userId": "bob"}).Data(t)
		got := h.run(id, sync["runId"].(string), 0)
		if got["status"] != "completed" || got["messageId"] != sync["messageId"] || got["reply"].(map[string]any)["response"] != "now" {
			t.Errorf("the synchronous reply's run = %v", got)
		}
		all := h.items(h.get("/v1/runs?agentId=" + id + "&source=api&status=completed"))
		if field(all, "id") != fmt.Sprint(sync["runId"], ",", run["id"]) {
			t.Errorf("runs, newest first: %s", field(all, "id"))
		}
		if mine := h.items(h.get("/v1/agents/" + id + "/runs?conversationId=" + run["conversationId"].(string))); field(mine, "id") != run["id"] {
			t.Errorf("runs of the first conversation: %s", field(mine, "id"))
		}
		// An Idempotency-Key replays the same 202 and makes no second run.
		again := keyed(request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey,
			body: map[string]any{"text": "once", "userId": "cy", "background": true}}, "bg-1")
		first, second := h.do(again), h.do(again)
		if first.Code != http.StatusAccepted || second.Code != http.StatusAccepted || string(first.Body) != string(second.Body) ||
			second.Header.Get("Location") != first.Header.Get("Location") {
			t.Errorf("replayed background send: %d %s / %d %s", first.Code, first.Body, second.Code, second.Body)
		}
		h.run(id, first.Data(t)["id"].(string), 10)
		if runs := h.items(h.get("/v1/agents/" + id + "/runs?conversationId=" + first.Data(t)["conversationId"].(string))); len(runs) != 1 {
			t.Errorf("%d runs after a replayed send, want 1", len(runs))
		}
		h.checkError(t, errorCase{name: "unknown run", req: request{method: "GET", path: "/v1/agents/" + id + "/runs/run_nope", key: h.readKey},
			status: 404, code: "RUN_NOT_FOUND"})
		h.checkError(t, errorCase{name: "background stream", req: request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey,
			body: map[string]any{"text": "x", "background": true, "stream": true}}, status: 400, code: "INVALID_REQUEST", field: "background"})
	})
}

// TestRunsOfAConversationGoInOrder: three messages a few milliseconds apart
// to one conversation run one at a time, in the order they came, each
// seeing the replies before it; another conversation does not wait.
func TestRunsOfAConversationGoInOrder(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarnessAt(t, dsn, nil, nil)
		h.openai.Respond(llmtest.Reply{Text: "ok", Delay: 50 * time.Millisecond})
		h.openai.Enqueue(llmtest.Reply{Text: "ok", Delay: time.Second}) // the first run's
		id := h.createAgent(map[string]any{"name": "orderly"})
		var runs []map[string]any
		for _, text := range []string{"one", "two", "three"} {
			runs = append(runs, h.background(id, "ann", text, nil))
			time.Sleep(3 * time.Millisecond)
		}
		other := h.background(id, "bob", "elsewhere", nil)
		var ended []map[string]any
		for _, r := range runs {
			ended = append(ended, h.run(id, r["id"].(string), 10))
		}
		for i, r := range ended {
			if r["status"] != "completed" {
				t.Fatalf("run %d: %v", i, r)
			}
			if i > 0 && r["startedAt"].(string) < ended[i-1]["finishedAt"].(string) {
				t.Errorf("run %d started at %v, before run %d ended at %v", i, r["startedAt"], i-1, ended[i-1]["finishedAt"])
			}
		}
		if bob := h.run(id, other["id"].(string), 0); bob["finishedAt"] == nil || bob["finishedAt"].(string) > ended[0]["finishedAt"].(string) {
			t.Errorf("the other conversation's run waited for the first one's: %v", bob)
		}
		if got := h.history(id, "ann"); got != "one,ok,two,ok,three,ok" {
			t.Errorf("history: %s", got)
		}
	})
}

// TestMultitaskStrategies: what a message does to a conversation's
// running run under each strategy: reject is refused naming it, interrupt
// stops it keeping its message, rollback stops it leaving no trace, merge
// joins the texts; a message merged into a queued run answers with it.
func TestMultitaskStrategies(t *testing.T) {
	h := newHarness(t)
	id := h.createAgent(map[string]any{"name": "juggler"})
	slowThenQuick := func() {
		h.openai.Respond(llmtest.Reply{Text: "quick"})
		h.openai.Enqueue(llmtest.Reply{Text: "slow", Delay: 2 * time.Second})
	}
	for _, c := range []struct {
		strategy, firstStatus, history string
	}{
		{"interrupt", "interrupted", "first,,second,quick"},
		{"rollback", "rolled_back", "second,quick"},
		{"merge", "rolled_back", "first\nsecond,quick"},
	} {
		t.Run(c.strategy, func(t *testing.T) {
			slowThenQuick()
			user := "u-" + c.strategy
			before := h.openai.Count()
			first := h.background(id, user, "first", nil)
			h.asked(before + 1) // the first run is with the provider
			res := h.send(id, map[string]any{"text": "second", "userId": user, "multitaskStrategy": c.strategy})
			if res.Code != http.StatusOK || res.Data(t)["response"] != "quick" {
				t.Fatalf("second message: %d %s", res.Code, res.Body)
			}
			second := h.run(id, res.Data(t)["runId"].(string), 0)
			if second["multitaskStrategy"] != c.strategy {
				t.Errorf("second run = %v", second)
			}
			if got := h.run(id, first["id"].(string), 5); got["status"] != c.firstStatus {
				t.Errorf("first run = %v, want %s", got, c.firstStatus)
			}
			if got := h.history(id, user); got != c.history {
				t.Errorf("history %q, want %q", got, c.history)
			}
		})
	}
	t.Run("reject", func(t *testing.T) {
		slowThenQuick()
		first := h.background(id, "u-reject", "first", nil)
		h.checkError(t, errorCase{name: "rejected", req: request{method: "POST", path: "/v1/agents/" + id + "/messages", key: h.writeKey,
			body: map[string]any{"text": "second", "userId": "u-reject", "multitaskStrategy": "reject"}},
			status: 409, code: "CONVERSATION_BUSY", details: map[string]any{"runId": first["id"]}})
		h.run(id, first["id"].(string), 10)
	})
	t.Run("merge into a queued run", func(t *testing.T) {
		h.openai.Respond(llmtest.Reply{Text: "both"})
		h.openai.Enqueue(llmtest.Reply{Text: "slow", Delay: 500 * time.Millisecond})
		before := h.openai.Count()
		h.background(id, "u-queue", "first", nil)
		h.asked(before + 1) // the first run is with the provider: the next one waits
		queued := h.background(id, "u-queue", "a", nil)
		merged := h.background(id, "u-queue", "b", map[string]any{"multitaskStrategy": "merge"})
		if merged["id"] != queued["id"] || merged["input"].(map[string]any)["text"] != "a\nb" {
			t.Fatalf("merged = %v, queued = %v", merged, queued)
		}
		if got := h.run(id, queued["id"].(string), 10); got["reply"].(map[string]any)["response"] != "both" {
			t.Errorf("merged run = %v", got)
		}
		// The run that waited is asked, and stored, with the text merged
		// into it while it waited.
		if asked := h.askedSince(before + 1); !slices.Equal(asked, []string{"a\nb"}) {
			t.Errorf("the queued run asked %q", asked)
		}
		if got := h.history(id, "u-queue"); got != "first,slow,a\nb,both" {
			t.Errorf("history %q", got)
		}
	})
}

// TestAgentStrategySetting: settings.runs.multitaskStrategy is the
// default of the agent's messages; settings.runs takes only its members.
func TestAgentStrategySetting(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Text: "slow", Delay: time.Second})
	id := h.createAgent(map[string]any{"name": "strict", "settings": map[string]any{"runs": map[string]any{"multitaskStrategy": "reject"}}})
	first := h.background(id, "ann", "first", nil)
	if first["multitaskStrategy"] != "reject" {
		t.Errorf("run = %v", first)
	}
	res := h.send(id, map[string]any{"text": "second", "userId": "ann"})
	if res.Code != http.StatusConflict {
		t.Errorf("second message under the agent's reject: %d %s", res.Code, res.Body)
	}
	for member, value := range map[string]any{"multitaskStrategy": "shout", "colour": "red", "approvalTimeout": 10} {
		h.checkError(t, errorCase{name: member, req: request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey,
			body: map[string]any{"settings": map[string]any{"runs": map[string]any{member: value}}}},
			status: 400, code: "INVALID_REQUEST", field: "settings.runs." + member})
	}
	h.run(id, first["id"].(string), 10)
}

// TestCancelRun: a queued run is cancelled at once, a running one stops
// within 5 seconds; a run that ended is 409 RUN_FINISHED naming its status.
func TestCancelRun(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Text: "never", Delay: 3 * time.Second})
	id := h.createAgent(map[string]any{"name": "stoppable"})
	running := h.background(id, "ann", "long job", nil)
	h.runningSoon(id, running["id"].(string))
	queued := h.background(id, "ann", "next job", nil)
	cancel := func(runID string) response {
		return h.do(request{method: "POST", path: "/v1/agents/" + id + "/runs/" + runID + "/cancel", key: h.writeKey})
	}
	if res := cancel(queued["id"].(string)); res.Code != 200 || res.Data(t)["status"] != "cancelled" {
		t.Fatalf("cancel queued: %d %s", res.Code, res.Body)
	}
	start := time.Now()
	if res := cancel(running["id"].(string)); res.Code != 200 {
		t.Fatalf("cancel running: %d %s", res.Code, res.Body)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if got := h.run(id, running["id"].(string), 10); got["status"] != "cancelled" || time.Since(start) > 5*time.Second {
			t.Errorf("cancelled run after %v: %v", time.Since(start), got)
		}
	}()
	wg.Wait()
	h.checkError(t, errorCase{name: "again", req: request{method: "POST", path: "/v1/agents/" + id + "/runs/" + queued["id"].(string) + "/cancel",
		key: h.writeKey}, status: 409, code: "RUN_FINISHED", details: map[string]any{"status": "cancelled"}})

	// The message cancel cancels the run behind a reply that was not
	// streamed, queued or running.
	byMessage := h.background(id, "bob", "another long job", nil)
	h.runningSoon(id, byMessage["id"].(string))
	behind := h.background(id, "bob", "and one more", nil)
	for _, r := range []map[string]any{behind, byMessage} {
		res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/" + r["messageId"].(string) + "/cancel", key: h.writeKey})
		if res.Code != 200 || res.Data(t)["partial"] != true {
			t.Fatalf("message cancel of %q: %d %s", r["input"], res.Code, res.Body)
		}
		if got := h.run(id, r["id"].(string), 10); got["status"] != "cancelled" || got["reply"] != nil {
			t.Errorf("the run behind the cancelled message %q: %v", r["input"], got)
		}
	}
	h.checkError(t, errorCase{name: "unknown", req: request{method: "POST", path: "/v1/agents/" + id + "/runs/run_unknown/cancel",
		key: h.writeKey}, status: 404, code: "RUN_NOT_FOUND"})

	// A queued run that was cancelled never reaches the provider, even
	// once the runs before it ended.
	h.openai.Respond(llmtest.Reply{Text: "free again"})
	if done := h.run(id, h.background(id, "ann", "after the cancels", nil)["id"].(string), 10); done["status"] != "completed" {
		t.Errorf("the conversation's next run: %v", done)
	}
	if asked := h.askedSince(0); slices.Contains(asked, "next job") || slices.Contains(asked, "and one more") {
		t.Errorf("a cancelled queued run asked the provider: %q", asked)
	}
}

// cancelWhileStreaming streams a message on h and, once a token came,
// cancels its run on by (h itself, or another replica): the stream ends
// with done, partial, within 5 seconds, and what was said is the run's
// reply, stored partial in history.
func cancelWhileStreaming(t *testing.T, h, by *harness) {
	h.openai.Respond(llmtest.Reply{Fragments: strings.Fields(strings.Repeat("word ", 200)), FragmentDelay: 50 * time.Millisecond})
	id := h.createAgent(map[string]any{"name": "talker"})
	live := httptest.NewServer(h.srv.Handler())
	t.Cleanup(live.Close)
	c := openSSE(t, "POST", live.URL+"/v1/agents/"+id+"/messages/stream", h.writeKey, map[string]any{"text": "talk", "userId": "ann"}, nil)
	_, start, _ := c.next()
	_, first, _ := c.next()
	runID := fmt.Sprint(start["runId"])
	res := by.do(request{method: "POST", path: "/v1/agents/" + id + "/runs/" + runID + "/cancel", key: h.writeKey})
	if res.Code != 200 || res.Data(t)["status"] != "cancelled" && res.Data(t)["status"] != "running" {
		t.Fatalf("cancel: %d %s", res.Code, res.Body)
	}
	cancelled := time.Now()
	_, events := c.rest()
	if took := time.Since(cancelled); took > 5*time.Second {
		t.Errorf("the stream went on %v after the cancel", took)
	}
	if done := events[len(events)-1]; done["type"] != "done" || done["partial"] != true || done["messageId"] != start["messageId"] {
		t.Fatalf("the stream ended with %v", done)
	}
	said := tokens(append([]event{first}, events...))
	run := h.run(id, runID, 5)
	if reply, _ := run["reply"].(map[string]any); run["status"] != "cancelled" || reply["response"] != said || reply["messageId"] != start["messageId"] {
		t.Errorf("run %v; the stream said %q", run, said)
	}
	if stored := h.storedReply(t, id, "ann"); !stored.Partial || stored.Text != said || len(said) >= len("word")*200 {
		t.Errorf("stored %q, partial %v; the stream said %q", stored.Text, stored.Partial, said)
	}
}

// TestCancelStreamingRun: a run cancelled while it streams stops there.
func TestCancelStreamingRun(t *testing.T) {
	h := newHarness(t)
	cancelWhileStreaming(t, h, h)
}

// sseFrames are the frames of an event stream but its pings, as they came.
func sseFrames(body []byte) []string {
	var out []string
	for _, frame := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		if frame != "" && !strings.HasPrefix(frame, ":") {
			out = append(out, frame)
		}
	}
	return out
}

// TestStreamRun: a streamed run's stream is the message stream, replayed
// whole or after Last-Event-ID; a background run's stream is kept the same
// way; a run whose events are no longer kept answers its end once it
// ended, as one done event with its reply's metadata.
func TestStreamRun(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(llmtest.Reply{Fragments: []string{"Hel", "lo"}})
	id := h.createAgent(map[string]any{"name": "streamer"})
	body := h.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/stream", key: h.writeKey,
		body: map[string]any{"text": "hi", "userId": "ann"}}).Body
	streamed := sseFrames(body)
	var start struct{ RunID string }
	if err := json.Unmarshal([]byte(strings.SplitN(streamed[0], "data: ", 2)[1]), &start); err != nil || !strings.HasPrefix(start.RunID, "run_") {
		t.Fatalf("start event %q: %v", streamed[0], err)
	}
	if got := h.runsOf(id); got != "api completed" {
		t.Errorf("the streamed message's run: %s", got)
	}
	path := "/v1/agents/" + id + "/runs/" + start.RunID + "/stream"
	if again := sseFrames(h.get(path).Body); strings.Join(again, "|") != strings.Join(streamed, "|") {
		t.Errorf("run stream %q, want the message stream %q", again, streamed)
	}
	resumed := sseFrames(h.do(request{method: "GET", path: path, key: h.readKey, header: map[string]string{"Last-Event-ID": "2"}}).Body)
	if strings.Join(resumed, "|") != strings.Join(streamed[2:], "|") {
		t.Errorf("resumed after 2: %q", resumed)
	}

	h.openai.Respond(llmtest.Reply{Text: "later", Delay: 200 * time.Millisecond, PromptTokens: 4, CompletionTokens: 2})
	bg := h.background(id, "bob", "in the background", nil)
	bgPath := "/v1/agents/" + id + "/runs/" + bg["id"].(string) + "/stream"
	bgBody := h.get(bgPath).Body
	events := parseSSE(t, bgBody) // checks the start event names the reply
	if !strings.Contains(sseFrames(bgBody)[0], `"runId":"`+bg["id"].(string)+`"`) || len(events) != 2 || tokens(events) != "later" ||
		events[1]["type"] != "done" || events[1]["messageId"] != bg["messageId"] || events[1]["metadata"].(map[string]any)["tokensUsed"] != 6.0 {
		t.Errorf("background run's stream: %s", bgBody)
	}

	// Past the streams' retention the run's end is built from the run.
	var pruned []string
	testutil.Eventually(t, "the run's events forgotten", func() error {
		if err := h.store.Streams().PruneStreams(context.Background(), time.Now().Add(time.Hour)); err != nil {
			return err
		}
		pruned = sseFrames(h.get(bgPath).Body)
		return testutil.Equal("events", len(pruned), 1)
	})
	var done struct {
		Type, MessageID string
		Metadata        struct{ TokensUsed int }
	}
	if len(pruned) != 1 || json.Unmarshal([]byte(strings.SplitN(pruned[0], "data: ", 2)[1]), &done) != nil ||
		done.Type != "done" || done.MessageID != bg["messageId"] || done.Metadata.TokensUsed != 6 {
		t.Errorf("the stream of a run whose events are gone: %q", pruned)
	}
}

// TestSyncSendAnswers202AfterRunWait: a synchronous Send Message waits for
// its run for RunWait, then answers 202 with the run, which goes on to
// complete.
func TestSyncSendAnswers202AfterRunWait(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.RunWait = 200 * time.Millisecond })
	h.openai.Respond(llmtest.Reply{Text: "took a while", Delay: 700 * time.Millisecond})
	id := h.createAgent(map[string]any{"name": "slowpoke"})
	res := h.send(id, map[string]any{"text": "take your time", "userId": "ann"})
	if res.Code != http.StatusAccepted || res.Header.Get("Location") == "" {
		t.Fatalf("send past RunWait: %d %s", res.Code, res.Body)
	}
	run := res.Data(t)
	if run["status"] != "running" {
		t.Errorf("run = %v, want running", run)
	}
	if done := h.run(id, run["id"].(string), 10); done["status"] != "completed" || done["reply"].(map[string]any)["response"] != "took a while" {
		t.Errorf("the run went on to %v", done)
	}
}
