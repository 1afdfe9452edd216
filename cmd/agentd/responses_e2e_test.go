package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// responsesSDK is the official Go SDK for key, every answer it gets
// checked against openapi.yaml.
func (o openAIInstance) responsesSDK(t *testing.T, key string) openai.Client {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: contractTransport{t: t, contract: o.c.contract, next: o.c.http.Transport}}
	return openai.NewClient(option.WithBaseURL(o.base+"/v1/"), option.WithAPIKey(key), option.WithHTTPClient(hc), option.WithMaxRetries(0))
}

// TestResponsesGoClient: openai-go's Responses client creates a response,
// continues it with previous_response_id, streams one, runs one in the
// background and follows it with Get, cancels one, lists input items and
// deletes; another account's response is 404 not_found to it.
func TestResponsesGoClient(t *testing.T) {
	o := bootOpenAI(t)
	ctx := context.Background()
	c := o.responsesSDK(t, o.key)
	input := func(s string) responses.ResponseNewParamsInputUnion {
		return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
	}

	first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: o.ada, Input: input("Hello from Go"),
		Instructions: openai.String("Be brief.")})
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != "completed" || first.OutputText() != o.adaReply || first.Model != o.ada || first.Usage.TotalTokens != 14 ||
		first.Usage.InputTokens != 11 || first.Usage.OutputTokens != 3 {
		t.Errorf("response %s", first.RawJSON())
	}
	next, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: o.ada, Input: input("And then?"),
		PreviousResponseID: openai.String(first.ID)})
	if err != nil {
		t.Fatal(err)
	}
	reqs := o.provider.Requests()
	if _, msgs := reqs[len(reqs)-1].Conversation(); len(msgs) != 3 || msgs[0].Content != "Hello from Go" || msgs[1].Content != o.adaReply {
		t.Errorf("continued with %+v, want the first exchange before", msgs)
	}
	if next.PreviousResponseID != first.ID {
		t.Errorf("previous_response_id %q", next.PreviousResponseID)
	}

	stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: o.ada, Input: input("Stream from Go")})
	var text string
	var last responses.ResponseStreamEventUnion
	seq := int64(-1)
	for stream.Next() {
		e := stream.Current()
		if e.SequenceNumber != seq+1 {
			t.Errorf("sequence_number %d after %d", e.SequenceNumber, seq)
		}
		seq = e.SequenceNumber
		if e.Type == "response.output_text.delta" {
			text += e.Delta
		}
		last = e
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text != o.adaReply || last.Type != "response.completed" || last.Response.Usage.TotalTokens != 14 || last.Response.OutputText() != o.adaReply {
		t.Errorf("stream: text %q, last %s", text, last.RawJSON())
	}

	bg, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: o.ada, Input: input("Later"), Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if bg.Status != "queued" || !bg.Background {
		t.Errorf("background %s", bg.RawJSON())
	}
	got := bg
	for deadline := time.Now().Add(10 * time.Second); got.Status != "completed" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, err = c.Responses.Get(ctx, bg.ID, responses.ResponseGetParams{}); err != nil {
			t.Fatal(err)
		}
	}
	if got.Status != "completed" || got.OutputText() != o.adaReply {
		t.Errorf("background ended %s", got.RawJSON())
	}
	// openai-go sends `stream` of a Get in a JSON body; OpenAI's API and
	// agentd read it from the query.
	// created 0, queued 1, in_progress 2, ...
	replay := c.Responses.GetStreaming(ctx, bg.ID, responses.ResponseGetParams{StartingAfter: openai.Int(1)}, option.WithQuery("stream", "true"))
	var replayed []string
	for replay.Next() {
		replayed = append(replayed, replay.Current().Type)
	}
	if err := replay.Err(); err != nil || len(replayed) == 0 || replayed[0] != "response.in_progress" || replayed[len(replayed)-1] != "response.completed" {
		t.Errorf("replay after 1: %v %v", replayed, err)
	}

	items, err := c.Responses.InputItems.List(ctx, first.ID, responses.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items.Data) != 1 || items.Data[0].Role != "user" || items.Data[0].AsMessage().Content[0].Text != "Hello from Go" {
		t.Errorf("input items %s", items.RawJSON())
	}

	o.provider.Respond(llmtest.Reply{Text: "never", Delay: 3 * time.Second})
	slow, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: o.ada, Input: input("slow"), Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.Cancel(ctx, slow.ID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); slow.Status != "cancelled" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if slow, err = c.Responses.Get(ctx, slow.ID, responses.ResponseGetParams{}); err != nil {
			t.Fatal(err)
		}
	}
	if slow.Status != "cancelled" {
		t.Errorf("cancelled response %s", slow.RawJSON())
	}

	if err := c.Responses.Delete(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	theirs := o.responsesSDK(t, o.otherKey)
	for name, call := range map[string]func() error{
		"deleted": func() error { _, err := c.Responses.Get(ctx, first.ID, responses.ResponseGetParams{}); return err },
		"another account's": func() error {
			_, err := theirs.Responses.Get(ctx, next.ID, responses.ResponseGetParams{})
			return err
		},
	} {
		var apiErr *openai.Error
		if err := call(); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "not_found" || apiErr.Type != "invalid_request_error" {
			t.Errorf("%s response: %v", name, err)
		}
	}
	r := o.c.do("GET", "/v1/runs?agentId="+o.ada+"&status=completed", o.key, nil)
	if items := r.data(t)["items"].([]any); len(items) != 4 || items[0].(map[string]any)["source"] != "openai" {
		t.Errorf("completed runs %v, want the four responses'", items)
	}
}

