package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/agentd/agentd/netguard"
)

// ToolRules are the operator's settings the tool members are checked
// against.
type ToolRules struct {
	// AllowPrivate accepts URLs with literal internal addresses.
	AllowPrivate bool
	// AllowStdio accepts MCP servers of type stdio.
	AllowStdio bool
}

// The bounds of the tool members.
const (
	MaxParametersBytes = 16 << 10
	MaxMCPServers      = 10
)

// ToolName is what the name of a tool the model sees must match.
var ToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

var (
	mcpServerName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,24}$`)
	mcpTypes      = map[string]bool{"streamable-http": true, "http": true, "sse": true, "stdio": true}
)

// IsHandlerURL reports whether an action's handler is a URL agentd calls,
// as opposed to an ElizaOS code handler, which stays prompt text.
func IsHandlerURL(handler string) bool {
	return strings.HasPrefix(handler, "http://") || strings.HasPrefix(handler, "https://")
}

// ValidateTools checks the members that give an agent tools, those d
// holds: each action with a URL handler (its URL, its name as a tool name,
// its parameters schema), settings.agents.remote and settings.mcp.servers
// (whether or not the MCP plugin is listed). Its errors are *MemberError naming the member's path.
func (d Document) ValidateTools(rules ToolRules) error {
	if err := d.validateActions(rules); err != nil {
		return err
	}
	if err := d.validateAsks(); err != nil {
		return err
	}
	var settings struct {
		MCP json.RawMessage `json:"mcp"`
	}
	if ok, err := d.Decode("settings", &settings); !ok || err != nil || len(settings.MCP) == 0 {
		return err
	}
	return validateMCP(settings.MCP, rules)
}

// validateActions checks the actions' handlers, names and parameters.
func (d Document) validateActions(rules ToolRules) error {
	var actions []map[string]json.RawMessage
	if ok, err := d.Decode("actions", &actions); !ok || err != nil {
		return err
	}
	for i, a := range actions {
		at := func(member, reason string) error {
			return &MemberError{Member: fmt.Sprintf("actions[%d].%s", i, member), Reason: reason}
		}
		if raw, ok := a["parameters"]; ok {
			if reason := checkSchema(raw); reason != "" {
				return at("parameters", reason)
			}
		}
		raw, ok := a["handler"]
		if !ok {
			continue
		}
		var handler string
		if json.Unmarshal(raw, &handler) != nil {
			return at("handler", "must be a string")
		}
		if !IsHandlerURL(handler) {
			continue
		}
		if reason := netguard.CheckURL(handler, rules.AllowPrivate); reason != "" {
			return at("handler", reason)
		}
		var name string
		if json.Unmarshal(a["name"], &name) != nil || !ToolName.MatchString(name) {
			return at("name", "must match ^[a-zA-Z0-9_-]{1,64}$ when the handler is a URL (it is the tool's name)")
		}
	}
	return nil
}

// checkSchema says why raw cannot be a tool's parameters, "" when it can.
func checkSchema(raw json.RawMessage) string {
	if len(raw) > MaxParametersBytes {
		return fmt.Sprintf("must be at most %d bytes", MaxParametersBytes)
	}
	var schema struct {
		Type any `json:"type"`
	}
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) || json.Unmarshal(raw, &schema) != nil || schema.Type != "object" {
		return `must be a JSON Schema with "type": "object"`
	}
	return ""
}

// validateMCP checks settings.mcp.
func validateMCP(raw json.RawMessage, rules ToolRules) error {
	var mcp struct {
		Servers json.RawMessage `json:"servers"`
	}
	if json.Unmarshal(raw, &mcp) != nil {
		return &MemberError{Member: "settings.mcp", Reason: "must be an object"}
	}
	if len(mcp.Servers) == 0 {
		return nil
	}
	var servers map[string]json.RawMessage
	if json.Unmarshal(mcp.Servers, &servers) != nil || servers == nil {
		return &MemberError{Member: "settings.mcp.servers", Reason: "must be an object of servers by name"}
	}
	if len(servers) > MaxMCPServers {
		return &MemberError{Member: "settings.mcp.servers", Reason: fmt.Sprintf("must hold at most %d servers", MaxMCPServers)}
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := validateMCPServer(name, servers[name], rules); err != nil {
			return err
		}
	}
	return nil
}

// validateMCPServer checks one server of settings.mcp.servers.
func validateMCPServer(name string, raw json.RawMessage, rules ToolRules) error {
	path := "settings.mcp.servers." + name
	at := func(member, reason string) error { return &MemberError{Member: path + member, Reason: reason} }
	if !mcpServerName.MatchString(name) {
		return at("", "is not a valid server name: ^[a-zA-Z0-9-]{1,24}$")
	}
	var srv struct {
		Type    *string         `json:"type"`
		URL     json.RawMessage `json:"url"`
		Headers json.RawMessage `json:"headers"`
	}
	if json.Unmarshal(raw, &srv) != nil || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return at("", "must be an object { type, url, headers? }")
	}
	switch {
	case srv.Type == nil || !mcpTypes[*srv.Type]:
		return at(".type", "must be streamable-http, http, sse or stdio")
	case *srv.Type == "stdio" && !rules.AllowStdio:
		return at(".type", "stdio servers are off on this host (the operator sets AGENTD_MCP_STDIO=true to run programs on it)")
	case *srv.Type == "stdio":
		return nil
	}
	var url string
	if json.Unmarshal(srv.URL, &url) != nil {
		return at(".url", "must be an http or https URL")
	}
	if reason := netguard.CheckURL(url, rules.AllowPrivate); reason != "" {
		return at(".url", reason)
	}
	if len(srv.Headers) > 0 {
		var headers map[string]string
		if json.Unmarshal(srv.Headers, &headers) != nil {
			return at(".headers", "must be an object of strings")
		}
	}
	return nil
}
