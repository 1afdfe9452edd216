package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every sealed value.
const Prefix = "enc:v1:"

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

// ErrOpen means a sealed value could not be opened: there is no key, the key
// is not the one it was sealed with, the value belongs to another owner, or
// it was altered.
var ErrOpen = errors.New("secretbox: cannot decrypt")

// Box seals and opens values under one key. A nil *Box has no key: it seals
// nothing and opens nothing. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// ParseKey decodes a key written as standard base64 of KeySize bytes (what
// `openssl rand -base64 32` prints) and returns its Box.
func ParseKey(encoded string) (*Box, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil {
		return nil, errors.New("secretbox: the key is not standard base64")
	}
	return New(key)
}

// New returns the Box of a KeySize-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secretbox: the key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Sealed reports whether v has the form of a sealed value.
func Sealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Seal encrypts plaintext for owner under a fresh nonce. It panics on a nil
// Box: callers check for a key first.
func (b *Box) Seal(plaintext []byte, owner string) (string, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secretbox: nonce: %w", err)
	}
	sealed := b.aead.Seal(nonce, nonce, plaintext, []byte(owner))
	return Prefix + base64.StdEncoding.EncodeToString(sealed), nil
}

// Open decrypts a sealed value of owner. Every failure matches ErrOpen and
// says nothing of the value.
func (b *Box) Open(sealed, owner string) ([]byte, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: no key is configured", ErrOpen)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, Prefix))
	if !Sealed(sealed) || err != nil || len(raw) < b.aead.NonceSize() {
		return nil, fmt.Errorf("%w: malformed value", ErrOpen)
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(owner))
	if err != nil {
		return nil, fmt.Errorf("%w: wrong key or altered value", ErrOpen)
	}
	return plain, nil
}
