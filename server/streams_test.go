package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/streamlog/streamlogtest"
)

// streamedReply streams a message to the agent and returns its reply's id
// as the start event names it.
func (h *harness) streamedReply(agentID string) string {
	h.t.Helper()
	res := h.do(request{method: "POST", path: "/v1/agents/" + agentID + "/messages/stream", key: h.writeKey,
		body: map[string]any{"text": "hello", "userId": "walker"}})
	events := parseSSE(h.t, res.Body)
	return fmt.Sprint(events[len(events)-1]["messageId"])
}

// replica is a second server over the harness's database and turns, with
// its own streams: another replica, listening. Streams, when set, is where
// both keep their streams.
func (h *harness) replica(t *testing.T) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h.secondServer(t, h.store).srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// secondServer is another replica of the harness's configuration: a
// server of its own on st, with its own streams and metrics, that the
// returned harness's requests go to; tweak adjusts its configuration.
func (h *harness) secondServer(t *testing.T, st *store.Store, tweak ...func(*Config)) *harness {
	t.Helper()
	cfg := h.cfg.Config
	cfg.Store, cfg.Registry = storesOf(st), nil
	for _, f := range tweak {
		f(&cfg)
	}
	b := h.with(t)
	b.srv = newServer(t, cfg)
	return b
}

// sseClient reads a live stream event by event.
type sseClient struct {
	t      *testing.T
	pings  int // the ping comments read so far
	res    *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// openSSE sends a request to a live server and returns its stream.
func openSSE(t *testing.T, method, url, key string, body any, header map[string]string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := &sseClient{t: t, res: res, r: bufio.NewReader(res.Body), cancel: cancel}
	t.Cleanup(c.close)
	if res.StatusCode != 200 {
		t.Fatalf("%s %s: %d", method, url, res.StatusCode)
	}
	return c
}

// next returns the next event and its id; ok is false at the end.
func (c *sseClient) next() (id int, ev event, ok bool) {
	c.t.Helper()
	for {
		frame, err := c.frame()
		if err != nil {
			return 0, nil, false
		}
		if strings.HasPrefix(frame, ": ping") {
			c.pings++
			continue
		}
		idLine, data, _ := strings.Cut(frame, "\n")
		id, err = strconv.Atoi(strings.TrimPrefix(idLine, "id: "))
		if err != nil {
			c.t.Fatalf("frame without id: %q", frame)
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &ev); err != nil {
			c.t.Fatalf("bad event %q: %v", data, err)
		}
		return id, ev, true
	}
}

// frame reads up to the next blank line.
func (c *sseClient) frame() (string, error) {
	var b strings.Builder
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if line == "\n" {
			return strings.TrimSuffix(b.String(), "\n"), nil
		}
		b.WriteString(line)
	}
}

// close drops the connection.
func (c *sseClient) close() {
	c.cancel()
	_ = c.res.Body.Close()
}

// rest reads the events to the end, returning their ids and events.
func (c *sseClient) rest() (ids []int, events []event) {
	for {
		id, ev, ok := c.next()
		if !ok {
			return ids, events
		}
		ids, events = append(ids, id), append(events, ev)
	}
}

// tokens joins the content of the token events.
func tokens(events []event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev["type"] == "token" {
			b.WriteString(ev["content"].(string))
		}
	}
	return b.String()
}

// slowReply is a reply streamed one word every 100ms.
var slowReply = llmtest.Reply{Fragments: []string{"one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight"},
	FragmentDelay: 100 * time.Millisecond}

// storedReply is the agent's last stored reply to user u.
func (h *harness) storedReply(t *testing.T, agentID, user string) domain.Message {
	t.Helper()
	var msgs []domain.Message
	testutil.Eventually(t, "the reply stored", func() error {
		var err error
		msgs, err = h.store.Conversations().History(context.Background(), h.account.ID, agentID, domain.ConversationRef{UserID: user}, 10)
		if err != nil {
			return err
		}
		return testutil.Equal("messages", len(msgs), 2)
	})
	return msgs[1]
}

