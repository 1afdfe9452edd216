// Package pgtest gives tests a fresh PostgreSQL database. It imports
// nothing of agentd but internal/testutil (which imports nothing of
// agentd), so that the store's own tests, which cannot import storetest (it
// imports the store), use it too; other packages' tests use
// storetest.PostgresDSN.
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/jackc/pgx/v5"
)

// DefaultServer is the server used when AGENTD_TEST_POSTGRES is empty.
// .ci/setup (run by make test) starts it; an unreachable server skips the
// test, except in CI, where it fails it.
const DefaultServer = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// DSN creates an empty database on the test server, dropped when the test
// ends, and returns its URL.
func DSN(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("AGENTD_TEST_POSTGRES")
	if admin == "" {
		admin = DefaultServer
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse AGENTD_TEST_POSTGRES: %v", err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		testutil.Unavailable(t, "PostgreSQL at "+u.Redacted()+" (or set AGENTD_TEST_POSTGRES)", err)
	}
	name := "agentd_test_" + strings.ToLower(rand.Text())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		_ = conn.Close(ctx)
	})
	u.Path = "/" + name
	return u.String()
}
