package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
)

// interopProgram returns node and the absolute path of a program of
// interop/ (rel to it), whose packages `make interop` installs. Without
// them the test is skipped on a developer's machine and fails in CI
// (.ci/run installs them).
func interopProgram(t *testing.T, rel string) (node, path string) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("../../interop", rel))
	if err == nil {
		_, err = os.Stat(path)
	}
	if err == nil {
		_, err = os.Stat(filepath.Join("../../interop/node_modules/.package-lock.json"))
	}
	node, nodeErr := exec.LookPath("node")
	if err != nil || nodeErr != nil {
		testutil.Unavailable(t, "node and interop/"+rel+" (make interop)", errors.Join(err, nodeErr))
	}
	return node, path
}

// everythingServer starts the MCP reference server
// (@modelcontextprotocol/server-everything) in its streamable HTTP mode
// and returns its endpoint.
func everythingServer(t *testing.T) string {
	t.Helper()
	node, bin := interopProgram(t, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(node, bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	logs := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testutil.Eventually(t, "the MCP reference server listening", func() error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return fmt.Errorf("%v; its output: %s", err, logs)
		}
		return conn.Close()
	})
	return "http://" + addr + "/mcp"
}

// TestMCPReferenceServer: an agent whose settings name the reference
// server lists its tools, calls one when the model asks, and shows the
// result; the server's header is masked on Get Agent.
func TestMCPReferenceServer(t *testing.T) {
	endpoint := everythingServer(t)
	openai := llmtest.NewOpenAI(t)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL,
		"AGENTD_ALLOW_PRIVATE_NETWORKS": "true"}, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	c := &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 30 * time.Second}, contract: loadContract(t)}

	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Everything", "modelProvider": "openai", "model": "gpt-4o-mini",
		"plugins": []string{"@elizaos/plugin-mcp"},
		"settings": map[string]any{"mcp": map[string]any{"servers": map[string]any{
			"everything": map[string]any{"type": "streamable-http", "url": endpoint, "headers": map[string]string{"Authorization": "Bearer sekrit"}}}}}})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)
	if got := c.do("GET", "/v1/agents/"+id, key, nil); strings.Contains(string(got.body), "sekrit") {
		t.Errorf("Get Agent shows the header: %s", got.body)
	}

	r = c.do("GET", "/v1/agents/"+id+"/tools", key, nil)
	expect(t, "list tools", r, 200, "")
	names := map[string]bool{}
	for _, it := range r.data(t)["items"].([]any) {
		names[it.(map[string]any)["name"].(string)] = true
	}
	if !names["everything__echo"] || !names["everything__get-sum"] || len(r.data(t)["errors"].([]any)) != 0 {
		t.Fatalf("tools: %s", r.body)
	}

	openai.Respond(llmtest.Reply{Text: "2 and 3 make 5."})
	openai.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "everything__get-sum", Arguments: `{"a":2,"b":3}`}}})
	r = c.do("POST", "/v1/agents/"+id+"/messages", key, map[string]any{"text": "2+3?"})
	expect(t, "send", r, 200, "")
	calls := r.data(t)["metadata"].(map[string]any)["toolCalls"].([]any)
	call := calls[0].(map[string]any)
	if call["ok"] != true || !strings.Contains(call["result"].(string), "5") {
		t.Errorf("call = %v", call)
	}
	if got := openai.Requests()[1].ToolResults(); len(got) != 1 || !strings.Contains(got[0].Content, "5") {
		t.Errorf("result sent to the model = %+v", got)
	}
}
