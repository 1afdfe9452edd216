// Package agent owns the agent document: the members of an agent as the
// API takes them and the store keeps them (name, clients, settings,
// modelProvider, the character's members, ...), each a JSON value. The
// members the service itself relies on (name, clients, settings.<platform>
// and those Validate checks) are read through Document, so their shape is
// known in one place; the store calls Validate on every write. The
// character's members that shape the prompt are llm's (llm.CharacterFrom),
// settings.secrets is sealed by the store and masked by server/, and
// server/ normalizes the members of a request body before they become a
// document. It imports nothing of agentd and no database code.
package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Document is an agent's members by name, each a JSON value.
type Document map[string]json.RawMessage

// ErrInvalid is matched by every error of Validate and Decode.
var ErrInvalid = errors.New("agent: invalid document")

// Decode decodes member name into dst when it is present and not null; it
// reports whether it was. A member of the wrong shape is an error matching
// ErrInvalid.
func (d Document) Decode(name string, dst any) (bool, error) {
	v, ok := d[name]
	if !ok || bytes.Equal(v, []byte("null")) {
		return false, nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return false, fmt.Errorf("%w: member %q: %v", ErrInvalid, name, err)
	}
	return true, nil
}

// Name is the agent's name, "" when it has none.
func (d Document) Name() string {
	var name string
	_, _ = d.Decode("name", &name)
	return name
}

// Clients are the platforms the agent runs on ("telegram", "discord",
// "twitter"), none when absent or not a list of names.
func (d Document) Clients() []string {
	var clients []string
	if _, err := d.Decode("clients", &clients); err != nil {
		return nil
	}
	return clients
}

// PlatformSettings is settings.<platform>, the settings of one platform
// connection; nil when absent.
func (d Document) PlatformSettings(platform string) json.RawMessage {
	var settings map[string]json.RawMessage
	if _, err := d.Decode("settings", &settings); err != nil {
		return nil
	}
	return settings[platform]
}

// Validate checks the members the service itself relies on, whatever the
// way in (the API's schema checks the rest first): name a non-empty
// string, modelProvider and model strings, deleteProtection a boolean and
// clients a list of strings, when present. Its errors match ErrInvalid.
func (d Document) Validate() error {
	var name, provider, model string
	var protect bool
	var clients []string
	for _, m := range []struct {
		name string
		dst  any
	}{{"name", &name}, {"modelProvider", &provider}, {"model", &model}, {"deleteProtection", &protect}, {"clients", &clients}} {
		if _, err := d.Decode(m.name, m.dst); err != nil {
			return err
		}
	}
	if name == "" {
		return fmt.Errorf(`%w: member "name" is missing or empty`, ErrInvalid)
	}
	return nil
}
