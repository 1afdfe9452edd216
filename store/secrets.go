package store

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agentd/agentd/secretbox"
)

// SecretMask is what Get Agent shows for every value under
// settings.secrets. Sent back in an update, it keeps the stored value of
// that secret.
const SecretMask = "********"

// Option configures a Store at Open.
type Option func(*Store)

// WithSecretBox makes the store encrypt every value under settings.secrets
// with box (AGENTD_SECRET_KEY) on write and decrypt it in Secrets.
func WithSecretBox(box *secretbox.Box) Option {
	return func(s *Store) { s.box = box }
}

// Secrets are an agent's decrypted settings.secrets: name to JSON value.
type Secrets map[string]json.RawMessage

// String returns the secret name when it is a JSON string, else "".
func (s Secrets) String(name string) string {
	var v string
	_ = json.Unmarshal(s[name], &v) // not a string: ""
	return v
}

// Secrets decrypts the settings.secrets of a, an agent as GetAgent returns
// it (its Fields hold the stored, encrypted form). It is the only way to
// the values: call it just before a provider or platform call. It returns
// ErrSecretUnreadable, naming the secret but never its value, when one does
// not open under the configured key.
func (s *Store) Secrets(a Agent) (Secrets, error) {
	_, secrets := splitSecrets(a.Fields)
	out := make(Secrets, len(secrets))
	for name, v := range secrets {
		plain, err := s.openValue(v, a.ID, name)
		if err != nil {
			return nil, fmt.Errorf("store: secret %s of agent %s: %w", name, a.ID, err)
		}
		out[name] = plain
	}
	return out, nil
}

// openValue decrypts a sealed value of owner's secret name; a plain one is
// returned as it is.
func (s *Store) openValue(v json.RawMessage, owner, name string) (json.RawMessage, error) {
	sealed, ok := sealedString(v)
	if !ok {
		return v, nil
	}
	plain, err := s.box.Open(sealed, owner, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSecretUnreadable, err)
	}
	return plain, nil
}

// sealValue encrypts a plain value of owner's secret name when a key is
// configured, bound to both.
func (s *Store) sealValue(v json.RawMessage, owner, name string) (json.RawMessage, error) {
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
func (s *Store) openView(fields map[string]json.RawMessage, owner string) (map[string]json.RawMessage, error) {
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
func (s *Store) sealAll(fields map[string]json.RawMessage, owner string) (map[string]json.RawMessage, error) {
	return mapSecrets(fields, func(name string, v json.RawMessage) (json.RawMessage, error) {
		return s.sealValue(v, owner, name)
	})
}

// hasPlainSecrets reports whether a key is configured and fields still hold
// a secret that is not encrypted under its newest key (plain, or sealed by
// an older key or format): any write then seals it afresh.
func (s *Store) hasPlainSecrets(fields map[string]json.RawMessage) bool {
	if s.box == nil {
		return false
	}
	_, secrets := splitSecrets(fields)
	for _, v := range secrets {
		if sealed, ok := sealedString(v); !ok || !s.box.Current(sealed) {
			return true
		}
	}
	return false
}

// resolveSecrets checks the secrets a client sent in fields: the mask takes
// the value of view's secret of that name (view is the stored agent as
// openView shows it, nil on create) and is an ErrInvalid *Error naming it when there is none;
// a value in the sealed form is one too, so a stored value is
// sealed exactly when the store sealed it.
func resolveSecrets(fields, view map[string]json.RawMessage) error {
	settings, secrets := splitSecrets(fields)
	if secrets == nil {
		return nil
	}
	_, stored := splitSecrets(view)
	for _, name := range sortedKeys(secrets) {
		field := "settings.secrets." + name
		if _, ok := sealedString(secrets[name]); ok {
			return fieldError(field, "must not be in the sealed form (enc:v<n>:...)")
		}
		if string(secrets[name]) != `"`+SecretMask+`"` {
			continue
		}
		prev, ok := stored[name]
		if !ok {
			return fieldError(field, fmt.Sprintf("is the mask %q but the agent has no such secret; send its value", SecretMask))
		}
		secrets[name] = prev
	}
	return joinSecrets(fields, settings, secrets)
}

// mapSecrets returns a copy of fields whose secrets are replaced by fn's
// results; fields without secrets are returned as they are.
func mapSecrets(fields map[string]json.RawMessage, fn func(name string, v json.RawMessage) (json.RawMessage, error)) (map[string]json.RawMessage, error) {
	settings, secrets := splitSecrets(fields)
	if secrets == nil {
		return fields, nil
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		out[k] = v
	}
	for name, v := range secrets {
		nv, err := fn(name, v)
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", name, err)
		}
		secrets[name] = nv
	}
	return out, joinSecrets(out, settings, secrets)
}

// splitSecrets decodes fields' settings into its members and the members
// of its secrets object; secrets is nil when there is no such object.
func splitSecrets(fields map[string]json.RawMessage) (settings, secrets map[string]json.RawMessage) {
	if json.Unmarshal(fields["settings"], &settings) != nil {
		return nil, nil
	}
	if json.Unmarshal(settings["secrets"], &secrets) != nil {
		return settings, nil
	}
	return settings, secrets
}

// joinSecrets writes secrets back into settings and settings into fields,
// canonically.
func joinSecrets(fields, settings, secrets map[string]json.RawMessage) error {
	enc, err := encodeJSON(secrets)
	if err != nil {
		return invalidf("encode secrets: %v", err)
	}
	settings["secrets"] = enc
	if fields["settings"], err = encodeJSON(settings); err != nil {
		return invalidf("encode settings: %v", err)
	}
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
