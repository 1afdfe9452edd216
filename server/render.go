package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/store"
)

// timestamp renders t as the contract's RFC 3339 UTC with milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// secretMask replaces the value of every secret (see store.SecretMask).
const secretMask = store.SecretMask

// agentDocument renders the whole agent of Get Agent: the stored members,
// the defaults of the members never set, the service's own members, and
// every secret of settings masked: the values of settings.secrets and the
// header values of each MCP server.
func (s *Server) agentDocument(a store.Agent) (json.RawMessage, error) {
	d, err := s.storedMembers(a, store.MaskSecrets)
	if err != nil {
		return nil, err
	}
	member := d.member
	member("id", mustJSON(a.ID))
	member("status", mustJSON(a.Status))
	if a.Status == store.StatusError && a.StatusReason != "" {
		member("statusReason", mustJSON(a.StatusReason))
	}
	member("createdAt", mustJSON(timestamp(a.CreatedAt)))
	member("updatedAt", mustJSON(timestamp(a.UpdatedAt)))
	member("metrics", mustJSON(gen.Metrics{
		TotalMessages:      int(a.Metrics.TotalMessages),
		TotalConversations: int(a.Metrics.TotalConversations),
		Uptime:             fmt.Sprintf("%.2f%%", a.Metrics.Uptime),
	}))
	return d.close(), nil
}

// document writes a JSON object member by member: the stored members are
// canonical JSON already, so building a map and marshalling it would only
// decode, sort and re-encode them (a quarter of a Get's CPU).
type document struct{ b bytes.Buffer }

func (d *document) member(name string, value []byte) {
	if d.b.Len() > 1 {
		d.b.WriteByte(',')
	}
	d.b.Write(mustJSON(name))
	d.b.WriteByte(':')
	d.b.Write(value)
}

// close ends the object and returns it.
func (d *document) close() json.RawMessage {
	d.b.WriteByte('}')
	return d.b.Bytes()
}

// storedMembers starts the agent's document with its stored members,
// settings passed through secrets (masking them for Get, removing them for
// Export), and the defaults of the members never set.
func (s *Server) storedMembers(a store.Agent, secrets func(json.RawMessage) (json.RawMessage, error)) (*document, error) {
	d := &document{}
	d.b.Grow(512 + 64*len(a.Fields))
	d.b.WriteByte('{')
	for name, value := range a.Fields {
		if name == "settings" {
			v, err := secrets(value)
			if err != nil {
				return nil, fmt.Errorf("server: the secrets of stored settings: %w", err)
			}
			value = v
		}
		d.member(name, value)
	}
	for name, value := range s.members.empty {
		if _, ok := a.Fields[name]; !ok {
			d.member(name, value)
		}
	}
	return d, nil
}

// agentSummary is one entry of List Agents.
func agentSummary(a store.Agent) gen.AgentSummary {
	clients := []gen.Platform{}
	for _, c := range a.Fields.Clients() {
		clients = append(clients, gen.Platform(c))
	}
	return gen.AgentSummary{
		Id: a.ID, Name: a.Name, Status: gen.AgentStatus(a.Status),
		CreatedAt: timestamp(a.CreatedAt), UpdatedAt: timestamp(a.UpdatedAt),
		ModelProvider: gen.ModelProvider(a.ModelProvider), Model: a.Model, Clients: clients,
	}
}
