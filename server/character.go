package server

import (
	"bytes"
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

// parseAgentBody splits a validated body into members, normalises the
// ElizaOS shorthands (bio as a string, plugins as names), fills the default
// provider and model on create, and checks what the schema cannot say.
func (s *Server) parseAgentBody(raw json.RawMessage, creating bool) (agentBody, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return agentBody{}, invalidRequest("body", "must be a JSON object")
	}
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
			var status domain.Status
			if err := json.Unmarshal(st, &status); err != nil {
				return agentBody{}, invalidRequest("status", "must be a string")
			}
			body.status = &status
		}
	}
	for name, v := range members {
		if isJSONNull(v) {
			return agentBody{}, invalidRequest(name, "must not be null")
		}
	}
	if err := normalizeMembers(members); err != nil {
		return agentBody{}, err
	}
	if err := s.applyModelDefaults(members, creating); err != nil {
		return agentBody{}, err
	}
	doc := agent.Document(members)
	err := doc.ValidateMembers()
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
	// The store stores (and compares) members canonically: canonicalizing
	// them here too was 9% of the CPU a Create took.
	body.fields = members
	return body, nil
}

// normalizeMembers trims the name and rewrites the ElizaOS shorthands into
// the stored forms; agent.Document.ValidateMembers checks the result.
func normalizeMembers(m map[string]json.RawMessage) error {
	if raw, ok := m["name"]; ok {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return invalidRequest("name", "must be a string")
		}
		m["name"] = mustJSON(strings.TrimSpace(name))
	}
	if raw, ok := m["bio"]; ok && bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return invalidRequest("bio", "must be a string or a list of strings")
		}
		m["bio"] = mustJSON([]string{one})
	}
	if raw, ok := m["plugins"]; ok {
		plugins, err := normalizePlugins(raw)
		if err != nil {
			return err
		}
		m["plugins"] = plugins
	}
	return nil
}

// normalizePlugins stores every entry as `{name, enabled, config}`: a bare
// name is an enabled plugin without configuration.
func normalizePlugins(raw json.RawMessage) (json.RawMessage, error) {
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, invalidRequest("plugins", "must be a list")
	}
	out := make([]map[string]json.RawMessage, len(entries))
	for i, e := range entries {
		var name string
		if json.Unmarshal(e, &name) == nil {
			out[i] = map[string]json.RawMessage{"name": mustJSON(name)}
		} else if err := json.Unmarshal(e, &out[i]); err != nil {
			return nil, invalidRequest(fmt.Sprintf("plugins[%d]", i), "must be a plugin name or object")
		}
		if _, ok := out[i]["enabled"]; !ok {
			out[i]["enabled"] = json.RawMessage("true")
		}
		if _, ok := out[i]["config"]; !ok {
			out[i]["config"] = json.RawMessage("{}")
		}
	}
	return mustJSON(out), nil
}

// applyModelDefaults resolves an empty or missing modelProvider to the
// configured default and, on create, a missing model to the provider's
// default model.
func (s *Server) applyModelDefaults(m map[string]json.RawMessage, creating bool) error {
	provider := ""
	if raw, ok := m["modelProvider"]; ok {
		if err := json.Unmarshal(raw, &provider); err != nil {
			return invalidRequest("modelProvider", "must be a string")
		}
	}
	if provider == "" && (creating || m["modelProvider"] != nil) {
		provider = s.cfg.DefaultProvider
		m["modelProvider"] = mustJSON(provider)
	}
	if _, ok := m["model"]; creating && !ok {
		m["model"] = mustJSON(s.cfg.DefaultModels[provider])
	}
	return nil
}

func isJSONNull(v json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(v), []byte("null"))
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
