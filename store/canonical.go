package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
)

// Canonical returns v re-encoded canonically (agent.AppendCanonical):
// objects' keys sorted, numbers kept exactly as written (json.Number),
// strings re-escaped the one way encoding/json writes them (without HTML
// escaping), no insignificant space. Two documents that differ only in key
// order or spacing canonicalize to the same bytes; it is the form agents'
// members are stored and compared in. A v already canonical, as the API
// hands members over, is returned as it is, read once and not decoded.
// It returns ErrInvalid if v is not exactly one JSON value.
func Canonical(v json.RawMessage) (json.RawMessage, error) {
	if agent.IsCanonical(v) {
		return v[:len(v):len(v)], nil
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("store: canonical json: %w: %v", domain.ErrInvalid, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("store: canonical json: %w: data after the value", domain.ErrInvalid)
	}
	out, err := agent.AppendCanonical(make([]byte, 0, len(v)), x)
	if err != nil {
		return nil, fmt.Errorf("store: canonical json: %w: %v", domain.ErrInvalid, err)
	}
	return out, nil
}

// encodeJSON marshals x compactly without HTML escaping (so "<" stays "<"
// and stored values compare equal to canonical ones).
func encodeJSON(x any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
