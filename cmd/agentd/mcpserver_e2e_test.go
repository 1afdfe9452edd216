package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm/llmtest"
)

// mcpClientRun is what interop/clients/mcp.mjs prints.
type mcpClientRun struct {
	Server struct{ Name string }
	Tools  []string
	Agents struct {
		Agents []struct{ ID, Name, ModelProvider, Model string }
	}
	Reply struct {
		Text       string
		Structured struct {
			MessageID string
			Response  string
			Metadata  struct{ Model string }
		}
		IsError bool
	}
	Missing struct {
		Text    string
		IsError bool
	}
}

// TestMCPServerWithTheOfficialClient: the official MCP TypeScript SDK
// client initializes with agentd's /v1/mcp, lists its tools, lists the
// account's agents (never another account's) and sends a message that
// takes the agent's turn, stored in its history like Send Message's.
func TestMCPServerWithTheOfficialClient(t *testing.T) {
	node, script := interopProgram(t, "clients/mcp.mjs")
	openai := llmtest.NewOpenAI(t)
	db := tempDB(t)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL}, "--addr", "127.0.0.1:0", "--db", db)
	key := keyFrom(t, in.stdout.String())
	c := newClient(t, in.base)
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Ada", "modelProvider": "openai", "model": "gpt-4o-mini"})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	mustAgentd(t, db, "accounts", "create", "other")
	otherKey := keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "other").stdout)
	expect(t, "other's agent", c.do("POST", "/v1/agents", otherKey, map[string]any{"name": "Hidden"}), 201, "")

	openai.Respond(llmtest.Reply{Text: "Hello, IDE!"})
	out, err := exec.Command(node, script, in.base+"/v1/mcp", key, id).CombinedOutput()
	if err != nil {
		t.Fatalf("the MCP client failed: %v\n%s", err, out)
	}
	var run mcpClientRun
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("client output: %v\n%s", err, out)
	}
	if run.Server.Name != "agentd" || strings.Join(run.Tools, ",") != "list_agents,send_message" {
		t.Errorf("server %+v with tools %v", run.Server, run.Tools)
	}
	if a := run.Agents; len(a.Agents) != 1 || a.Agents[0].ID != id || a.Agents[0].Name != "Ada" || a.Agents[0].ModelProvider != "openai" {
		t.Errorf("list_agents = %+v; want Ada alone", a)
	}
	rep := run.Reply
	if rep.IsError || rep.Text != "Hello, IDE!" || rep.Structured.Response != "Hello, IDE!" || rep.Structured.Metadata.Model != "gpt-4o-mini" {
		t.Errorf("send_message = %+v", rep)
	}
	if !run.Missing.IsError || !strings.Contains(run.Missing.Text, "AGENT_NOT_FOUND") {
		t.Errorf("send_message to a missing agent = %+v", run.Missing)
	}
	got := openai.Requests()
	if len(got) != 1 {
		t.Fatalf("%d provider requests; want the message's one", len(got))
	}
	if _, msgs := got[0].Conversation(); len(msgs) == 0 || msgs[len(msgs)-1].Content != "Hello from MCP" {
		t.Errorf("the provider got %+v; want the message last", msgs)
	}
	r = c.do("GET", "/v1/agents/"+id+"/conversations", key, nil)
	expect(t, "conversations", r, 200, "")
	if !strings.Contains(string(r.body), `"userId":"ide-user"`) {
		t.Errorf("the exchange is not in the agent's history: %s", r.body)
	}
}
