package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
)

// a2aConversation is what the script saw of one protocol version.
type a2aConversation struct {
	Send, FollowUp, GetTask a2aTask
	Stream                  []struct {
		Kind, State, Text string
		Append, LastChunk bool
	}
	MissingTask string
	// Methods are the JSON-RPC methods the SDK called, with the
	// A2A-Version it sent.
	Methods []string
}

type a2aTask struct {
	ID, ContextID, State, Reply string
	History                     []string
}

// TestA2AWithTheOfficialClient: the official A2A client SDK discovers an
// agent from its card, sends, streams and follows up in one context (the
// follow-up's provider request holds the earlier turns), reads a task back
// and is told a missing one is not found; over protocol 1.0 and 0.3.
func TestA2AWithTheOfficialClient(t *testing.T) {
	node, script := interopProgram(t, "clients/a2a.mjs")
	openai := llmtest.NewOpenAI(t)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL},
		"--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 30 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Ada", "bio": []string{"Answers questions about trains."},
		"modelProvider": "openai", "model": "gpt-4o-mini"})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	openai.Respond(llmtest.Reply{Fragments: []string{"All ", "aboard", "!"}, PromptTokens: 8, CompletionTokens: 3})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, in.base+"/v1/agents/"+id+"/a2a/")
	cmd.Env = append(os.Environ(), "A2A_KEY="+key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the A2A client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		Card struct {
			Name, Description string
			Streaming         bool
			Interfaces        []string
			Skills            []string
		}
		V1, V03 a2aConversation
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	endpoint := in.base + "/v1/agents/" + id + "/a2a"
	if got.Card.Name != "Ada" || got.Card.Description != "Answers questions about trains." || !got.Card.Streaming ||
		fmt.Sprint(got.Card.Interfaces) != fmt.Sprintf("[JSONRPC 1.0 %s JSONRPC 0.3 %s]", endpoint, endpoint) {
		t.Errorf("card %+v", got.Card)
	}
	checkA2AConversation(t, "1.0", "v1", got.V1, "TaskNotFoundError")
	checkA2AConversation(t, "0.3", "v03", got.V03, "TaskNotFoundError")
	if want := "[SendMessage (A2A-Version 1.0) SendStreamingMessage (A2A-Version 1.0) GetTask (A2A-Version 1.0)]"; fmt.Sprint(got.V1.Methods) != want {
		t.Errorf("1.0 methods %v, want %s", got.V1.Methods, want)
	}
	if want := "[message/send (A2A-Version 0.3) message/stream (A2A-Version 0.3) tasks/get (A2A-Version 0.3)]"; fmt.Sprint(got.V03.Methods) != want {
		t.Errorf("0.3 methods %v, want %s", got.V03.Methods, want)
	}

	// The follow-up of each version saw the earlier turns of its context.
	for _, prefix := range []string{"v1", "v03"} {
		want := fmt.Sprintf("[user:%[1]s: hello assistant:All aboard! user:%[1]s: stream please assistant:All aboard! user:%[1]s: and a follow-up]", prefix)
		found := false
		for _, req := range openai.Requests() {
			_, msgs := req.Conversation()
			var turns []string
			for _, m := range msgs {
				turns = append(turns, m.Role+":"+m.Content)
			}
			found = found || fmt.Sprint(turns) == want
		}
		if !found {
			t.Errorf("no provider request of %s had the whole context %s", prefix, want)
		}
	}
}

// checkA2AConversation judges what the client saw of one version.
func checkA2AConversation(t *testing.T, version, prefix string, c a2aConversation, notFound string) {
	t.Helper()
	if c.Send.State != "TASK_STATE_COMPLETED" || c.Send.Reply != "All aboard!" || !strings.HasPrefix(c.Send.ID, "task_") ||
		fmt.Sprint(c.Send.History) != fmt.Sprintf("[ROLE_USER: %s: hello ROLE_AGENT: All aboard!]", prefix) {
		t.Errorf("%s send: %+v", version, c.Send)
	}
	var text strings.Builder
	for _, ev := range c.Stream {
		text.WriteString(ev.Text)
	}
	if n := len(c.Stream); n < 3 || c.Stream[0].Kind != "task" || c.Stream[0].State != "TASK_STATE_WORKING" ||
		c.Stream[n-1].Kind != "statusUpdate" || c.Stream[n-1].State != "TASK_STATE_COMPLETED" ||
		!c.Stream[n-2].LastChunk || text.String() != "All aboard!" {
		t.Errorf("%s stream: %+v", version, c.Stream)
	}
	if c.FollowUp.State != "TASK_STATE_COMPLETED" || c.FollowUp.ContextID != c.Send.ContextID {
		t.Errorf("%s follow-up: %+v", version, c.FollowUp)
	}
	if c.GetTask.ID != c.Send.ID || c.GetTask.State != "TASK_STATE_COMPLETED" || c.GetTask.Reply != "All aboard!" {
		t.Errorf("%s GetTask: %+v", version, c.GetTask)
	}
	if c.MissingTask != notFound {
		t.Errorf("%s GetTask of a missing task: %s", version, c.MissingTask)
	}
}
