package main

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentd/agentd/connect/x/xtest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
)

// TestXEndToEnd runs `agentd serve` against an X test server and a
// provider test server: an agent given the four OAuth 1.0a secrets
// connects, its state shows in the API, and a mention is answered in its
// thread through the same turn as Send Message (provider, history,
// metrics).
func TestXEndToEnd(t *testing.T) {
	xs := xtest.New(t)
	xs.AddAccount(xtest.Account{ConsumerKey: "ck", Token: "9-at", ID: "9", Username: "e2e_x"})
	openai := llmtest.NewOpenAI(t)
	openai.Respond(llmtest.Reply{Text: "Hi from X.", PromptTokens: 7, CompletionTokens: 5})
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL,
		"TWITTER_API_URL": xs.URL, "TWITTER_POLL_INTERVAL": "100ms"}
	in, key := bootUnlimited(t, env)
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c := &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 20 * time.Second}, contract: loadContract(t)}

	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Poster", "clients": []string{"twitter"},
		"settings": map[string]any{"secrets": map[string]string{"TWITTER_API_KEY": "ck", "TWITTER_API_SECRET_KEY": "cs",
			"TWITTER_ACCESS_TOKEN": "9-at", "TWITTER_ACCESS_TOKEN_SECRET": "ts"}}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	conn := func() map[string]any {
		return c.do("GET", "/v1/agents/"+id+"/connections", key, nil).data(t)["items"].([]any)[0].(map[string]any)
	}
	testutil.Eventually(t, "connected", func() error {
		cn := conn()
		account, _ := cn["account"].(map[string]any)
		if cn["state"] != "connected" || account["username"] != "e2e_x" || account["id"] != "9" {
			return fmt.Errorf("connection %v", cn)
		}
		return nil
	})
	mentionsPolled := func() int {
		n := 0
		for _, call := range xs.Calls("9-at") {
			if call.Endpoint == "mentions" {
				n++
			}
		}
		return n
	}
	testutil.Eventually(t, "first mentions poll", func() error {
		if mentionsPolled() == 0 {
			return errors.New("no mentions poll")
		}
		return nil
	})

	mention := xs.Mention("9-at", xtest.Tweet{Text: "@e2e_x hello", AuthorID: "77"})
	testutil.Eventually(t, "the reply", func() error { return testutil.Equal("posts", len(xs.Posts("9-at")), 1) })
	if p := xs.Posts("9-at")[0]; p.Text != "Hi from X." || p.ReplyTo != mention {
		t.Errorf("posted %+v", p)
	}
	checkTurnRecorded(t, c, key, id, platformTurn{platform: "twitter", kind: "room", roomID: "twitter:" + mention,
		speaker: "twitter:77", text: "@e2e_x hello", reply: "Hi from X."})
	testutil.Eventually(t, "counters", func() error {
		if cn := conn(); cn["messagesIn"] != 1.0 || cn["messagesOut"] != 1.0 {
			return fmt.Errorf("connection %v", cn)
		}
		return nil
	})

	expect(t, "deactivate", c.do("PATCH", "/v1/agents/"+id, key, map[string]any{"status": "inactive"}), 200, "")
	testutil.Within(t, "disconnected", 5*time.Second, func() error {
		if cn := conn(); cn["state"] != "disconnected" {
			return fmt.Errorf("connection %v", cn)
		}
		return nil
	})
	transport.CloseIdleConnections()
	in.stop(t)
}
