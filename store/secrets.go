package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/secretbox"
)

// Option configures a Store at Open.
type Option func(*Store)

// WithSecretBox makes the store encrypt every secret (see SecretMask)
// with box (AGENTD_SECRET_KEY) on write and decrypt it in Secrets.
func WithSecretBox(box *secretbox.Box) Option {
	return func(s *Store) { s.box = box }
}

// Secrets decrypts the secrets of a, an agent as GetAgent returns
// it (its Fields hold the stored, encrypted form). It is the only way to
// the values: call it just before a provider or platform call. It returns
// ErrSecretUnreadable, naming the secret but never its value, when one does
// not open under the configured key.
func (s Agents) Secrets(a domain.Agent) (domain.Secrets, error) {
	out := domain.Secrets{}
	err := eachSecret(a.Fields, func(name string, v json.RawMessage) error {
		plain, err := s.openValue(v, a.ID, name)
		if err != nil {
			return fmt.Errorf("store: secret %s of agent %s: %w", name, a.ID, err)
		}
		out[name] = plain
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// openValue decrypts a sealed value of owner's secret name; a plain one is
// returned as it is.
func (s *core) openValue(v json.RawMessage, owner, name string) (json.RawMessage, error) {
	sealed, ok := sealedString(v)
	if !ok {
		return v, nil
	}
	plain, err := s.box.Open(sealed, owner, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", domain.ErrSecretUnreadable, err)
	}
	return plain, nil
}

// sealValue encrypts a plain value of owner's secret name when a key is
// configured, bound to both.
func (s *core) sealValue(v json.RawMessage, owner, name string) (json.RawMessage, error) {
	if _, ok := sealedString(v); ok || s.box == nil {
		return v, nil
	}
	sealed, err := s.box.Seal(v, owner, name)
	if err != nil {
		return nil, err
	}
	return json.Marshal(sealed)
}

// sealedString returns v's text when v is a sealed value.
func sealedString(v json.RawMessage) (string, bool) {
	var str string
	if json.Unmarshal(v, &str) != nil || !secretbox.Sealed(str) {
		return "", false
	}
	return str, true
}

// openView returns a copy of fields with every secret that opens under the
// configured key decrypted; the others stay sealed. Updates compare and
// merge in this form, so resending a secret's value is no change.
func (s *core) openView(fields map[string]json.RawMessage, owner string) (map[string]json.RawMessage, error) {
	return mapSecrets(fields, func(name string, v json.RawMessage) (json.RawMessage, error) {
		if plain, err := s.openValue(v, owner, name); err == nil {
			return plain, nil
		}
		return v, nil
	})
}

// sealAll returns a copy of fields with every plain secret encrypted when a
// key is configured: values written before the key was set are encrypted on
// their next write.
func (s *core) sealAll(fields map[string]json.RawMessage, owner string) (map[string]json.RawMessage, error) {
	return mapSecrets(fields, func(name string, v json.RawMessage) (json.RawMessage, error) {
		return s.sealValue(v, owner, name)
	})
}

// hasPlainSecrets reports whether a key is configured and fields still hold
// a secret that is not encrypted under its newest key (plain, or sealed by
// an older key or format): any write then seals it afresh.
func (s *core) hasPlainSecrets(fields map[string]json.RawMessage) bool {
	return s.box != nil && anySecret(fields, func(v json.RawMessage) bool {
		sealed, ok := sealedString(v)
		return !ok || !s.box.Current(sealed)
	})
}

// resolveSecrets checks the secrets a client sent in fields: the mask takes
// the value of view's secret at the same path (view is the stored agent as
// openView shows it, nil on create) and is an ErrInvalid *Error naming that
// path when there is none; a value in the sealed form is one too, so a
// stored value is sealed exactly when the store sealed it.
func resolveSecrets(fields, view map[string]json.RawMessage) error {
	var stored []secretGroup
	_ = eachGroup(view, func(g secretGroup) error { // fn never fails
		stored = append(stored, g)
		return nil
	})
	return editGroups(fields, func(g secretGroup) error {
		for _, member := range sortedKeys(g.members) {
			v := g.members[member]
			if _, ok := sealedString(v); ok {
				return fieldError(g.field(member), "must not be in the sealed form (enc:v<n>:...)")
			}
			if !bytes.Equal(v, maskJSON) {
				continue
			}
			prev, ok := storedSecret(stored, g.path, member)
			if !ok {
				return fieldError(g.field(member), fmt.Sprintf("is the mask %q but the agent has no such secret; send its value", domain.SecretMask))
			}
			g.members[member] = prev
		}
		return nil
	})
}

// storedSecret returns member of the group at path among groups. Groups are
// matched by path, not secret name, so a mask only ever keeps the value
// stored at the very place it was sent to.
func storedSecret(groups []secretGroup, path []string, member string) (json.RawMessage, bool) {
	for _, g := range groups {
		if slices.Equal(g.path, path) {
			v, ok := g.members[member]
			return v, ok
		}
	}
	return nil, false
}

// MaskSecrets returns settings (a stored settings member) with the value of
// every secret replaced by SecretMask and the names kept: what Get Agent
// shows. Members not of the expected shape are left as they are, as the
// store leaves them unsealed.
func MaskSecrets(settings json.RawMessage) (json.RawMessage, error) {
	out, _, err := walkSettings(settings, true, func(g secretGroup) error {
		for member := range g.members {
			g.members[member] = maskJSON
		}
		return nil
	})
	return out, err
}

// maskJSON is SecretMask as a JSON value.
var maskJSON = json.RawMessage(`"` + domain.SecretMask + `"`)

// secretPattern locates secret groups, JSON objects under settings every
// member of which is a secret: keys are the members from settings down to
// the object, "*" standing for every member at that level; name makes a
// member's secret name from the group's concrete path.
type secretPattern struct {
	keys []string
	name func(path []string, member string) string
}

// secretPatterns are the secret groups, in the order they are visited (a
// later group's secret wins in Secrets should names collide). The members
// of settings.secrets keep their bare names, so values sealed before MCP
// servers existed still open.
var secretPatterns = []*secretPattern{
	{keys: []string{"secrets"}, name: func(_ []string, member string) string { return member }},
	{keys: []string{"mcp", "servers", "*", "headers"}, name: func(path []string, member string) string {
		return domain.HeaderSecretName(path[2], member)
	}},
	{keys: []string{"agents", "remote", "*", "headers"}, name: func(path []string, member string) string {
		return domain.RemoteHeaderSecretName(path[2], member)
	}},
}

// secretGroup is one secret group found in an agent's settings.
type secretGroup struct {
	pattern *secretPattern
	path    []string                   // keys from settings down to the object
	members map[string]json.RawMessage // editGroups' fn changes them in place
}

// secretName is member's seal binding and key in Secrets.
func (g secretGroup) secretName(member string) string { return g.pattern.name(g.path, member) }

// field is member's dotted path, as errors name it.
func (g secretGroup) field(member string) string {
	return "settings." + strings.Join(g.path, ".") + "." + member
}

// eachSecret calls fn with the secret name and value of every secret of
// fields.
func eachSecret(fields map[string]json.RawMessage, fn func(name string, v json.RawMessage) error) error {
	return eachGroup(fields, func(g secretGroup) error {
		for member, v := range g.members {
			if err := fn(g.secretName(member), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// hasSecrets reports whether fields hold any secret.
func hasSecrets(fields map[string]json.RawMessage) bool {
	return anySecret(fields, func(json.RawMessage) bool { return true })
}

// errFound stops anySecret's walk at the first match.
var errFound = errors.New("found")

// anySecret reports whether some secret value of fields satisfies pred.
func anySecret(fields map[string]json.RawMessage, pred func(v json.RawMessage) bool) bool {
	return eachSecret(fields, func(_ string, v json.RawMessage) error {
		if pred(v) {
			return errFound
		}
		return nil
	}) != nil
}

// mapSecrets returns a copy of fields whose secrets are replaced by fn's
// results; fields itself is not changed.
func mapSecrets(fields map[string]json.RawMessage, fn func(name string, v json.RawMessage) (json.RawMessage, error)) (map[string]json.RawMessage, error) {
	out := maps.Clone(fields)
	err := editGroups(out, func(g secretGroup) error {
		for member, v := range g.members {
			name := g.secretName(member)
			nv, err := fn(name, v)
			if err != nil {
				return fmt.Errorf("secret %s: %w", name, err)
			}
			g.members[member] = nv
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachGroup calls fn with every secret group of fields, read only.
func eachGroup(fields map[string]json.RawMessage, fn func(g secretGroup) error) error {
	_, _, err := walkSettings(fields["settings"], false, fn)
	return err
}

// editGroups lets fn change the members of every secret group of fields and
// writes fields' settings back canonically; fields without a group are
// left as they are.
func editGroups(fields map[string]json.RawMessage, fn func(g secretGroup) error) error {
	settings, found, err := walkSettings(fields["settings"], true, fn)
	if err == nil && found {
		fields["settings"] = settings
	}
	return err
}

// walkSettings calls fn with the groups of every pattern in settings and
// reports whether there was any; with write, it returns settings with fn's
// changes, else settings as it is.
func walkSettings(settings json.RawMessage, write bool, fn func(g secretGroup) error) (json.RawMessage, bool, error) {
	found := false
	for _, p := range secretPatterns {
		// Stored settings are canonical, so a group's key is spelt exactly
		// so: most settings need no decoding at all.
		if !bytes.Contains(settings, []byte(`"`+p.keys[len(p.keys)-1]+`"`)) {
			continue
		}
		out, f, err := p.walk(settings, nil, write, fn)
		if err != nil {
			return nil, false, err
		}
		settings, found = out, found || f
	}
	return settings, found, nil
}

// walk visits the groups of p inside raw, the object at path, and reports
// whether there was any; with write, it returns raw re-encoded with fn's
// changes. A member along the way that is not an object holds no group and
// is left alone.
func (p *secretPattern) walk(raw json.RawMessage, path []string, write bool, fn func(g secretGroup) error) (json.RawMessage, bool, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return raw, false, nil
	}
	if len(path) == len(p.keys) {
		if err := fn(secretGroup{pattern: p, path: path, members: obj}); err != nil {
			return nil, false, err
		}
		return reencode(raw, obj, write)
	}
	keys := []string{p.keys[len(path)]}
	if keys[0] == "*" {
		keys = sortedKeys(obj)
	}
	found := false
	for _, k := range keys {
		v, ok := obj[k]
		if !ok {
			continue
		}
		out, f, err := p.walk(v, slices.Concat(path, []string{k}), write, fn)
		if err != nil {
			return nil, false, err
		}
		obj[k], found = out, found || f
	}
	if !found {
		return raw, false, nil
	}
	return reencode(raw, obj, write)
}

// reencode returns obj, decoded from raw and holding a group, encoded
// canonically when write, else raw.
func reencode(raw json.RawMessage, obj map[string]json.RawMessage, write bool) (json.RawMessage, bool, error) {
	if !write {
		return raw, true, nil
	}
	enc, err := encodeJSON(obj)
	if err != nil {
		return nil, false, invalidf("encode settings: %v", err)
	}
	return enc, true, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// StripSecrets returns settings (a stored settings member) without any
// secret group: settings.secrets and the headers of each MCP server are
// absent, not masked. It is what an export carries, so that a character
// file leaves the server without a secret in it. Members not of the
// expected shape are left as they are.
func StripSecrets(settings json.RawMessage) (json.RawMessage, error) {
	out := settings
	for _, p := range secretPatterns {
		var err error
		if out, err = removeAt(out, p.keys); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// removeAt deletes the member at keys (from raw down, "*" standing for
// every member at that level) and returns raw canonically encoded; raw is
// returned as it is when it is not an object or the path does not exist.
func removeAt(raw json.RawMessage, keys []string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return raw, nil
	}
	var names []string
	if keys[0] == "*" {
		for name := range obj {
			names = append(names, name)
		}
	} else if _, ok := obj[keys[0]]; ok {
		names = []string{keys[0]}
	}
	if len(names) == 0 {
		return raw, nil
	}
	for _, name := range names {
		if len(keys) == 1 {
			delete(obj, name)
			continue
		}
		child, err := removeAt(obj[name], keys[1:])
		if err != nil {
			return nil, err
		}
		obj[name] = child
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("store: strip secrets: %w", err)
	}
	return Canonical(b)
}
