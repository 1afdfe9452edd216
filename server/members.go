package server

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
)

// maxMemberDepth bounds how deeply a member of any request body may nest
// objects and arrays (real ElizaOS character files nest at most 5 deep).
const maxMemberDepth = 32

// maxUnknownMembers bounds the top-level members of an agent that the
// contract does not describe (real ElizaOS character files have at most 15
// members in all).
const maxUnknownMembers = 64

// agentMembers is what the contract says of an agent's top-level members,
// read from openapi.yaml so that the spec stays their one source.
type agentMembers struct {
	// known are the members the contract describes, in any body or answer.
	known map[string]bool
	// readOnly are the members the service owns (readOnly in the Agent
	// schema); a body that carries them, a Get Agent answer sent back say,
	// has them ignored.
	readOnly []string
	// empty are the members Get Agent always returns, with the value they
	// take when never set: the required, writable lists, objects and
	// booleans of the Agent schema.
	empty map[string]json.RawMessage
}

// agentMembersOf reads the members from the Agent, AgentCreateRequest and
// AgentUpdateRequest schemas of spec.
func agentMembersOf(spec *openapi3.T) (agentMembers, error) {
	m := agentMembers{known: map[string]bool{}, empty: map[string]json.RawMessage{}}
	for _, name := range []string{"AgentCreateRequest", "AgentUpdateRequest", "Agent"} {
		ref, ok := spec.Components.Schemas[name]
		if !ok || ref.Value == nil {
			return agentMembers{}, fmt.Errorf("server: spec has no %s schema", name)
		}
		for member := range ref.Value.Properties {
			m.known[member] = true
		}
	}
	agent := spec.Components.Schemas["Agent"].Value
	required := map[string]bool{}
	for _, r := range agent.Required {
		required[r] = true
	}
	for name, prop := range agent.Properties {
		if prop.Value.ReadOnly {
			m.readOnly = append(m.readOnly, name)
			continue
		}
		if !required[name] || prop.Value.Type == nil {
			continue
		}
		switch {
		case prop.Value.Type.Is("array"):
			m.empty[name] = json.RawMessage("[]")
		case prop.Value.Type.Is("object"):
			m.empty[name] = json.RawMessage("{}")
		case prop.Value.Type.Is("boolean"):
			m.empty[name] = json.RawMessage("false")
		}
	}
	sort.Strings(m.readOnly)
	return m, nil
}

// checkUnknown refuses a body with more than maxUnknownMembers members the
// contract does not describe, naming the first one past the bound.
func (m agentMembers) checkUnknown(members map[string]any) error {
	var unknown []string
	for name := range members {
		if !m.known[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) <= maxUnknownMembers {
		return nil
	}
	sort.Strings(unknown)
	return invalidRequest(unknown[maxUnknownMembers],
		fmt.Sprintf("is one member too many: an agent may have at most %d members the API does not describe", maxUnknownMembers))
}
