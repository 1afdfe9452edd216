package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store/storetest/pgtest"
	"gorm.io/gorm"
)

// t0 is the start of every fake clock.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// fakeClock is a settable clock for a Store under test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock makes s use a fake clock starting at t0.
func withClock(s *Store) *fakeClock {
	c := &fakeClock{t: t0}
	s.now = c.now
	return c
}

// newSQLite opens a store on a fresh SQLite file.
func newSQLite(t testing.TB) *Store {
	t.Helper()
	return openSQLiteAt(t, filepath.Join(t.TempDir(), "agentd.db"))
}

// openSQLiteAt opens a store on the SQLite file path, closed at cleanup.
func openSQLiteAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newPostgres opens a store on a fresh PostgreSQL database, dropped at cleanup.
func newPostgres(t testing.TB) *Store {
	t.Helper()
	dsn := pgtest.DSN(t)
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// backends runs fn against SQLite and PostgreSQL, each in a fresh database.
func backends(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, newSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, newPostgres(t))
	})
}

// mustAccount creates an account called name.
func mustAccount(t testing.TB, s *Store, name string) domain.Account {
	t.Helper()
	a, err := s.Accounts().CreateAccount(context.Background(), domain.Account{Name: name})
	if err != nil {
		t.Fatalf("create account %s: %v", name, err)
	}
	return a
}

// fields builds agent fields from Go values.
func fields(t testing.TB, kv ...any) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		b, err := json.Marshal(kv[i+1])
		if err != nil {
			t.Fatal(err)
		}
		out[kv[i].(string)] = b
	}
	return out
}

// mustAgent creates an agent named name for the account, without quota.
func mustAgent(t testing.TB, s *Store, accountID, name string, kv ...any) domain.Agent {
	t.Helper()
	f := fields(t, append([]any{"name", name, "modelProvider", "openai", "model", "gpt-4o-mini"}, kv...)...)
	a, err := s.Agents().CreateAgent(context.Background(), domain.Agent{AccountID: accountID, Fields: f}, -1)
	if err != nil {
		t.Fatalf("create agent %s: %v", name, err)
	}
	return a
}

// wantErr fails unless err matches target and is a store error.
func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
	if !strings.HasPrefix(err.Error(), "store: ") {
		t.Errorf("error %q lacks the store prefix", err)
	}
	for _, ge := range []error{gorm.ErrRecordNotFound, gorm.ErrDuplicatedKey, gorm.ErrForeignKeyViolated} {
		if errors.Is(err, ge) {
			t.Errorf("error %v exposes gorm error %v", err, ge)
		}
	}
}

// mustOK fails on a non-nil error.
func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ref names a conversation as "room:<id>", "user:<id>" or "" for none.
func ref(key string) domain.ConversationRef {
	if room, ok := strings.CutPrefix(key, "room:"); ok {
		return domain.ConversationRef{RoomID: room}
	}
	user, _ := strings.CutPrefix(key, "user:")
	return domain.ConversationRef{UserID: user}
}
