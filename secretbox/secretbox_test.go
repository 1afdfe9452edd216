package secretbox_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/secretbox"
)

// newKey returns a fresh key as AGENTD_SECRET_KEY writes it, and its Box.
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
	s1, err := b.Seal([]byte(`"sk-secret"`), "agent_1", "OPENAI_API_KEY")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b.Seal([]byte(`"sk-secret"`), "agent_1", "OPENAI_API_KEY")
	if !secretbox.Sealed(s1) || strings.Contains(s1, "sk-secret") || s1 == s2 || !b.Current(s1) {
		t.Fatalf("sealed %q and %q: want prefixed, opaque, fresh nonce each, current", s1, s2)
	}
	if got, err := b.Open(s1, "agent_1", "OPENAI_API_KEY"); err != nil || string(got) != `"sk-secret"` {
		t.Fatalf("open = %q, %v", got, err)
	}
	var none *secretbox.Box
	for name, open := range map[string]func() ([]byte, error){
		"other owner": func() ([]byte, error) { return b.Open(s1, "agent_2", "OPENAI_API_KEY") },
		"other name":  func() ([]byte, error) { return b.Open(s1, "agent_1", "GROQ_API_KEY") },
		"other key":   func() ([]byte, error) { return other.Open(s1, "agent_1", "OPENAI_API_KEY") },
		"no key":      func() ([]byte, error) { return none.Open(s1, "agent_1", "OPENAI_API_KEY") },
		"altered":     func() ([]byte, error) { return b.Open(s1[:len(s1)-4]+"AAA=", "agent_1", "OPENAI_API_KEY") },
		"malformed":   func() ([]byte, error) { return b.Open("enc:v2:!!", "agent_1", "OPENAI_API_KEY") },
	} {
		if _, err := open(); !errors.Is(err, secretbox.ErrOpen) {
			t.Errorf("%s: err = %v, want ErrOpen", name, err)
		}
	}
}

// TestRollingKeys: a list of keys seals with the first and opens with any,
// so replicas holding old,new and new,old read each other's writes during
// a rolling restart.
func TestRollingKeys(t *testing.T) {
	_, oldKey := newKey(t)
	_, newKey := newKey(t)
	parse := func(list string) *secretbox.Box {
		t.Helper()
		b, err := secretbox.ParseKeys(list)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	onlyOld, readsNew, sealsNew, onlyNew := parse(oldKey), parse(oldKey+","+newKey), parse(newKey+", "+oldKey), parse(newKey)
	byOld, _ := onlyOld.Seal([]byte("v"), "agent_1", "K")
	byNew, _ := sealsNew.Seal([]byte("v"), "agent_1", "K")
	for name, c := range map[string]struct {
		box    *secretbox.Box
		sealed string
	}{
		"old by old,new": {readsNew, byOld}, "new by old,new": {readsNew, byNew},
		"old by new,old": {sealsNew, byOld}, "new by new": {onlyNew, byNew},
	} {
		if got, err := c.box.Open(c.sealed, "agent_1", "K"); err != nil || string(got) != "v" {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if _, err := onlyNew.Open(byOld, "agent_1", "K"); !errors.Is(err, secretbox.ErrOpen) {
		t.Errorf("a removed key still opens: %v", err)
	}
	if sealsNew.Current(byOld) || !sealsNew.Current(byNew) || readsNew.Current(byNew) {
		t.Error("Current does not follow the newest key")
	}
}

// TestFirstFormatStillOpens: values sealed before key ids (enc:v1:, bound
// to the owner alone) open under any listed key, and are not current.
func TestFirstFormatStillOpens(t *testing.T) {
	raw := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(raw)
	block, _ := aes.NewCipher(raw)
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	v1 := "enc:v1:" + base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte("legacy"), []byte("agent_1")))
	other, otherKey := newKey(t)
	b, err := secretbox.ParseKeys(otherKey + "," + base64.StdEncoding.EncodeToString(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Open(v1, "agent_1", "K"); err != nil || string(got) != "legacy" || b.Current(v1) {
		t.Errorf("v1 value: %q, %v, current %v", got, err, b.Current(v1))
	}
	if _, err := other.Open(v1, "agent_1", "K"); !errors.Is(err, secretbox.ErrOpen) {
		t.Errorf("v1 value under another key: %v", err)
	}
}

// TestSealedForm: only the sealed formats count as sealed, so a plain
// secret that merely starts like one stays a plain secret.
func TestSealedForm(t *testing.T) {
	for v, want := range map[string]bool{"enc:v1:abc": true, "enc:v2:0a1b2c3d:abc": true, "enc:v9:x": true,
		"enc:value": false, "enc:v": false, "sk-enc:v1:": false} {
		if got := secretbox.Sealed(v); got != want {
			t.Errorf("Sealed(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestParseKeyRejects(t *testing.T) {
	_, good := newKey(t)
	for _, k := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16)), good + ",", good + ",nope"} {
		if _, err := secretbox.ParseKeys(k); err == nil {
			t.Errorf("ParseKeys(%q) accepted", k)
		}
	}
}
