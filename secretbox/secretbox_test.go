package secretbox_test

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/secretbox"
)

func newKey(t *testing.T) (*secretbox.Box, string) {
	t.Helper()
	key := make([]byte, secretbox.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString(key)
	b, err := secretbox.ParseKey(enc)
	if err != nil {
		t.Fatal(err)
	}
	return b, enc
}

func TestSealOpen(t *testing.T) {
	b, _ := newKey(t)
	other, _ := newKey(t)
	s1, err := b.Seal([]byte(`"sk-secret"`), "agent_1")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b.Seal([]byte(`"sk-secret"`), "agent_1")
	if !secretbox.Sealed(s1) || strings.Contains(s1, "sk-secret") || s1 == s2 {
		t.Fatalf("sealed %q and %q: want prefixed, opaque, fresh nonce each", s1, s2)
	}
	if got, err := b.Open(s1, "agent_1"); err != nil || string(got) != `"sk-secret"` {
		t.Fatalf("open = %q, %v", got, err)
	}
	var none *secretbox.Box
	for name, open := range map[string]func() ([]byte, error){
		"other owner": func() ([]byte, error) { return b.Open(s1, "agent_2") },
		"other key":   func() ([]byte, error) { return other.Open(s1, "agent_1") },
		"no key":      func() ([]byte, error) { return none.Open(s1, "agent_1") },
		"altered":     func() ([]byte, error) { return b.Open(s1[:len(s1)-4]+"AAA=", "agent_1") },
		"malformed":   func() ([]byte, error) { return b.Open("enc:v1:!!", "agent_1") },
	} {
		if _, err := open(); !errors.Is(err, secretbox.ErrOpen) {
			t.Errorf("%s: err = %v, want ErrOpen", name, err)
		}
	}
}

func TestParseKeyRejects(t *testing.T) {
	for _, k := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := secretbox.ParseKey(k); err == nil {
			t.Errorf("ParseKey(%q) accepted", k)
		}
	}
}
