package store

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/domain"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":{"d":[1,2],"c":null}}`, `{"a":{"c":null,"d":[1,2]},"b":1}`},
		{" { \"a\" :\n true } ", `{"a":true}`},
		{`[1.0, 1e2, 12345678901234567890123, -0.5]`, `[1.0,1e2,12345678901234567890123,-0.5]`},
		{`"<b>&amp;"`, `"<b>&amp;"`},
		{`"\u00e9\u003c"`, `"é<"`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`[]`, `[]`},
	} {
		got, err := Canonical(json.RawMessage(tc.in))
		if err != nil {
			t.Errorf("Canonical(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, want %s", tc.in, got, tc.want)
		}
		again, err := Canonical(got)
		if err != nil || string(again) != string(got) {
			t.Errorf("Canonical is not idempotent on %s: %s, %v", got, again, err)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":1} x`, `1 2`, `nul`} {
		if _, err := Canonical(json.RawMessage(bad)); err == nil {
			t.Errorf("Canonical(%q) accepted", bad)
		} else {
			wantErr(t, err, domain.ErrInvalid)
		}
	}
}

// TestEncodeFields: the fields column is written as encoding/json writes
// the map of members, canonical ones copied and any other compacted.
func TestEncodeFields(t *testing.T) {
	for _, fields := range []map[string]json.RawMessage{
		{},
		{"name": json.RawMessage(`"Ada"`), "bio": json.RawMessage(`["a","b"]`), "a\u2028<": json.RawMessage(`{"x":1}`)},
		{"name": json.RawMessage(`"Ada"`), "settings": json.RawMessage(`{ "b" : 1, "a": "<" }`)},
	} {
		want, err := encodeJSON(fields)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeFields(fields)
		if err != nil || got != string(want) {
			t.Errorf("encodeFields(%v) = %s, %v; want %s", fields, got, err, want)
		}
	}
}
