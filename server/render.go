package server

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/store"
)

// timestamp renders t as the contract's RFC 3339 UTC with milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// secretMask replaces every value under settings.secrets.
const secretMask = store.SecretMask

// agentDocument renders the whole agent of Get Agent: the stored members,
// the defaults of the members never set, the service's own members, and
// settings.secrets masked.
func (s *Server) agentDocument(a store.Agent) (json.RawMessage, error) {
	doc := make(map[string]json.RawMessage, len(a.Fields)+len(s.members.empty)+6)
	for k, v := range s.members.empty {
		doc[k] = v
	}
	for k, v := range a.Fields {
		doc[k] = v
	}
	settings, err := maskSecrets(doc["settings"])
	if err != nil {
		return nil, err
	}
	doc["settings"] = settings
	doc["id"] = mustJSON(a.ID)
	doc["status"] = mustJSON(a.Status)
	doc["createdAt"] = mustJSON(timestamp(a.CreatedAt))
	doc["updatedAt"] = mustJSON(timestamp(a.UpdatedAt))
	doc["metrics"] = mustJSON(gen.Metrics{
		TotalMessages:      int(a.Metrics.TotalMessages),
		TotalConversations: int(a.Metrics.TotalConversations),
		Uptime:             fmt.Sprintf("%.2f%%", a.Metrics.Uptime),
	})
	return json.Marshal(doc)
}

// maskSecrets keeps the key names of settings.secrets and hides the values.
func maskSecrets(settings json.RawMessage) (json.RawMessage, error) {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(settings, &s); err != nil {
		return nil, fmt.Errorf("server: decode stored settings: %w", err)
	}
	raw, ok := s["secrets"]
	if !ok {
		return settings, nil
	}
	var secrets map[string]json.RawMessage
	if err := json.Unmarshal(raw, &secrets); err != nil {
		return nil, fmt.Errorf("server: decode stored secrets: %w", err)
	}
	masked := make(map[string]string, len(secrets))
	for k := range secrets {
		masked[k] = secretMask
	}
	s["secrets"] = mustJSON(masked)
	return json.Marshal(s)
}

// agentSummary is one entry of List Agents.
func agentSummary(a store.Agent) gen.AgentSummary {
	clients := []gen.Platform{}
	if raw, ok := a.Fields["clients"]; ok {
		_ = json.Unmarshal(raw, &clients) // stored after validation: a list of platform ids
	}
	return gen.AgentSummary{
		Id: a.ID, Name: a.Name, Status: gen.AgentStatus(a.Status),
		CreatedAt: timestamp(a.CreatedAt), UpdatedAt: timestamp(a.UpdatedAt),
		ModelProvider: gen.ModelProvider(a.ModelProvider), Model: a.Model, Clients: clients,
	}
}
