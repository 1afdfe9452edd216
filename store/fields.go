package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd/agentd/agent"
)

// canonicalFields copies in with every member canonicalized. A "status"
// member is dropped: status is not a field (see UpdateAgent's status argument).
func canonicalFields(in map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(in))
	for k, v := range in {
		if k == "status" {
			continue
		}
		c, err := Canonical(v)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		out[k] = c
	}
	return out, nil
}

// mergeFields replaces each member of stored present in in and returns the
// names of the members whose value actually changed. An absent member
// equals its empty value, as Get Agent shows it: [] or {} sent for a
// member never set changes nothing.
func mergeFields(stored, in map[string]json.RawMessage) []string {
	var changed []string
	for k, v := range in {
		old, ok := stored[k]
		if ok && bytes.Equal(old, v) || !ok && isEmptyValue(v) {
			continue
		}
		stored[k] = v
		changed = append(changed, k)
	}
	return changed
}

// setFields stores fields on row and derives the indexed columns from
// them, once the document is valid (agent.Document.Validate).
func setFields(row *agentRow, fields agent.Document) error {
	if err := fields.Validate(); err != nil {
		var me *agent.MemberError
		if errors.As(err, &me) {
			return fieldError(me.Member, me.Reason)
		}
		return invalidf("%v", err)
	}
	var provider, model string
	var protect bool
	_, _ = fields.Decode("modelProvider", &provider) // valid: the shapes were checked
	_, _ = fields.Decode("model", &model)
	_, _ = fields.Decode("deleteProtection", &protect)
	enc, err := encodeFields(fields)
	if err != nil {
		return invalidf("encode fields: %v", err)
	}
	row.Name, row.ModelProvider, row.Model, row.DeleteProtection = ctext(fields.Name()), provider, model, protect
	row.Fields, row.Clients = enc, clientsOf(fields)
	return nil
}

// encodeFields writes fields as the fields column holds them, the JSON
// object of its members by name. Members are canonical, so they are
// copied as they are, not compacted by encoding/json; a member that is
// not (none should be) sends the whole object through encoding/json.
func encodeFields(fields map[string]json.RawMessage) (string, error) {
	names := sortedKeys(fields)
	size := 2
	for _, name := range names {
		size += len(name) + len(fields[name]) + 4
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, name := range names {
		v := fields[name]
		if !agent.IsCanonical(v) {
			enc, err := encodeJSON(fields)
			return string(enc), err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = agent.AppendCanonical(b, name) // a string never fails
		b = append(b, ':')
		b = append(b, v...)
	}
	b = append(b, '}')
	return string(b), nil
}

// decodeFields decodes a stored fields column.
func decodeFields(s string) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(s), &fields); err != nil {
		return nil, fmt.Errorf("decode stored fields: %v", err)
	}
	return fields, nil
}

// clientsOf is the Clients column of an agent with fields: its "clients"
// member as stored, or "" when unset or null.
func clientsOf(fields map[string]json.RawMessage) string {
	v, ok := fields["clients"]
	if !ok || bytes.Equal(v, []byte("null")) {
		return ""
	}
	return string(v)
}

// isEmptyValue reports whether the canonical v is [] or {}.
func isEmptyValue(v json.RawMessage) bool {
	return bytes.Equal(v, []byte("[]")) || bytes.Equal(v, []byte("{}"))
}
