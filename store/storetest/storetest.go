// Package storetest gives tests of other packages a store: a fresh
// database on SQLite or PostgreSQL, opened and closed with the test, an
// account in it, a secret box. The store's own tests cannot import it
// (it imports the store) and keep helpers of their own; they find
// PostgreSQL through storetest/pgtest.
package storetest

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/secretbox"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest/pgtest"
)

// PostgresDSN creates an empty database on the test server (CI's, or
// AGENTD_TEST_POSTGRES), dropped when the test ends, and returns its URL.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	return pgtest.DSN(t)
}

// SQLiteDSN returns the path of a new SQLite file in the test's directory.
func SQLiteDSN(t testing.TB) string {
	return filepath.Join(t.TempDir(), "agentd.db")
}

// Backends runs fn as the subtests "sqlite" and "postgres", each with the
// DSN of a fresh database of its kind.
func Backends(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLiteDSN(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, PostgresDSN(t)) })
}

// Open opens the store at dsn with opts, closed when the test ends.
func Open(t testing.TB, dsn string, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Account creates a standard account called name.
func Account(t testing.TB, st *store.Store, name string) domain.Account {
	t.Helper()
	a, err := st.Accounts().CreateAccount(context.Background(), domain.Account{Name: name, Tier: domain.TierStandard})
	if err != nil {
		t.Fatalf("create account %s: %v", name, err)
	}
	return a
}

// Box returns a secret box of a fresh random key.
func Box(t testing.TB) *secretbox.Box {
	t.Helper()
	return BoxOf(t, Key())
}

// Key returns a random secret key.
func Key() []byte {
	key := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(key)
	return key
}

// BoxOf returns a Box over keys, the first the newest: a replica's
// AGENTD_SECRET_KEYS.
func BoxOf(t testing.TB, keys ...[]byte) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