// TestResponsesResume: a client whose connection drops mid-stream resumes
// with starting_after and gets the rest, numbered on.
func TestResponsesResume(t *testing.T) {
	o := bootOpenAI(t)
	o.provider.Respond(llmtest.Reply{Fragments: []string{"one ", "two ", "three ", "four."}, FragmentDelay: 200 * time.Millisecond,
		PromptTokens: 5, CompletionTokens: 4})
	body := strings.NewReader(`{"model":"` + o.ada + `","input":"count","stream":true}`)
	req, _ := http.NewRequest("POST", o.base+"/v1/responses", body)
	req.Header.Set("Authorization", "Bearer "+o.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := o.c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := readEvents(t, res, func(e map[string]any) bool { return e["type"] == "response.output_text.delta" })
	_ = res.Body.Close() // the connection drops after the first fragment
	n := int(first[len(first)-1]["sequence_number"].(float64))
	id := first[0]["response"].(map[string]any)["id"].(string)

	req, _ = http.NewRequest("GET", o.base+"/v1/responses/"+id+"?stream=true&starting_after="+strconv.Itoa(n), nil)
	req.Header.Set("Authorization", "Bearer "+o.key)
	res, err = o.c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	rest := readEvents(t, res, func(map[string]any) bool { return false })
	var text strings.Builder
	for i, e := range append(first, rest...) {
		if int(e["sequence_number"].(float64)) != i {
			t.Fatalf("event %d has sequence_number %v", i, e["sequence_number"])
		}
		if e["type"] == "response.output_text.delta" {
			text.WriteString(e["delta"].(string))
		}
	}
	end := rest[len(rest)-1]
	if end["type"] != "response.completed" || text.String() != "one two three four." {
		t.Errorf("resumed to %v with text %q", end["type"], text.String())
	}
	if u := end["response"].(map[string]any)["usage"].(map[string]any); u["total_tokens"] != 9.0 {
		t.Errorf("usage %v", u)
	}
}

// readEvents reads a Responses stream's events until stop says so or the
// stream ends.
func readEvents(t *testing.T, res *http.Response, stop func(map[string]any) bool) []map[string]any {
	t.Helper()
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	var out []map[string]any
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		out = append(out, e)
		if stop(e) {
			break
		}
	}
	return out
}