// TestStreamOutlivesItsClient: pings come while the stream waits; a
// client that goes away mid-reply does not stop it: the reply runs to its
// end, is stored whole and frees its slot.
func TestStreamOutlivesItsClient(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.PingInterval = 20 * time.Millisecond })
	h.openai.Respond(slowReply)
	id := h.createAgent(map[string]any{"name": "slow"})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	c := openSSE(t, "POST", ts.URL+"/v1/agents/"+id+"/messages/stream", h.writeKey, map[string]any{"text": "count", "userId": "u"}, nil)
	_, start, _ := c.next()
	if _, ev, _ := c.next(); start["type"] != "start" || ev["type"] != "token" {
		t.Fatalf("first events %v, %v", start, ev)
	}
	if c.next(); c.pings == 0 {
		t.Error("no ping while waiting between tokens")
	}
	c.close()
	reply := h.storedReply(t, id, "u")
	if reply.Text != "one two three four five six seven eight" || reply.Partial || reply.ID != start["messageId"] {
		t.Errorf("stored reply %q (%s), partial %v; want the whole reply as %s", reply.Text, reply.ID, reply.Partial, start["messageId"])
	}
	testutil.Eventually(t, "the stream's slot freed", slotsFree(t, h.cfg.Turn.Semaphore, "agent:"+id))
}

// streamBackends open a harness, tweaked, by where it keeps its streams:
// the database (SQLite and PostgreSQL) and Redis.
func streamBackends() map[string]func(t *testing.T, tweak ...func(*harnessConfig)) *harness {
	return map[string]func(t *testing.T, tweak ...func(*harnessConfig)) *harness{
		"sqlite":   func(t *testing.T, tweak ...func(*harnessConfig)) *harness { return newHarness(t, tweak...) },
		"postgres": func(t *testing.T, tweak ...func(*harnessConfig)) *harness { return newHarnessPostgres(t, tweak...) },
		"redis": func(t *testing.T, tweak ...func(*harnessConfig)) *harness {
			backend := streamlog.NewRedis(testutil.Redis(t))
			return newHarness(t, append(tweak, func(c *harnessConfig) { c.Streams = backend })...)
		},
	}
}

// TestResumeStreamOnAnotherReplica: a stream cut mid-reply and resumed on
// another replica with Last-Event-ID gives every event once, the tokens
// together are the stored reply, and a resume without Last-Event-ID
// replays it from start; with the events in the database (SQLite and
// PostgreSQL) and in Redis.
func TestResumeStreamOnAnotherReplica(t *testing.T) {
	for name, open := range streamBackends() {
		t.Run(name, func(t *testing.T) {
			h := open(t)
			h.openai.Respond(slowReply)
			id := h.createAgent(map[string]any{"name": "slow"})
			first := httptest.NewServer(h.srv.Handler())
			defer first.Close()
			other := h.replica(t)
			c := openSSE(t, "POST", first.URL+"/v1/agents/"+id+"/messages/stream", h.writeKey, map[string]any{"text": "count", "userId": "u"}, nil)
			var seen []event
			last := 0
			for len(seen) < 3 {
				id, ev, ok := c.next()
				if !ok {
					t.Fatal("the stream ended early")
				}
				seen, last = append(seen, ev), id
			}
			c.close()
			messageID := fmt.Sprint(seen[0]["messageId"])
			path := other.URL + "/v1/agents/" + id + "/messages/" + messageID + "/stream"
			ids, rest := openSSE(t, "GET", path, h.writeKey, nil, map[string]string{"Last-Event-ID": strconv.Itoa(last)}).rest()
			for i, got := range ids {
				if got != last+1+i {
					t.Fatalf("resumed ids %v after %d", ids, last)
				}
			}
			all := append(seen, rest...)
			done := all[len(all)-1]
			reply := h.storedReply(t, id, "u")
			if tokens(all) != reply.Text || reply.Text != "one two three four five six seven eight" || done["type"] != "done" || done["messageId"] != messageID {
				t.Errorf("tokens %q, stored %q, last %v", tokens(all), reply.Text, done)
			}
			// From the start, on the first replica, once it is over.
			ids, again := openSSE(t, "GET", first.URL+"/v1/agents/"+id+"/messages/"+messageID+"/stream", h.writeKey, nil, nil).rest()
			if len(again) != len(all) || ids[0] != 1 || again[0]["type"] != "start" || tokens(again) != reply.Text {
				t.Errorf("replay from start: ids %v, %d events, want %d", ids, len(again), len(all))
			}
		})
	}
}

