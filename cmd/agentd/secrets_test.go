package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
)

// newSecretKey returns a fresh key as `openssl rand -base64 32` prints it.
func newSecretKey(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// openWithKey opens db with key (none for "").
func openWithKey(t testing.TB, db, key string) *store.Store {
	t.Helper()
	box, err := parseSecretKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return storetest.Open(t, db, store.WithSecretBox(box))
}

// secretAgent stores an agent holding one secret and returns its id.
func secretAgent(t testing.TB, st *store.Store, account, value string) string {
	t.Helper()
	acct, err := st.Accounts().AccountByName(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Agents().CreateAgent(context.Background(), domain.Agent{AccountID: acct.ID, Fields: map[string]json.RawMessage{
		"name": json.RawMessage(`"a"`), "settings": json.RawMessage(`{"secrets":{"K":"` + value + `"}}`)}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func TestSecretKeyConfig(t *testing.T) {
	t.Parallel()
	key := newSecretKey(t)
	c, err := loadConfig(t, map[string]string{secretKeyEnv: key})
	if err != nil || c.SecretBox == nil {
		t.Fatalf("valid key: %v", err)
	}
	if c, err := loadConfig(t, nil); err != nil || c.SecretBox != nil {
		t.Errorf("no key: box %v, err %v", c.SecretBox, err)
	}
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	for _, bad := range []string{"not-base64-at-all!", short} {
		_, err := loadConfig(t, nil, "--secret-key", bad)
		if err == nil || !strings.Contains(err.Error(), secretKeyEnv) || strings.Contains(err.Error(), bad) {
			t.Errorf("key %q: error %v, want one naming %s without the key", bad, err, secretKeyEnv)
		}
	}
	r := agentd(t, map[string]string{secretKeyEnv: key}, "help", "serve")
	if strings.Contains(r.stdout, key) {
		t.Error("help shows the key")
	}
}

func TestSecretsRotate(t *testing.T) {
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "acme")
	oldKey, newKey := newSecretKey(t), newSecretKey(t)
	st := openWithKey(t, db, oldKey)
	id := secretAgent(t, st, "acme", "rotate-me")
	_ = st.Close()

	env := map[string]string{secretKeyEnv: newKey}
	if r := agentd(t, env, "secrets", "rotate", "--db", db); r.code() != exitError || !strings.Contains(r.err.Error(), id) {
		t.Errorf("without --old: exit %d, %v; want a failure naming %s", r.code(), r.err, id)
	}
	r := agentd(t, env, "secrets", "rotate", "--old", oldKey, "--db", db)
	if r.err != nil {
		t.Fatalf("rotate: %v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "1 agents") {
		t.Errorf("stderr %q", r.stderr)
	}
	st = openWithKey(t, db, newKey)
	acct, _ := st.Accounts().AccountByName(context.Background(), "acme")
	a, err := st.Agents().GetAgent(context.Background(), acct.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if secrets, err := st.Agents().Secrets(a); err != nil || secrets.String("K") != "rotate-me" {
		t.Errorf("after rotate: %v, %v", secrets, err)
	}

	for name, r := range map[string]cliResult{
		"no current key": agentd(t, nil, "secrets", "rotate", "--old", oldKey, "--db", db),
		"bad old key":    agentd(t, env, "secrets", "rotate", "--old", "short", "--db", db),
	} {
		if r.code() != exitUsage {
			t.Errorf("%s: exit %d, %v", name, r.code(), r.err)
		}
	}
}
