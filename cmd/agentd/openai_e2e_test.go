package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// contractTransport checks every response an SDK receives against
// openapi.yaml, the SDK reading the same bytes afterwards.
type contractTransport struct {
	t        *testing.T
	contract *contract
	next     http.RoundTripper
}

func (ct contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := ct.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	ct.contract.check(ct.t, req, res, body)
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// openAIInstance is agentd behind the OpenAI wire-format test server, with
// an agent of its account and one of another account.
type openAIInstance struct {
	c              *client
	key, otherKey  string
	ada, theirs    string
	provider       *llmtest.Server
	base, adaReply string
}

func bootOpenAI(t *testing.T) openAIInstance {
	t.Helper()
	provider := llmtest.NewOpenAI(t)
	provider.Respond(llmtest.Reply{Fragments: []string{"Calm ", "markets ", "today."}, PromptTokens: 11, CompletionTokens: 3})
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "e2e", "--tier", "enterprise", "--rpm", "1000000", "--endpoint-multiplier", "10000")
	mustAgentd(t, db, "accounts", "create", "other")
	o := openAIInstance{provider: provider, adaReply: "Calm markets today.",
		key:      keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "e2e").stdout),
		otherKey: keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "other").stdout)}
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": provider.URL},
		"--addr", "127.0.0.1:0", "--db", db)
	o.base = in.base
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	o.c = &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 30 * time.Second}, contract: loadContract(t)}
	r := o.c.do("POST", "/v1/agents", o.key, map[string]any{"name": "Ada", "modelProvider": "openai", "model": "gpt-4o-mini"})
	expect(t, "create", r, 201, "")
	o.ada = r.data(t)["id"].(string)
	r = o.c.do("POST", "/v1/agents", o.otherKey, map[string]any{"name": "Theirs", "modelProvider": "openai", "model": "gpt-4o-mini"})
	expect(t, "create theirs", r, 201, "")
	o.theirs = r.data(t)["id"].(string)
	return o
}

// conversationLength is the message count of user's conversation with
// the agent, 0 when there is none.
func (o openAIInstance) conversationLength(t *testing.T, agentID, user string) float64 {
	t.Helper()
	r := o.c.do("GET", "/v1/agents/"+agentID+"/conversations?userId="+url.QueryEscape(user), o.key, nil)
	expect(t, "conversations", r, 200, "")
	items := r.data(t)["items"].([]any)
	if len(items) == 0 {
		return 0
	}
	return items[0].(map[string]any)["messageCount"].(float64)
}

// TestOpenAIGoClient: the official Go SDK (github.com/openai/openai-go)
// lists the account's agents as models, gets a completion, streams one
// with usage and reads agentd's errors as OpenAI's; every response it gets
// matches openapi.yaml.
func TestOpenAIGoClient(t *testing.T) {
	o := bootOpenAI(t)
	ctx := context.Background()
	sdk := func(key string) openai.Client {
		hc := &http.Client{Timeout: 30 * time.Second, Transport: contractTransport{t: t, contract: o.c.contract, next: o.c.http.Transport}}
		return openai.NewClient(option.WithBaseURL(o.base+"/v1/"), option.WithAPIKey(key), option.WithHTTPClient(hc), option.WithMaxRetries(0))
	}
	c := sdk(o.key)

	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != o.ada || page.Data[0].OwnedBy != "e2e" || page.Data[0].Created == 0 {
		t.Errorf("models %+v, want only Ada", page.Data)
	}

	done, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: o.ada, User: openai.String("go-user"),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("ignored"), openai.UserMessage("Hello from Go")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Choices) != 1 || done.Choices[0].Message.Content != o.adaReply || done.Choices[0].FinishReason != "stop" ||
		done.Model != o.ada || done.Usage.TotalTokens != 14 || done.Usage.PromptTokens != 11 {
		t.Errorf("completion %s", done.RawJSON())
	}
	if n := o.conversationLength(t, o.ada, "go-user"); n != 2 {
		t.Errorf("go-user's conversation holds %v messages, want the exchange", n)
	}

	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: o.ada,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("earlier"), openai.AssistantMessage("before"),
			openai.UserMessage("Stream from Go")}})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != o.adaReply || acc.Usage.TotalTokens != 14 {
		t.Errorf("stream accumulated to %+v (usage %+v)", acc.Choices, acc.Usage)
	}
	reqs := o.provider.Requests()
	if _, msgs := reqs[len(reqs)-1].Conversation(); len(msgs) != 3 || msgs[0].Content != "earlier" || msgs[1].Content != "before" {
		t.Errorf("the streamed turn sent %+v, want the request's earlier messages as context", msgs)
	}
	checkRuns(t, o.c, o.key, o.ada, "openai", 2)

	for _, tc := range []struct {
		name                string
		call                func() error
		status              int
		typ, code, param    string
		mustNotMentionAgent string
	}{
		{"another account's agent", func() error {
			_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: o.theirs,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			return err
		}, 404, "invalid_request_error", "model_not_found", "model", "Theirs"},
		{"bad key", func() error {
			bad := sdk("agk_00000000000000000000000000000000")
			_, err := bad.Models.List(ctx)
			return err
		}, 401, "authentication_error", "invalid_api_key", "", ""},
		{"stream of a missing agent", func() error {
			s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "agent_missing",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			for s.Next() {
			}
			return s.Err()
		}, 404, "invalid_request_error", "model_not_found", "model", ""},
	} {
		err := tc.call()
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Errorf("%s: error %v, want an *openai.Error", tc.name, err)
			continue
		}
		if apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Code != tc.code || apiErr.Param != tc.param {
			t.Errorf("%s: %d %s", tc.name, apiErr.StatusCode, apiErr.RawJSON())
		}
		if tc.mustNotMentionAgent != "" && strings.Contains(apiErr.RawJSON(), tc.mustNotMentionAgent) {
			t.Errorf("%s: the error shows the other account's agent: %s", tc.name, apiErr.RawJSON())
		}
	}
}