// runNode runs an interop program against o with env added, and decodes
// what it printed into out.
func (o openAIInstance) runNode(t *testing.T, program string, out any, env ...string) {
	t.Helper()
	node, script := interopProgram(t, program)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(append(os.Environ(), "OPENAI_BASE_URL="+o.base+"/v1", "OPENAI_API_KEY="+o.key, "AGENTD_MODEL="+o.ada), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, stdout, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
}

// TestResponsesNodeClient runs the official `openai` npm client's
// Responses API (interop/clients/responses.mjs) against agentd.
func TestResponsesNodeClient(t *testing.T) {
	o := bootOpenAI(t)
	// The fifth response is the one cancelled while its reply is slow.
	fast := llmtest.Reply{Fragments: []string{"Calm ", "markets ", "today."}, PromptTokens: 11, CompletionTokens: 3}
	o.provider.Enqueue(fast, fast, fast, fast, llmtest.Reply{Text: "never", Delay: 5 * time.Second})
	var got struct {
		Plain struct {
			ID, Status, Text string
			Usage            struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
				TotalTokens  int `json:"total_tokens"`
			}
		}
		Continued struct{ Previous, Text string }
		Stream    struct {
			Deltas, Text, Status string
			Types                []string
			Sequence             []int
			Usage                struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		Background struct {
			Initial, Final, Text string
			Replayed             [][]any
		}
		Cancelled string
		Items     []struct{ Role, Text string }
		Deleted   struct {
			Class, Type, Code string
			Status            int
		}
	}
	o.runNode(t, "clients/responses.mjs", &got, "AGENTD_SLOW_MODEL="+o.ada)
	if p := got.Plain; p.Status != "completed" || p.Text != o.adaReply || p.Usage.TotalTokens != 14 || p.Usage.InputTokens != 11 || p.Usage.OutputTokens != 3 {
		t.Errorf("plain %+v", p)
	}
	if c := got.Continued; c.Previous != got.Plain.ID || c.Text != o.adaReply {
		t.Errorf("continued %+v", c)
	}
	s := got.Stream
	if s.Deltas != o.adaReply || s.Text != o.adaReply || s.Status != "completed" || s.Usage.TotalTokens != 14 ||
		len(s.Types) == 0 || s.Types[0] != "response.created" || s.Types[len(s.Types)-1] != "response.completed" {
		t.Errorf("stream %+v", s)
	}
	for i, n := range s.Sequence {
		if n != i {
			t.Errorf("sequence numbers %v", s.Sequence)
			break
		}
	}
	if b := got.Background; b.Initial != "queued" || b.Final != "completed" || b.Text != o.adaReply ||
		len(b.Replayed) == 0 || b.Replayed[0][0] != 3.0 || b.Replayed[len(b.Replayed)-1][1] != "response.completed" {
		t.Errorf("background %+v", b)
	}
	if got.Cancelled != "cancelled" {
		t.Errorf("cancelled response ended %q", got.Cancelled)
	}
	if len(got.Items) != 1 || got.Items[0].Role != "user" || got.Items[0].Text != "Hello from JS" {
		t.Errorf("input items %+v", got.Items)
	}
	if d := got.Deleted; d.Class != "NotFoundError" || d.Status != 404 || d.Code != "not_found" || d.Type != "invalid_request_error" {
		t.Errorf("deleted %+v", d)
	}
}

// TestAISDKOpenAIProvider runs the AI SDK's default OpenAI provider, which
// speaks the Responses API (interop/clients/aisdk.mjs), against agentd:
// generateText and streamText.
func TestAISDKOpenAIProvider(t *testing.T) {
	o := bootOpenAI(t)
	var got struct {
		Generate struct {
			Text, FinishReason, ResponseID string
			Usage                          struct{ InputTokens, OutputTokens, TotalTokens int }
		}
		Second struct {
			Text string
			Sent struct {
				Input []map[string]any
			}
		}
		Stream struct {
			Text, FinishReason string
			Parts              int
			Usage              struct{ TotalTokens int }
			Error              *string
		}
	}
	o.runNode(t, "clients/aisdk.mjs", &got)
	if g := got.Generate; g.Text != o.adaReply || g.FinishReason != "stop" || g.Usage.TotalTokens != 14 || g.Usage.InputTokens != 11 ||
		!strings.HasPrefix(g.ResponseID, "resp_") {
		t.Errorf("generateText %+v", g)
	}
	if s := got.Second; s.Text != o.adaReply || len(s.Sent.Input) != 3 || s.Sent.Input[1]["type"] != "item_reference" {
		t.Errorf("second turn %+v", s)
	}
	if s := got.Stream; s.Text != o.adaReply || s.Parts < 2 || s.FinishReason != "stop" || s.Usage.TotalTokens != 14 || s.Error != nil {
		t.Errorf("streamText %+v", s)
	}
	reqs := o.provider.Requests()
	if system, _ := reqs[len(reqs)-1].Conversation(); !strings.HasSuffix(system, "Be brief.") {
		t.Errorf("the AI SDK's system message did not reach the prompt: %q", system)
	}
	if _, msgs := reqs[1].Conversation(); len(msgs) != 3 || msgs[1].Role != "assistant" || msgs[1].Content != o.adaReply {
		t.Errorf("the second turn sent %+v, want the first exchange before (sent by the SDK as %v)", msgs, got.Second.Sent.Input)
	}
	checkRuns(t, o.c, o.key, o.ada, "openai", 3)
}
