package tools

import "encoding/json"

// Spec is what the tools of one agent are made from.
type Spec struct {
	AgentID string
	// Version changes whenever the agent changes (its updatedAt): MCP
	// sessions opened under another version are closed and opened anew,
	// so new headers or URLs take effect at once.
	Version string
	// Actions are the character's actions whose handler is an http or
	// https URL.
	Actions []Action
	// ActionSecret (settings.secrets.ACTION_SECRET, whsec_…) signs the
	// calls to action handlers when set.
	ActionSecret string
	// MCPServers are the agent's MCP servers, by name order; empty unless
	// the MCP plugin is enabled.
	MCPServers []MCPServer
}

// Action is an action handler.
type Action struct {
	Name, Description string
	// Handler is the http or https URL called.
	Handler string
	// Parameters is the JSON Schema of the arguments; nil means
	// DefaultParameters.
	Parameters json.RawMessage
}

// DefaultParameters is the schema of an action that declares none.
var DefaultParameters = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string"}}}`)

// The MCP transports.
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
	TransportStdio          = "stdio"
)

// MCPServer is one MCP server of an agent (settings.mcp.servers).
type MCPServer struct {
	Name string
	// Type is TransportStreamableHTTP (also written "http"), TransportSSE
	// or TransportStdio.
	Type string
	URL  string
	// Headers go with every request to the server (secrets: never logged
	// nor put in an error).
	Headers map[string]string
	// Command, Args and Env start a stdio server (only when allowed).
	Command string
	Args    []string
	Env     map[string]string
}