// TestOpenAINodeClient runs the official `openai` npm client
// (interop/clients/openai.mjs) against agentd: models, a completion, a
// stream with usage, a completion with the client's own tools (named in
// agentd-ignored) and an error, as that client reads them.
func TestOpenAINodeClient(t *testing.T) {
	node, script := interopProgram(t, "clients/openai.mjs")
	o := bootOpenAI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+o.base+"/v1", "OPENAI_API_KEY="+o.key, "AGENTD_MODEL="+o.ada)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var got struct {
		Models []struct {
			ID      string
			OwnedBy string `json:"owned_by"`
		}
		Completion struct {
			Object, Model, Content string
			FinishReason           string `json:"finish_reason"`
			Usage                  struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		Stream struct {
			Text         string
			Chunks       int
			FinishReason string `json:"finish_reason"`
			Usage        struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				TotalTokens      int `json:"total_tokens"`
			}
		}
		Ignored string
		Error   struct {
			Class, Type, Code, Param string
			Status                   int
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Models) != 1 || got.Models[0].ID != o.ada || got.Models[0].OwnedBy != "e2e" {
		t.Errorf("models %+v, want only Ada", got.Models)
	}
	if c := got.Completion; c.Object != "chat.completion" || c.Model != o.ada || c.Content != o.adaReply || c.FinishReason != "stop" || c.Usage.TotalTokens != 14 {
		t.Errorf("completion %+v", c)
	}
	if s := got.Stream; s.Text != o.adaReply || s.Chunks < 4 || s.FinishReason != "stop" || s.Usage.TotalTokens != 14 || s.Usage.PromptTokens != 11 {
		t.Errorf("stream %+v", s)
	}
	if got.Ignored != "tools, tool_choice, temperature" {
		t.Errorf("agentd-ignored %q, want the client's tools and temperature", got.Ignored)
	}
	if e := got.Error; e.Class != "NotFoundError" || e.Status != 404 || e.Code != "model_not_found" || e.Type != "invalid_request_error" || e.Param != "model" {
		t.Errorf("error %+v", e)
	}
	if n := o.conversationLength(t, o.ada, "js-user"); n != 2 {
		t.Errorf("js-user's conversation holds %v messages, want the exchange", n)
	}
	r := o.c.do("GET", "/v1/agents/"+o.ada+"/analytics", o.key, nil)
	if tot := r.data(t)["totals"].(map[string]any); tot["messages"] != 6.0 || tot["tokensUsed"] != 42.0 {
		t.Errorf("analytics totals %v, want the three turns", tot)
	}
}
