package a2a

import (
	"fmt"
	"strings"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

// AgentCard is the agent card of A2A 1.0.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Version              string                    `json:"version"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`
}

// AgentInterface is a URL where the agent speaks one binding and version.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentCapabilities are the optional features the agent has.
type AgentCapabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
}

// SecurityScheme is 1.0's security scheme, here always HTTP bearer auth.
type SecurityScheme struct {
	HTTPAuthSecurityScheme *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
}

// HTTPAuthSecurityScheme is HTTP authentication with Scheme.
type HTTPAuthSecurityScheme struct {
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	Description  string `json:"description,omitempty"`
}

// SecurityRequirement names the schemes a call needs, each with its scopes.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is 1.0's wrapped list of strings.
type StringList struct {
	List []string `json:"list"`
}

// AgentSkill is something the agent can do: chat, and its actions.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// legacyAgentCard is the agent card of A2A 0.3, with 1.0's
// supportedInterfaces: card resolvers fetch the card without A2A-Version,
// which means 0.3, so a 1.0 client finds the interface it speaks there too
// (a 0.3 client ignores the member it does not know).
type legacyAgentCard struct {
	Name                string                          `json:"name"`
	Description         string                          `json:"description"`
	SupportedInterfaces []AgentInterface                `json:"supportedInterfaces"`
	URL                 string                          `json:"url"`
	PreferredTransport  string                          `json:"preferredTransport"`
	ProtocolVersion     string                          `json:"protocolVersion"`
	Version             string                          `json:"version"`
	Capabilities        AgentCapabilities               `json:"capabilities"`
	SecuritySchemes     map[string]legacySecurityScheme `json:"securitySchemes"`
	Security            []map[string][]string           `json:"security"`
	DefaultInputModes   []string                        `json:"defaultInputModes"`
	DefaultOutputModes  []string                        `json:"defaultOutputModes"`
	Skills              []AgentSkill                    `json:"skills"`
}

type legacySecurityScheme struct {
	Type         string `json:"type"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	Description  string `json:"description,omitempty"`
}

// The card's constants: the binding, the versions served, the scheme.
const (
	bindingJSONRPC    = "JSONRPC"
	version10         = "1.0"
	version03         = "0.3"
	legacyCardVersion = "0.3.0"
	schemeName        = "bearerAuth"
	bearerFormat      = "agentd API key"
	schemeDescription = "An agentd API key (agk_…), sent as Authorization: Bearer <key>."
)

// textModes are the media types agents take and give.
var textModes = []string{"text/plain"}

// Card is the agent card of agent a, whose JSON-RPC endpoint is url, in
// the shape of the protocol version named by version (the A2A-Version
// header): 0.3 for none or a 0.x version, as the protocol says, else 1.0.
func Card(a domain.Agent, url, version string) any {
	ch := llm.CharacterFrom(a.Fields)
	name := ch.Name
	if name == "" {
		name = agent.Document(a.Fields).Name()
	}
	description := strings.Join(ch.Bio, " ")
	if description == "" {
		description = fmt.Sprintf("%s, an agent served by agentd.", name)
	}
	skills := cardSkills(name, ch.Actions)
	cardVersion := timestamp(a.UpdatedAt)
	interfaces := []AgentInterface{
		{URL: url, ProtocolBinding: bindingJSONRPC, ProtocolVersion: version10},
		{URL: url, ProtocolBinding: bindingJSONRPC, ProtocolVersion: version03},
	}
	if isLegacyVersion(version) {
		return legacyAgentCard{Name: name, SupportedInterfaces: interfaces, Description: description, URL: url, PreferredTransport: bindingJSONRPC,
			ProtocolVersion: legacyCardVersion, Version: cardVersion, Capabilities: AgentCapabilities{Streaming: true},
			SecuritySchemes: map[string]legacySecurityScheme{schemeName: {Type: "http", Scheme: "bearer",
				BearerFormat: bearerFormat, Description: schemeDescription}},
			Security:          []map[string][]string{{schemeName: {}}},
			DefaultInputModes: textModes, DefaultOutputModes: textModes, Skills: skills}
	}
	return AgentCard{Name: name, Description: description, Version: cardVersion, SupportedInterfaces: interfaces,
		Capabilities: AgentCapabilities{Streaming: true},
		SecuritySchemes: map[string]SecurityScheme{schemeName: {HTTPAuthSecurityScheme: &HTTPAuthSecurityScheme{
			Scheme: "Bearer", BearerFormat: bearerFormat, Description: schemeDescription}}},
		SecurityRequirements: []SecurityRequirement{{Schemes: map[string]StringList{schemeName: {List: []string{}}}}},
		DefaultInputModes:    textModes, DefaultOutputModes: textModes, Skills: skills}
}

// cardSkills are chat, then one skill per character action.
func cardSkills(name string, actions []llm.Action) []AgentSkill {
	skills := []AgentSkill{{ID: "chat", Name: "Chat", Description: fmt.Sprintf("Talk with %s.", name), Tags: []string{"chat"}}}
	for _, a := range actions {
		if a.Name == "" {
			continue
		}
		description := a.Description
		if description == "" {
			description = a.Name
		}
		tags := []string{"action"}
		if agent.IsHandlerURL(a.Handler) {
			tags = append(tags, "tool")
		}
		skills = append(skills, AgentSkill{ID: "action:" + a.Name, Name: a.Name, Description: description, Tags: tags,
			Examples: a.Examples})
	}
	return skills
}

// isLegacyVersion reports whether an A2A-Version asks for 0.3's shapes:
// none, or a 0.x version.
func isLegacyVersion(version string) bool {
	v := strings.TrimSpace(version)
	return v == "" || strings.HasPrefix(v, "0.")
}
