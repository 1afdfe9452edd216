package tools

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/signature"
)

// actionSecret is a Standard Webhooks secret.
const actionSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is an action handler answering with handle; it keeps the last
// request and its body.
type receiver struct {
	*httptest.Server
	last *http.Request
	body []byte
}

func newReceiver(t *testing.T, handle http.HandlerFunc) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.last = req
		r.body, _ = io.ReadAll(req.Body)
		handle(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// callOne offers the action at url to a Service with cfg and runs one call
// of it through the agent's Set.
func callOne(t *testing.T, cfg Config, url, secret string) Result {
	t.Helper()
	s := New(cfg)
	t.Cleanup(s.Close)
	spec := Spec{AgentID: "agent_1", ActionSecret: secret,
		Actions: []Action{{Name: "get_price", Description: "price", Handler: url}}}
	set := s.Set(context.Background(), spec)
	return set.Call(context.Background(), Call{ID: "call_1", Name: "get_price", Arguments: json.RawMessage(`{"symbol":"SOL"}`),
		Turn: TurnInfo{AgentID: "agent_1", ConversationID: "conv_1", UserID: "u1", Platform: "api"}})
}

// allowLocal is the config of tests whose handlers run on loopback.
var allowLocal = Config{AllowPrivate: true, Timeout: 2 * time.Second}

// TestActionCallSigned: the handler gets the documented body, signed with
// the agent's ACTION_SECRET (webhook-id = the call id), and its JSON
// answer is the result, compacted with its key order kept.
func TestActionCallSigned(t *testing.T) {
	r := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{\n  \"symbol\": \"SOL\",\n  \"price\": 142.5\n}")
	})
	res := callOne(t, allowLocal, r.URL, actionSecret)
	if !res.OK || res.Text != `{"symbol":"SOL","price":142.5}` {
		t.Fatalf("result = %+v", res)
	}
	if err := signature.Verify(actionSecret, r.last.Header, r.body, time.Now(), 5*time.Minute); err != nil {
		t.Errorf("signature: %v", err)
	}
	if r.last.Header.Get("webhook-id") != "call_1" || r.last.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", r.last.Header)
	}
	var body struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      map[string]any
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"callId": "call_1", "agentId": "agent_1", "action": "get_price",
		"arguments": map[string]any{"symbol": "SOL"}, "conversationId": "conv_1", "userId": "u1", "roomId": nil, "platform": "api"}
	if body.Type != "action.call" || body.Timestamp == "" || !equalJSON(body.Data, want) {
		t.Errorf("body = %s", r.body)
	}
}

// equalJSON compares two decoded JSON values.
func equalJSON(a, b any) bool {
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return string(ra) == string(rb)
}

// TestActionCallUnsigned: without ACTION_SECRET no signature is sent; a
// text answer is the result as it is.
func TestActionCallUnsigned(t *testing.T) {
	r := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "142 dollars") })
	res := callOne(t, allowLocal, r.URL, "")
	if !res.OK || res.Text != "142 dollars" || r.last.Header.Get("webhook-signature") != "" {
		t.Errorf("result = %+v, signature %q", res, r.last.Header.Get("webhook-signature"))
	}
}

// TestActionCallFailures: a 500, a redirect (not followed), no answer in
// time and an internal address are failed calls with a short reason.
func TestActionCallFailures(t *testing.T) {
	fail := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	followed := false
	target := newReceiver(t, func(http.ResponseWriter, *http.Request) { followed = true })
	redirect := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target.URL, http.StatusFound) })
	slow := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	quick := allowLocal
	quick.Timeout = 200 * time.Millisecond
	cases := []struct {
		name   string
		cfg    Config
		url    string
		reason string
	}{
		{"500", allowLocal, fail.URL, "the handler answered 500"},
		{"redirect", allowLocal, redirect.URL, "the handler answered a redirect (302), which is not followed"},
		{"timeout", quick, slow.URL, "the handler did not answer in time"},
		{"ssrf", Config{Timeout: time.Second}, fail.URL, "the handler's address is not allowed (loopback, private or other internal address)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := callOne(t, c.cfg, c.url, "")
			want, _ := json.Marshal(map[string]string{"error": c.reason})
			if res.OK || res.Text != string(want) {
				t.Errorf("result = %+v, want failed with %s", res, want)
			}
		})
	}
	if followed {
		t.Error("the redirect was followed")
	}
}

// TestActionCallResultBounded: an oversized answer is read up to
// MaxResultBytes, and the call still succeeds.
func TestActionCallResultBounded(t *testing.T) {
	r := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 1<<20))
	})
	res := callOne(t, allowLocal, r.URL, "")
	if !res.OK || len(res.Text) != MaxResultBytes {
		t.Errorf("result of %d bytes, ok %v; want %d", len(res.Text), res.OK, MaxResultBytes)
	}
}

// TestSetToolsAndUnknown: the set lists the action with the default
// schema, and an unknown name is a failed call.
func TestSetToolsAndUnknown(t *testing.T) {
	s := New(Config{})
	t.Cleanup(s.Close)
	set := s.Set(context.Background(), Spec{Actions: []Action{{Name: "ping", Handler: "https://example.com/ping"}}})
	if got := set.Tools(); len(got) != 1 || got[0].Source != SourceAction || string(got[0].Parameters) != string(DefaultParameters) {
		t.Errorf("tools = %+v", got)
	}
	if res := set.Call(context.Background(), Call{Name: "nope"}); res.OK || res.Text != `{"error":"unknown tool"}` {
		t.Errorf("unknown tool: %+v", res)
	}
}
