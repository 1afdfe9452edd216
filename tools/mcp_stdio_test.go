package tools

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPStdioEnvironment: a stdio server sees PATH, HOME, LANG, TZ and
// its own env, nothing else of agentd's environment.
func TestMCPStdioEnvironment(t *testing.T) {
	if os.Getenv("AGENTD_TEST_STDIO_ENV") == "1" {
		// The stdio server: it answers initialize with its environment
		// as its name, which is all the test needs to read.
		stdioEnvServer()
		return
	}
	t.Setenv("AGENTD_TEST_SECRET", "s3cret-value")
	t.Setenv("LANG", "C.UTF-8")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newTestMCPPool(t, func(c *mcpConfig) { c.AllowStdio = true })
	srv := MCPServer{Name: "local", Type: TransportStdio, Command: exe,
		Args: []string{"-test.run=^TestMCPStdioEnvironment$"}, Env: map[string]string{"AGENTD_TEST_STDIO_ENV": "1", "OWN": "mine"}}
	e, err := p.acquire(mcpKey{"agent-1", "local"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.session(context.Background(), e, mcpTestSpec, srv)
	p.release(e)
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	env := s.cs.InitializeResult().ServerInfo.Name
	for _, want := range []string{"OWN=mine", "LANG=C.UTF-8", "PATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("the server's environment %q lacks %s", env, want)
		}
	}
	if strings.Contains(env, "AGENTD_TEST_SECRET") || strings.Contains(env, "s3cret") {
		t.Errorf("the server's environment %q has agentd's secret", env)
	}
}

// stdioEnvServer serves MCP on stdin and stdout, named by its environment.
func stdioEnvServer() {
	srv := mcp.NewServer(&mcp.Implementation{Name: strings.Join(os.Environ(), "\n"), Version: "1"}, nil)
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}
