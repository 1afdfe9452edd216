package agent

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
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
		{`{"name":" Ada "}`, false},
		{`{"name":"` + strings.Repeat("n", MaxNameLength+1) + `"}`, false},
	} {
		err := doc(t, c.doc).Validate()
		var me *MemberError
		if c.ok != (err == nil) || (err != nil && (!errors.Is(err, ErrInvalid) || !errors.As(err, &me))) {
			t.Errorf("%s: %v", c.doc, err)
		}
	}
	// An update's body holds some members: each present one is checked,
	// none is required.
	if err := doc(t, `{"model":"m"}`).ValidateMembers(); err != nil {
		t.Errorf("partial document: %v", err)
	}
	err := doc(t, `{"clients":"telegram"}`).ValidateMembers()
	if me := (*MemberError)(nil); !errors.As(err, &me) || me.Member != "clients" {
		t.Errorf("a partial document's bad member: %v", err)
	}
}
