package tools

import (
	"encoding/json"

	"github.com/agentd/agentd/agent"
)

// NamePattern is what a tool name the model sees must match.
var NamePattern = agent.ToolName

// The sources of the tools of a Service, as List Tools reports them.
const (
	SourceAction = "action"
	SourceMCP    = "mcp"
)

// Tool is one tool an agent offers the model.
type Tool struct {
	// Name is the name the model sees (NamePattern).
	Name        string
	Description string
	// Parameters is the JSON Schema (type object) of the arguments.
	Parameters json.RawMessage
	// Source is SourceAction or SourceMCP for the tools of a Service (a
	// caller with tools of its own names their source); Server names the
	// MCP server of an MCP tool, and Original the tool as that server
	// names it.
	Source   string
	Server   string
	Original string
}

// Call is one call the model asked for.
type Call struct {
	// ID is agentd's own call id ("call_…"): the handler's callId and
	// webhook-id.
	ID   string
	Name string
	// Arguments is a JSON object.
	Arguments json.RawMessage
	// Turn says whose turn the call belongs to, for action handlers.
	Turn TurnInfo
}

// TurnInfo is what a tool is told about the turn: an action handler the
// members its body names, the tools a turn runs itself all of them.
type TurnInfo struct {
	AgentID string
	// RunID is the turn's run (the parent of the runs ask_agent makes).
	RunID          string
	ConversationID string
	UserID         string
	RoomID         string
	Platform       string
	// ChatID is the chat of Platform the turn's reply goes to, "" for none.
	ChatID string
}

// Result is what a call gave back to the model.
type Result struct {
	// Text is the result as the model sees it: compacted JSON or text,
	// {"error": "<reason>"} for a failed call.
	Text string
	OK   bool
}

// Failure is the result of a call that failed for reason:
// {"error": "<reason>"}.
func Failure(reason string) Result {
	raw, _ := json.Marshal(map[string]string{"error": reason})
	return Result{Text: string(raw)}
}