// TestStreamOfADeadReplica: once the replica running a stream dies, a
// resume on another replica ends within a few LostAfter with an error event
// of code STREAM_LOST, and a cancel answers 200 partial at once rather than
// 500 after its wait (security review N5); on every stream backend. The
// client resumes after an event the dead replica streamed from memory and
// may never have written: the lost event still reaches it.
func TestStreamOfADeadReplica(t *testing.T) {
	const lostAfter = 400 * time.Millisecond
	for name, open := range streamBackends() {
		t.Run(name, func(t *testing.T) {
			h := open(t, func(c *harnessConfig) { c.ReplicaLostAfter = lostAfter })
			h.openai.Respond(slowReply)
			id := h.createAgent(map[string]any{"name": "slow"})
			live := httptest.NewServer(h.srv.Handler())
			defer live.Close()
			var shared streamlog.Backend = h.cfg.Store.Streams
			if h.cfg.Streams != nil {
				shared = h.cfg.Streams
			}
			dying := &streamlogtest.Dying{Backend: shared}
			doomed := h.secondServer(t, h.store, func(c *Config) { c.Streams = dying })
			dead := httptest.NewServer(doomed.srv.Handler())
			defer dead.Close()

			c := openSSE(t, "POST", dead.URL+"/v1/agents/"+id+"/messages/stream", h.writeKey, map[string]any{"text": "count", "userId": "u"}, nil)
			_, start, _ := c.next()
			last, _, _ := c.next()
			c.close()
			dying.Kill()
			died := time.Now()
			path := "/v1/agents/" + id + "/messages/" + fmt.Sprint(start["messageId"])
			ids, rest := openSSE(t, "GET", live.URL+path+"/stream", h.writeKey, nil, map[string]string{"Last-Event-ID": strconv.Itoa(last)}).rest()
			if len(rest) == 0 {
				t.Fatal("the resumed stream ended with no event")
			}
			end := rest[len(rest)-1]
			if e, _ := end["error"].(map[string]any); end["type"] != "error" || e["code"] != "STREAM_LOST" {
				t.Fatalf("resumed stream ended with %v (ids %v)", end, ids)
			}
			if took := time.Since(died); took > 4*lostAfter {
				t.Errorf("the stream ended %v after its replica died", took)
			}
			res := h.do(request{method: "POST", path: path + "/cancel", key: h.writeKey})
			if res.Code != 200 || res.Data(t)["partial"] != true {
				t.Errorf("cancel of the dead replica's stream: %d %s", res.Code, res.Body)
			}
		})
	}
}

