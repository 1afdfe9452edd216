package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Prefix starts every sealed value, of either format:
//
//	enc:v1:<base64(nonce|ciphertext)>        bound to its owner, key unnamed
//	enc:v2:<key id>:<base64(nonce|ciphertext)> bound to its owner and name
//
// Seal writes v2; Open reads both, so values sealed before key ids stay
// readable until `agentd secrets rotate` rewrites them.
const Prefix = "enc:v"

const (
	prefixV1 = "enc:v1:"
	prefixV2 = "enc:v2:"
)

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

// ErrOpen means a sealed value could not be opened: there is no key, no
// listed key is the one it was sealed with, the value belongs to another
// owner or name, or it was altered.
var ErrOpen = errors.New("secretbox: cannot decrypt")

// key is one AES-GCM key and its id.
type key struct {
	id   string // hex of the first 4 bytes of a hash of the key
	aead cipher.AEAD
}

// Box seals under its newest key and opens under any of its keys, so keys
// rotate without an outage: a value names the key that sealed it. A nil
// *Box has no key: it seals nothing and opens nothing. It is safe for
// concurrent use.
type Box struct {
	keys []key // newest first
}

// ParseKey decodes a key written as standard base64 of KeySize bytes (what
// `openssl rand -base64 32` prints) and returns its Box.
func ParseKey(encoded string) (*Box, error) { return ParseKeys(encoded) }

// ParseKeys decodes a comma-separated list of keys, newest first, each
// written as ParseKey takes it: the newest seals, every one opens.
func ParseKeys(list string) (*Box, error) {
	var raw [][]byte
	for i, encoded := range strings.Split(list, ",") {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
		if err != nil {
			return nil, fmt.Errorf("secretbox: key %d is not standard base64", i+1)
		}
		raw = append(raw, k)
	}
	return New(raw...)
}

// New returns the Box of one or more KeySize-byte keys, newest first.
func New(keys ...[]byte) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("secretbox: no key")
	}
	b := &Box{}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("secretbox: key %d is %d bytes, want %d", i+1, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		b.keys = append(b.keys, key{id: keyID(k), aead: aead})
	}
	return b, nil
}

// keyID names a key without revealing it.
func keyID(k []byte) string {
	sum := sha256.Sum256(append([]byte("agentd secretbox key id\x00"), k...))
	return hex.EncodeToString(sum[:4])
}

// sealedForm matches a sealed value of any format version, one this version
// cannot open too (it is not a plain secret either).
var sealedForm = regexp.MustCompile(`^enc:v[0-9]+:`)

// Sealed reports whether v has the form of a sealed value.
func Sealed(v string) bool { return sealedForm.MatchString(v) }

// Current reports whether sealed was sealed by b's newest key in the
// current format, so a rotation can leave it as it is.
func (b *Box) Current(sealed string) bool {
	id, _, ok := strings.Cut(strings.TrimPrefix(sealed, prefixV2), ":")
	return b != nil && strings.HasPrefix(sealed, prefixV2) && ok && id == b.keys[0].id
}

// Seal encrypts plaintext under the newest key and a fresh nonce, bound to
// owner and name (the associated data: a value copied to another owner or
// name does not open). It panics on a nil Box: callers check for a key
// first.
func (b *Box) Seal(plaintext []byte, owner, name string) (string, error) {
	k := b.keys[0]
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secretbox: nonce: %w", err)
	}
	sealed := k.aead.Seal(nonce, nonce, plaintext, associated(owner, name))
	return prefixV2 + k.id + ":" + base64.StdEncoding.EncodeToString(sealed), nil
}

// associated is the associated data of a v2 value.
func associated(owner, name string) []byte { return []byte(owner + "\x00" + name) }

// Open decrypts a value sealed for owner and name by one of b's keys (a v1
// value, bound to owner alone and naming no key, is tried under each).
// Every failure matches ErrOpen and says nothing of the value.
func (b *Box) Open(sealed, owner, name string) ([]byte, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: no key is configured", ErrOpen)
	}
	if rest, ok := strings.CutPrefix(sealed, prefixV2); ok {
		id, data, _ := strings.Cut(rest, ":")
		for _, k := range b.keys {
			if k.id == id {
				return open(k, data, associated(owner, name))
			}
		}
		return nil, fmt.Errorf("%w: sealed by key %s, which is not configured", ErrOpen, id)
	}
	if data, ok := strings.CutPrefix(sealed, prefixV1); ok {
		for _, k := range b.keys {
			if plain, err := open(k, data, []byte(owner)); err == nil {
				return plain, nil
			}
		}
		return nil, fmt.Errorf("%w: wrong key or altered value", ErrOpen)
	}
	return nil, fmt.Errorf("%w: malformed value", ErrOpen)
}

// open decrypts base64 data (nonce, then ciphertext) under k.
func open(k key, data string, ad []byte) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(data)
	n := k.aead.NonceSize()
	if err != nil || len(raw) < n {
		return nil, fmt.Errorf("%w: malformed value", ErrOpen)
	}
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], ad)
	if err != nil {
		return nil, fmt.Errorf("%w: wrong key or altered value", ErrOpen)
	}
	return plain, nil
}
