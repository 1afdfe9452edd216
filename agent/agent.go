// Package agent owns the agent document: the members of an agent as the
// API takes them and the store keeps them (name, clients, settings,
// modelProvider, the character's members, ...), each a JSON value. The
// members the service itself relies on (name, clients, settings.<platform>
// and those Validate checks) are read through Document, so their shape is
// known in one place; the store calls Validate on every write. The
// character's members that shape the prompt are llm's (llm.CharacterFrom),
// settings.secrets is sealed by the store and masked by server/, and
// server/ normalizes the members of a request body before they become a
// document, each written in the canonical form the store keeps
// (AppendCanonical, IsCanonical). It imports nothing of agentd and no
// database code.
package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Document is an agent's members by name, each a JSON value.
type Document map[string]json.RawMessage

// ErrInvalid is matched by every error of Validate and Decode.
var ErrInvalid = errors.New("agent: invalid document")

// MemberError is a member Validate or Decode refuses, and why.
type MemberError struct{ Member, Reason string }

func (e *MemberError) Error() string { return fmt.Sprintf("agent: member %q %s", e.Member, e.Reason) }

// Is makes every MemberError match ErrInvalid.
func (e *MemberError) Is(target error) bool { return target == ErrInvalid }

// MaxNameLength bounds a name, counted in characters after trimming.
const MaxNameLength = 100

// Decode decodes member name into dst when it is present and not null; it
// reports whether it was. A member of the wrong shape is a *MemberError.
func (d Document) Decode(name string, dst any) (bool, error) {
	v, ok := d[name]
	if !ok || bytes.Equal(v, []byte("null")) {
		return false, nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return false, &MemberError{Member: name, Reason: "has the wrong type: " + jsonType(dst)}
	}
	return true, nil
}

// jsonType names the JSON type dst decodes.
func jsonType(dst any) string {
	switch dst.(type) {
	case *string:
		return "must be a string"
	case *bool:
		return "must be true or false"
	case *[]string:
		return "must be a list of strings"
	}
	return "must be an object"
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

// Validate checks a whole document, as the store keeps it: ValidateMembers,
// and a name is required.
func (d Document) Validate() error {
	if _, ok := d["name"]; !ok {
		return &MemberError{Member: "name", Reason: "is required"}
	}
	return d.ValidateMembers()
}

// ValidateMembers checks the members the service itself relies on that d
// holds (an update's body holds only some), whatever the way in (the API's
// schema checks the rest first): name a string of 1 to MaxNameLength
// characters with no space around it, modelProvider and model strings,
// deleteProtection a boolean and clients a list of strings. Its errors are
// *MemberError.
func (d Document) ValidateMembers() error {
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
	if _, ok := d["name"]; ok {
		if n := utf8.RuneCountInString(name); n < 1 || n > MaxNameLength || strings.TrimSpace(name) != name {
			return &MemberError{Member: "name", Reason: fmt.Sprintf("must be 1 to %d characters after trimming", MaxNameLength)}
		}
	}
	return nil
}

// emptyMembers are the members Get Agent always shows, with the value each
// takes while never set: the required, writable lists, objects and
// booleans of the contract's Agent schema. server/ checks at start that the
// contract says the same.
var emptyMembers = map[string]string{
	"bio": "[]", "clients": "[]", "deleteProtection": "false", "goals": "[]",
	"knowledge": "[]", "personality": "{}", "plugins": "[]", "settings": "{}",
}

// EmptyMembers returns a new map of the members Get Agent always shows
// to the value each takes while never set.
func EmptyMembers() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(emptyMembers))
	for name, v := range emptyMembers {
		out[name] = json.RawMessage(v)
	}
	return out
}
