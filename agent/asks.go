package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agentd/agentd/netguard"
)

// AskSettings is settings.agents: the local agents (by id) and the remote
// A2A agents (by name) an agent may ask with ask_agent.
type AskSettings struct {
	Allow  []string                  `json:"allow"`
	Remote map[string]RemoteSettings `json:"remote"`
}

// RemoteSettings is one remote agent: its card's URL and the headers sent
// with every request to it (secrets, masked and sealed as MCP headers are).
type RemoteSettings struct {
	URL     string         `json:"url"`
	Headers map[string]any `json:"headers"`
}

// Asks is d's settings.agents; zero when it has none (or it is not an
// object, which validation refuses).
func (d Document) Asks() AskSettings {
	var settings struct {
		Agents AskSettings `json:"agents"`
	}
	if ok, err := d.Decode("settings", &settings); !ok || err != nil {
		return AskSettings{}
	}
	return settings.Agents
}

// validateAsks checks settings.agents beyond its schema (which bounds
// allow at 20 ids and remote at 10 agents): each remote's
// name and URL (a private address is refused when the call is made, by
// the address guard, not here) and its headers. Whether the allowed ids
// are agents of the account is the caller's to check, with the store.
func (d Document) validateAsks() error {
	var settings struct {
		Agents struct {
			Remote map[string]json.RawMessage `json:"remote"`
		} `json:"agents"`
	}
	if ok, err := d.Decode("settings", &settings); !ok || err != nil {
		return nil // the schema checked the shape
	}
	names := make([]string, 0, len(settings.Agents.Remote))
	for name := range settings.Agents.Remote {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := validateRemote(name, settings.Agents.Remote[name]); err != nil {
			return err
		}
	}
	return nil
}

// validateRemote checks one remote of settings.agents.remote.
func validateRemote(name string, raw json.RawMessage) error {
	path := "settings.agents.remote." + name
	at := func(member, reason string) error { return &MemberError{Member: path + member, Reason: reason} }
	if !mcpServerName.MatchString(name) {
		return at("", "is not a valid remote name: ^[a-zA-Z0-9-]{1,24}$")
	}
	var remote struct {
		URL     string          `json:"url"`
		Headers json.RawMessage `json:"headers"`
	}
	if json.Unmarshal(raw, &remote) != nil || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return at("", "must be an object { url, headers? }")
	}
	if reason := netguard.CheckURL(remote.URL, true); reason != "" {
		return at(".url", reason)
	}
	if len(remote.Headers) > 0 {
		var headers map[string]string
		if json.Unmarshal(remote.Headers, &headers) != nil {
			return at(".headers", "must be an object of strings")
		}
	}
	return nil
}

// AllowedMember names entry i of settings.agents.allow, as a 400 does.
func AllowedMember(i int) string { return fmt.Sprintf("settings.agents.allow[%d]", i) }
