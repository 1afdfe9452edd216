package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
)

// sdkAgent starts interop/servers/a2a.mjs, an echo agent served by the
// official A2A SDK (@a2a-js/sdk), wanting Authorization: Bearer token; a
// legacy one offers only protocol 0.3. It returns its card's URL.
func sdkAgent(t *testing.T, token string, legacy bool) string {
	t.Helper()
	node, script := interopProgram(t, "servers/a2a.mjs")
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "PORT=0", "A2A_TOKEN="+token)
	if legacy {
		cmd.Env = append(cmd.Env, "A2A_LEGACY=1")
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var ready struct{ URL string }
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil {
		t.Fatalf("the A2A SDK's server did not start: %q %v; %s", line, err, stderr.String())
	}
	return ready.URL
}

// TestAskAnSDKAgent: an agent asks agents served by the official A2A SDK,
// one over protocol 1.0 and one whose card offers only 0.3, with its
// header; each echo reaches the asking model, and Get Run lists both
// remote asks.
func TestAskAnSDKAgent(t *testing.T) {
	v1, v03 := sdkAgent(t, "tok-1", false), sdkAgent(t, "tok-03", true)
	openai := llmtest.NewOpenAI(t)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL,
		"AGENTD_ALLOW_PRIVATE_NETWORKS": "true"}, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	c := &client{t: t, base: in.base, http: &http.Client{Timeout: 30 * time.Second}, contract: loadContract(t)}
	remote := func(url, token string) map[string]any {
		return map[string]any{"url": url, "headers": map[string]any{"Authorization": "Bearer " + token}}
	}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Asker", "modelProvider": "openai", "model": "gpt-4o-mini",
		"settings": map[string]any{"agents": map[string]any{"remote": map[string]any{
			"echo": remote(v1, "tok-1"), "echo-old": remote(v03, "tok-03")}}}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)

	ask := func(agent, message string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "ask_agent", Arguments: `{"agent":"` + agent + `","message":"` + message + `"}`}}}
	}
	openai.Enqueue(ask("echo", "ping one"), ask("echo-old", "ping two"), llmtest.Reply{Text: "Both answered."})
	r = c.do("POST", "/v1/agents/"+id+"/messages", key, map[string]any{"text": "ask them", "userId": "u1"})
	expect(t, "send", r, 200, "")
	reqs := openai.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[1].Raw), "echo: ping one") || !strings.Contains(string(reqs[2].Raw), "echo: ping two") {
		t.Fatalf("the echoes did not reach the model: %d requests, last %s", len(reqs), reqs[len(reqs)-1].Raw)
	}
	run := c.do("GET", "/v1/agents/"+id+"/runs/"+r.data(t)["runId"].(string), key, nil)
	expect(t, "get run", run, 200, "")
	children, _ := run.data(t)["children"].([]any)
	var got []string
	for _, ch := range children {
		m := ch.(map[string]any)
		got = append(got, m["agent"].(string)+" "+m["status"].(string))
	}
	if strings.Join(got, ", ") != "echo completed, echo-old completed" {
		t.Errorf("children = %v", children)
	}
}
