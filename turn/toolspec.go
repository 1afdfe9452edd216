package turn

import (
	"encoding/json"
	"sort"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/tools"
)

// The plugins that turn on an agent's MCP servers.
var mcpPlugins = map[string]bool{"@elizaos/plugin-mcp": true, "@agentd/plugin-mcp": true}

// DefaultMaxToolSteps is the model calls that may use tools in a turn when
// the character sets no modelSettings.maxToolSteps.
const DefaultMaxToolSteps = 5

// ActionSecretName is the secret that signs the calls to action handlers.
const ActionSecretName = "ACTION_SECRET"

// toolSpec is what the tools of agent a are made from; secrets are its
// opened secrets (the action secret, the MCP headers).
func toolSpec(a domain.Agent, secrets domain.Secrets) tools.Spec {
	return tools.Spec{
		AgentID: a.ID, Version: a.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000000000Z"),
		Actions: actions(a), ActionSecret: secrets.String(ActionSecretName),
		MCPServers: mcpServers(a, secrets),
	}
}

// actions are the character's actions whose handler is a URL.
func actions(a domain.Agent) []tools.Action {
	var list []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Handler     any             `json:"handler"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if ok, err := a.Fields.Decode("actions", &list); !ok || err != nil {
		return nil
	}
	var out []tools.Action
	for _, act := range list {
		handler, _ := act.Handler.(string)
		if agent.IsHandlerURL(handler) && agent.ToolName.MatchString(act.Name) {
			out = append(out, tools.Action{Name: act.Name, Description: act.Description, Handler: handler, Parameters: act.Parameters})
		}
	}
	return out
}

// mcpEnabled reports whether the agent lists an enabled MCP plugin.
func mcpEnabled(a domain.Agent) bool {
	var plugins []struct {
		Name    string `json:"name"`
		Enabled *bool  `json:"enabled"`
	}
	if ok, err := a.Fields.Decode("plugins", &plugins); !ok || err != nil {
		return false
	}
	for _, p := range plugins {
		if mcpPlugins[p.Name] && (p.Enabled == nil || *p.Enabled) {
			return true
		}
	}
	return false
}

// mcpServers are the agent's MCP servers by name, with their headers
// opened; none unless an MCP plugin is enabled.
func mcpServers(a domain.Agent, secrets domain.Secrets) []tools.MCPServer {
	if !mcpEnabled(a) {
		return nil
	}
	var settings struct {
		MCP struct {
			Servers map[string]struct {
				Type    string            `json:"type"`
				URL     string            `json:"url"`
				Headers map[string]any    `json:"headers"`
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"servers"`
		} `json:"mcp"`
	}
	if ok, err := a.Fields.Decode("settings", &settings); !ok || err != nil {
		return nil
	}
	names := make([]string, 0, len(settings.MCP.Servers))
	for name := range settings.MCP.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]tools.MCPServer, 0, len(names))
	for _, name := range names {
		srv := settings.MCP.Servers[name]
		headers := make(map[string]string, len(srv.Headers))
		for h := range srv.Headers {
			headers[h] = secrets.String(domain.HeaderSecretName(name, h))
		}
		out = append(out, tools.MCPServer{Name: name, Type: srv.Type, URL: srv.URL, Headers: headers,
			Command: srv.Command, Args: srv.Args, Env: srv.Env})
	}
	return out
}

// maxToolSteps is the character's modelSettings.maxToolSteps, else the
// default.
func maxToolSteps(a domain.Agent) int {
	var ms struct {
		MaxToolSteps *int `json:"maxToolSteps"`
	}
	if ok, err := a.Fields.Decode("modelSettings", &ms); !ok || err != nil || ms.MaxToolSteps == nil {
		return DefaultMaxToolSteps
	}
	return *ms.MaxToolSteps
}