// TestCancelStreamFromAnotherReplica: a cancel sent to another replica
// stops the reply: the stream ends with done marked partial, what was said
// is stored partial, the provider call ends; a second cancel answers true
// again, a cancel of a finished reply false, and unknown ids 404.
func TestCancelStreamFromAnotherReplica(t *testing.T) {
	h := newHarness(t)
	long := llmtest.Reply{Fragments: strings.Fields(strings.Repeat("word ", 100)), FragmentDelay: 50 * time.Millisecond}
	h.openai.Respond(long)
	id := h.createAgent(map[string]any{"name": "talker"})
	first := httptest.NewServer(h.srv.Handler())
	defer first.Close()
	other := h.replica(t)
	c := openSSE(t, "POST", first.URL+"/v1/agents/"+id+"/messages/stream", h.writeKey, map[string]any{"text": "talk", "userId": "u"}, nil)
	_, start, _ := c.next()
	c.next()
	messageID := fmt.Sprint(start["messageId"])
	cancelPath := "/v1/agents/" + id + "/messages/" + messageID + "/cancel"
	var answered atomic.Value
	go func() {
		res := postTo(t, other.URL+cancelPath, h.writeKey)
		answered.Store(res)
	}()
	_, events := c.rest()
	done := events[len(events)-1]
	if done["type"] != "done" || done["partial"] != true || done["messageId"] != messageID {
		t.Fatalf("last event %v; the cancel answered %v", done, answered.Load())
	}
	testutil.Eventually(t, "the cancel answered", func() error {
		if answered.Load() == nil {
			return fmt.Errorf("no answer yet")
		}
		return nil
	})
	if got := answered.Load().(string); got != `{"data":{"messageId":"`+messageID+`","partial":true},"success":true}` {
		t.Errorf("cancel answered %s", got)
	}
	reply := h.storedReply(t, id, "u")
	said := "word" + tokens(events)
	if !reply.Partial || reply.ID != messageID || len(reply.Text) >= len(strings.Repeat("word ", 100))-1 || !strings.HasPrefix(said, reply.Text) {
		t.Errorf("stored %q partial %v; streamed %q", reply.Text, reply.Partial, said)
	}
	if res := h.do(request{method: "POST", path: cancelPath, key: h.writeKey}); res.Code != 200 || res.Data(t)["partial"] != true {
		t.Errorf("second cancel: %d %s", res.Code, res.Body)
	}
	h.openai.Respond(llmtest.Reply{Text: "done already"})
	finished := h.streamedReply(id)
	res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/" + finished + "/cancel", key: h.writeKey})
	if res.Code != 200 || res.Data(t)["partial"] != false || res.Data(t)["messageId"] != finished {
		t.Errorf("cancel of a finished reply: %d %s", res.Code, res.Body)
	}
	other2 := h.createAgent(map[string]any{"name": "other"})
	for _, path := range []string{
		"/v1/agents/" + id + "/messages/msg_unknown/cancel",
		"/v1/agents/" + other2 + "/messages/" + messageID + "/cancel",
	} {
		if res := h.do(request{method: "POST", path: path, key: h.writeKey}); res.Code != 404 || res.ErrorCode(t) != "MESSAGE_NOT_FOUND" {
			t.Errorf("%s: %d %s", path, res.Code, res.Body)
		}
		resume := strings.Replace(path, "/cancel", "/stream", 1)
		if res := h.do(request{method: "GET", path: resume, key: h.writeKey}); res.Code != 404 || res.ErrorCode(t) != "MESSAGE_NOT_FOUND" {
			t.Errorf("%s: %d %s", resume, res.Code, res.Body)
		}
	}
}

