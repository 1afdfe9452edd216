package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store/storetest/pgtest"
)

func TestOpenRejectsEmptyDSN(t *testing.T) {
	_, err := Open(context.Background(), " ")
	wantErr(t, err, domain.ErrInvalid)
}

func TestOpenTwiceMigratesIdempotently(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.db")
		s := openSQLiteAt(t, path)
		mustAccount(t, s, "one")
		mustOK(t, s.Close())
		s2 := openSQLiteAt(t, path)
		if _, err := s2.Accounts().AccountByName(context.Background(), "one"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.DSN(t)
		for i := 0; i < 2; i++ {
			s, err := Open(context.Background(), dsn)
			if err != nil {
				t.Fatalf("open #%d: %v", i+1, err)
			}
			mustOK(t, s.Ping(context.Background()))
			mustOK(t, s.Close())
		}
	})
}

func TestOpenFileURIAndMemory(t *testing.T) {
	for _, dsn := range []string{
		"file:" + filepath.Join(t.TempDir(), "u.db") + "?cache=private",
		":memory:",
	} {
		s, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatalf("open %s: %v", dsn, err)
		}
		mustOK(t, s.Ping(context.Background()))
		a := mustAccount(t, s, "acme")
		mustAgent(t, s, a.ID, "x")
		if _, err := s.Accounts().AccountByName(context.Background(), "acme"); err != nil {
			t.Fatalf("%s: read after write: %v", dsn, err)
		}
		mustOK(t, s.Close())
	}
}

func TestReaderIsReadOnly(t *testing.T) {
	s := newSQLite(t)
	if s.r == s.w {
		t.Fatal("sqlite file store has no separate reader pool")
	}
	err := s.r.Exec("INSERT INTO accounts (id, name, tier, rpm, endpoint_multiplier, agent_quota, created_at) VALUES ('a','b','standard',0,0,1,'2026-01-01')").Error
	if err == nil {
		t.Fatal("write through the reader pool succeeded")
	}
}

func TestCanceledContext(t *testing.T) {
	s := newSQLite(t)
	acct := mustAccount(t, s, "acme")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Agents().GetAgent(ctx, acct.ID, "agent_x")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("read: %v, want context.Canceled", err)
	}
	_, err = s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", "a")}, 5)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("write: %v, want context.Canceled", err)
	}
}

// The pool settings reach PostgreSQL: statement_timeout on every
// connection, and the pool's size.
func TestPostgresPool(t *testing.T) {
	dsn := pgtest.DSN(t)
	p := Pool{MaxOpen: 3, MaxIdle: 2, MaxLifetime: time.Minute, MaxIdleTime: time.Minute, StatementTimeout: 1500 * time.Millisecond}
	s, err := Open(context.Background(), dsn, WithPool(p))
	mustOK(t, err)
	defer s.Close()
	var timeout string
	mustOK(t, s.r.Raw("SHOW statement_timeout").Scan(&timeout).Error)
	if timeout != "1500ms" {
		t.Errorf("statement_timeout = %q, want 1500ms", timeout)
	}
	sqlDB, _ := s.w.DB()
	if got := sqlDB.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("max open = %d, want 3", got)
	}
	err = s.w.Exec("SELECT pg_sleep(3)").Error
	if err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Errorf("a 3 s statement: %v, want it cancelled by the statement timeout", err)
	}
}

// TestNewIDOfAnyTime: an id is made for any time, however far outside the
// milliseconds a ULID counts (since 1970, for about 8,900 years): such a
// time takes the nearest one it can carry rather than panicking.
func TestNewIDOfAnyTime(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC),
		{},
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if id := newID("conv_", at); len(id) != len("conv_")+26 {
			t.Errorf("id of %v: %q", at, id)
		}
	}
	if a, b := newID("x_", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)), newID("x_", time.Unix(0, 0)); a[:12] != b[:12] {
		t.Errorf("a time before 1970 is not the epoch's: %s, %s", a, b)
	}
}
