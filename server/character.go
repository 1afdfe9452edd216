package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
)

// agentBody is a create or update body after the spec validated its shape:
// each top-level member as canonical JSON, plus the requested status.
type agentBody struct {
	fields map[string]json.RawMessage
	status *domain.Status
}

// parseAgentBody takes the members of a validated body, as the validator
// decoded it (agentBodyOf), normalises the ElizaOS shorthands (bio as a
// string, plugins as names), fills the default provider and model on
// create, checks what the schema cannot say, and writes each member in
// the canonical form the store keeps, so that it is decoded only once.
// It changes members.
func (s *Server) parseAgentBody(members map[string]any, creating bool) (agentBody, error) {
	for _, name := range s.members.readOnly {
		delete(members, name)
	}
	if _, ok := members["agentd"]; ok {
		return agentBody{}, invalidRequest("agentd", "is accepted by Create Agent only")
	}
	if err := s.members.checkUnknown(members); err != nil {
		return agentBody{}, err
	}
	var body agentBody
	if st, ok := members["status"]; ok {
		delete(members, "status")
		if !creating {
			status, ok := st.(string)
			if !ok && st != nil {
				return agentBody{}, invalidRequest("status", "must be a string")
			}
			body.status = (*domain.Status)(&status)
		}
	}
	for name, v := range members {
		if v == nil {
			return agentBody{}, invalidRequest(name, "must not be null")
		}
	}
	if err := normalizeMembers(members); err != nil {
		return agentBody{}, err
	}
	if err := s.applyModelDefaults(members, creating); err != nil {
		return agentBody{}, err
	}
	fields, err := canonicalMembers(members)
	if err != nil {
		return agentBody{}, err
	}
	doc := agent.Document(fields)
	err = doc.ValidateMembers()
	if err == nil {
		err = doc.ValidateTools(s.cfg.ToolRules)
	}
	if err != nil {
		var me *agent.MemberError
		if errors.As(err, &me) {
			return agentBody{}, invalidRequest(me.Member, me.Reason)
		}
		return agentBody{}, err
	}
	body.fields = fields
	return body, nil
}

// canonicalMembers writes each member in canonical form
// (agent.AppendCanonical): the store takes canonical members as they are.
func canonicalMembers(members map[string]any) (map[string]json.RawMessage, error) {
	fields := make(map[string]json.RawMessage, len(members))
	for name, v := range members {
		b, err := agent.AppendCanonical(nil, v)
		if err != nil {
			return nil, fmt.Errorf("server: member %q: %w", name, err)
		}
		fields[name] = b
	}
	return fields, nil
}

// normalizeMembers trims the name and rewrites the ElizaOS shorthands into
// the stored forms; agent.Document.ValidateMembers checks the result.
func normalizeMembers(m map[string]any) error {
	if v, ok := m["name"]; ok {
		name, ok := v.(string)
		if !ok {
			return invalidRequest("name", "must be a string")
		}
		m["name"] = strings.TrimSpace(name)
	}
	if one, ok := m["bio"].(string); ok {
		m["bio"] = []any{one}
	}
	if v, ok := m["plugins"]; ok {
		plugins, err := normalizePlugins(v)
		if err != nil {
			return err
		}
		m["plugins"] = plugins
	}
	return nil
}

// normalizePlugins stores every entry as `{name, enabled, config}`: a bare
// name is an enabled plugin without configuration.
func normalizePlugins(v any) ([]any, error) {
	entries, ok := v.([]any)
	if !ok {
		return nil, invalidRequest("plugins", "must be a list")
	}
	out := make([]any, len(entries))
	for i, e := range entries {
		var plugin map[string]any
		switch e := e.(type) {
		case string:
			plugin = map[string]any{"name": e}
		case map[string]any:
			plugin = e
		default:
			return nil, invalidRequest(fmt.Sprintf("plugins[%d]", i), "must be a plugin name or object")
		}
		if _, ok := plugin["enabled"]; !ok {
			plugin["enabled"] = true
		}
		if _, ok := plugin["config"]; !ok {
			plugin["config"] = map[string]any{}
		}
		out[i] = plugin
	}
	return out, nil
}

// applyModelDefaults resolves an empty or missing modelProvider to the
// configured default and, on create, a missing model to the provider's
// default model.
func (s *Server) applyModelDefaults(m map[string]any, creating bool) error {
	provider := ""
	v, hasProvider := m["modelProvider"]
	if hasProvider {
		var ok bool
		if provider, ok = v.(string); !ok {
			return invalidRequest("modelProvider", "must be a string")
		}
	}
	if provider == "" && (creating || hasProvider) {
		provider = s.cfg.DefaultProvider
		m["modelProvider"] = provider
	}
	if _, ok := m["model"]; creating && !ok {
		m["model"] = s.cfg.DefaultModels[provider]
	}
	return nil
}

// mustJSON marshals values that cannot fail to marshal (strings, maps of raw
// JSON).
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("server: marshal %T: %v", v, err))
	}
	return b
}