// postTo POSTs to a live server without a body and returns the answer.
func postTo(t *testing.T, url, key string) string {
	req, _ := http.NewRequest("POST", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(res.Body).WriteTo(&b)
	return strings.TrimSpace(b.String())
}

// TestStreamWithIdempotencyKey: a repeat of a keyed stream replays its
// events without a second provider call; while it runs a repeat is 409;
// another body is 422; a stream that failed frees its key.
func TestStreamWithIdempotencyKey(t *testing.T) {
	h := newHarness(t)
	h.openai.Respond(slowReply)
	id := h.createAgent(map[string]any{"name": "keyed"})
	path := "/v1/agents/" + id + "/messages/stream"
	body := map[string]any{"text": "count", "userId": "u"}
	keyed := map[string]string{"Idempotency-Key": "stream-1"}
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	c := openSSE(t, "POST", ts.URL+path, h.writeKey, body, keyed)
	c.next()
	if res := h.do(request{method: "POST", path: path, key: h.writeKey, body: body, header: keyed}); res.Code != 409 || res.ErrorCode(t) != "IDEMPOTENCY_KEY_IN_USE" {
		t.Errorf("repeat while running: %d %s", res.Code, res.Body)
	}
	c.close() // the reply runs on, and its end settles the key
	var replay response
	testutil.Eventually(t, "the stream's answer kept", func() error {
		replay = h.do(request{method: "POST", path: path, key: h.writeKey, body: body, header: keyed})
		return testutil.Equal("status", replay.Code, 200)
	})
	events := parseSSE(t, replay.Body)
	if tokens(events) != "one two three four five six seven eight" || events[len(events)-1]["type"] != "done" {
		t.Errorf("replayed %s", replay.Body)
	}
	if again := h.do(request{method: "POST", path: path, key: h.writeKey, body: body, header: keyed}); string(again.Body) != string(replay.Body) {
		t.Errorf("second replay differs:\n%s\n%s", again.Body, replay.Body)
	}
	if n := h.openai.Count(); n != 1 {
		t.Errorf("provider called %d times, want once", n)
	}
	other := map[string]any{"text": "another", "userId": "u"}
	if res := h.do(request{method: "POST", path: path, key: h.writeKey, body: other, header: keyed}); res.Code != 422 {
		t.Errorf("another body: %d %s", res.Code, res.Body)
	}
	h.openai.Respond(llmtest.Reply{Text: "a b c d", FailMidStream: true, FailAfter: 2})
	failing := map[string]string{"Idempotency-Key": "stream-2"}
	first := h.do(request{method: "POST", path: path, key: h.writeKey, body: body, header: failing})
	if evs := parseSSE(t, first.Body); evs[len(evs)-1]["type"] != "error" {
		t.Fatalf("want a failed stream: %s", first.Body)
	}
	// Run afresh, the retry meets the agent's cool-down after that failure
	// instead of the failed stream again.
	if res := h.do(request{method: "POST", path: path, key: h.writeKey, body: body, header: failing}); res.Code != 503 {
		t.Errorf("retry of a failed stream: %d %s", res.Code, res.Body)
	}
}

// TestStreamCutAtItsSizeBound: a provider that never stops cannot fill
// memory now that a stream no longer waits for its client: past the
// bound the reply is cut as by a cancel, and stored partial.
func TestStreamCutAtItsSizeBound(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.MaxStreamBytes = 64 << 10 })
	frags := make([]string, 100_000)
	for i := range frags {
		frags[i] = strings.Repeat("x", 1000)
	}
	h.openai.Respond(llmtest.Reply{Fragments: frags})
	id := h.createAgent(map[string]any{"name": "endless"})
	res := h.do(request{method: "POST", path: "/v1/agents/" + id + "/messages/stream", key: h.writeKey,
		body: map[string]any{"text": "go on", "userId": "u"}})
	events := parseSSE(t, res.Body)
	done := events[len(events)-1]
	if done["type"] != "done" || done["partial"] != true || len(res.Body) > 128<<10 {
		t.Fatalf("%d events, %d bytes, last %v", len(events), len(res.Body), done)
	}
	if reply := h.storedReply(t, id, "u"); !reply.Partial || len(reply.Text) > 64<<10 || reply.Text != tokens(events) {
		t.Errorf("stored %d characters, partial %v; streamed %d", len(reply.Text), reply.Partial, len(tokens(events)))
	}
}

// TestUnwatchedStreamIsCut: a reply nobody follows runs on for
// UnwatchedStream (agentd's provider timeout), then is cut as by a cancel
// and stored partial.
func TestUnwatchedStreamIsCut(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.UnwatchedStream = 300 * time.Millisecond })
	h.openai.Respond(llmtest.Reply{Fragments: strings.Fields(strings.Repeat("word ", 100)), FragmentDelay: 50 * time.Millisecond})
	id := h.createAgent(map[string]any{"name": "abandoned"})
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	c := openSSE(t, "POST", ts.URL+"/v1/agents/"+id+"/messages/stream", h.writeKey, map[string]any{"text": "talk", "userId": "u"}, nil)
	_, start, _ := c.next()
	c.next()
	c.close()
	reply := h.storedReply(t, id, "u")
	if !reply.Partial || reply.ID != start["messageId"] || len(strings.Fields(reply.Text)) >= 100 {
		t.Errorf("stored %d words, partial %v", len(strings.Fields(reply.Text)), reply.Partial)
	}
}
