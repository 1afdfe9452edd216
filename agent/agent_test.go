package agent

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func doc(t *testing.T, s string) Document {
	t.Helper()
	var d Document
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestAccessors: the members read through Document, absent or null ones
// included.
func TestAccessors(t *testing.T) {
	d := doc(t, `{"name":"Ada","clients":["telegram","discord"],"settings":{"discord":{"allowedChannelIds":["1"]}}}`)
	if d.Name() != "Ada" || !slices.Equal(d.Clients(), []string{"telegram", "discord"}) {
		t.Errorf("name %q clients %q", d.Name(), d.Clients())
	}
	if got := string(d.PlatformSettings("discord")); got != `{"allowedChannelIds":["1"]}` {
		t.Errorf("discord settings %s", got)
	}
	if d.PlatformSettings("twitter") != nil {
		t.Error("settings of a platform not set")
	}
	empty := doc(t, `{"clients":null}`)
	if empty.Clients() != nil || empty.Name() != "" || empty.PlatformSettings("discord") != nil {
		t.Error("an empty document has members")
	}
}

// TestValidate: what the service relies on, refused with ErrInvalid.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		doc string
		ok  bool
	}{
		{`{"name":"Ada"}`, true},
		{`{"name":"Ada","modelProvider":"openai","model":"m","deleteProtection":true,"clients":["telegram"]}`, true},
		{`{}`, false},
		{`{"name":""}`, false},
		{`{"name":7}`, false},
		{`{"name":"Ada","deleteProtection":"yes"}`, false},
		{`{"name":"Ada","clients":"telegram"}`, false},
		{`{"name":"Ada","model":["m"]}`, false},
	} {
		err := doc(t, c.doc).Validate()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: %v", c.doc, err)
		}
	}
}
