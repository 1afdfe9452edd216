package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/secretbox"
)

// newBox returns a Box of a fresh random key.
func newBox(t testing.TB) *secretbox.Box {
	t.Helper()
	return boxOf(t, newKey())
}

// newKey returns a random secret key.
func newKey() []byte {
	key := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(key)
	return key
}

// boxOf returns a Box over keys, the first the newest.
func boxOf(t testing.TB, keys ...[]byte) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(keys...)
	mustOK(t, err)
	return b
}

// rawAgents returns every column of every agent row as the database holds it.
func rawAgents(t testing.TB, s *Store) string {
	t.Helper()
	var rows []map[string]any
	mustOK(t, s.w.Raw("SELECT * FROM agents").Scan(&rows).Error)
	return fmt.Sprint(rows)
}

// secretAgent creates an agent whose settings hold the given secrets.
func secretAgent(t testing.TB, s *Store, accountID, name string, secrets map[string]any) domain.Agent {
	t.Helper()
	return mustAgent(t, s, accountID, name, "settings", map[string]any{"secrets": secrets, "voice": map[string]any{"model": "v"}})
}

// wantSecret fails unless Secrets(a) gives name the value want.
func wantSecret(t testing.TB, s *Store, a domain.Agent, name, want string) {
	t.Helper()
	got, err := s.Agents().Secrets(a)
	mustOK(t, err)
	if got.String(name) != want {
		t.Errorf("secret %s = %q, want %q", name, got.String(name), want)
	}
}

// wantSealed fails unless the database holds a sealed value and neither it
// nor a, an agent as read from the store, holds any of values in clear.
func wantSealed(t testing.TB, s *Store, a domain.Agent, values ...string) {
	t.Helper()
	raw := rawAgents(t, s)
	for _, v := range values {
		if strings.Contains(raw, v) || strings.Contains(string(a.Fields["settings"]), v) {
			t.Errorf("%s stored or returned in clear", v)
		}
	}
	if !strings.Contains(raw, secretbox.Prefix) {
		t.Errorf("no sealed value in %s", raw)
	}
}

// mcpSettings are settings holding secrets and the MCP server docs with
// headers.
func mcpSettings(secrets, headers map[string]any) map[string]any {
	return map[string]any{"secrets": secrets, "mcp": map[string]any{"servers": map[string]any{
		"docs": map[string]any{"type": "http", "url": "https://docs.example/mcp", "headers": headers}}}}
}

// mcpAgent creates an agent whose settings are mcpSettings(secrets, headers).
func mcpAgent(t testing.TB, s *Store, accountID, name string, secrets, headers map[string]any) domain.Agent {
	t.Helper()
	return mustAgent(t, s, accountID, name, "settings", mcpSettings(secrets, headers))
}

// docsHeader is the secret name of header of the MCP server docs.
func docsHeader(header string) string { return domain.HeaderSecretName("docs", header) }

func TestSecretsEncryptedAtRest(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.box = newBox(t)
		acct := mustAccount(t, s, "acme")
		a := secretAgent(t, s, acct.ID, "a", map[string]any{"OPENAI_API_KEY": "sk-created-1", "CONFIG": map[string]any{"pin": "pin-created-2"}})
		_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "settings", map[string]any{
			"secrets": map[string]any{"OPENAI_API_KEY": domain.SecretMask, "CONFIG": domain.SecretMask, "DISCORD_TOKEN": "tok-updated-3"}}), nil, domain.AnyVersion)

		mustOK(t, err)
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		wantSealed(t, s, got, "sk-created-1", "pin-created-2", "tok-updated-3")
		wantSecret(t, s, got, "OPENAI_API_KEY", "sk-created-1")
		wantSecret(t, s, got, "DISCORD_TOKEN", "tok-updated-3")
		sec, _ := s.Agents().Secrets(got)
		if string(sec["CONFIG"]) != `{"pin":"pin-created-2"}` {
			t.Errorf("CONFIG = %s", sec["CONFIG"])
		}
	})
}

func TestSQLiteFileHoldsNoSecret(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, filepath.Join(dir, "agentd.db"), WithSecretBox(newBox(t)))
	mustOK(t, err)
	acct := mustAccount(t, s, "acme")
	a := secretAgent(t, s, acct.ID, "a", map[string]any{"OPENAI_API_KEY": "sk-in-the-file"})
	_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "name", "b"), nil, domain.AnyVersion)
	mustOK(t, err)
	mustOK(t, s.Close())
	files, err := os.ReadDir(dir)
	mustOK(t, err)
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		mustOK(t, err)
		all = append(all, b...)
	}
	if !bytes.Contains(all, []byte(`"b"`)) {
		t.Fatal("the agent is not in the files read")
	}
	if bytes.Contains(all, []byte("sk-in-the-file")) {
		t.Error("the database file holds the secret in clear")
	}
}

func TestSecretsUnchangedValueIsNoChange(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		s.box = newBox(t)
		acct := mustAccount(t, s, "acme")
		a := secretAgent(t, s, acct.ID, "a", map[string]any{"K": "v1"})
		_, changes, err := s.Agents().UpdateAgent(context.Background(), acct.ID, a.ID, fields(t,
			"settings", map[string]any{"secrets": map[string]any{"K": "v1"}, "voice": map[string]any{"model": "v"}}), nil, domain.AnyVersion)

		mustOK(t, err)
		if len(changes) != 0 {
			t.Errorf("resending the same secret changed %v", changes)
		}
	})
}

func TestSecretWrittenBeforeKeyIsEncryptedOnNextWrite(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := secretAgent(t, s, acct.ID, "a", map[string]any{"K": "plain-before-key"})
		if !strings.Contains(rawAgents(t, s), "plain-before-key") {
			t.Fatal("without a key the secret should be stored as it is")
		}
		s.box = newBox(t)
		_, changes, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "bio", []string{"b"}), nil, domain.AnyVersion)
		mustOK(t, err)
		if fmt.Sprint(changes) != "[bio]" {
			t.Errorf("changes %v", changes)
		}
		if strings.Contains(rawAgents(t, s), "plain-before-key") {
			t.Error("the secret is still in clear after a write")
		}
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		wantSecret(t, s, got, "K", "plain-before-key")
	})
}

func TestWrongKeyFailsOnlyThatAgentsSecrets(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		first := newBox(t)
		s.box = first
		acct := mustAccount(t, s, "acme")
		sealed := secretAgent(t, s, acct.ID, "sealed", map[string]any{"K": "v-sealed"})
		s.box = newBox(t)
		other := secretAgent(t, s, acct.ID, "other", map[string]any{"K": "v-other"})

		_, err := s.Agents().Secrets(sealed)
		wantErr(t, err, domain.ErrSecretUnreadable)
		if strings.Contains(err.Error(), "v-sealed") || !strings.Contains(err.Error(), "K") {
			t.Errorf("error %q: want the secret's name, never its value", err)
		}
		wantSecret(t, s, other, "K", "v-other")
		if _, n, err := s.Agents().ListAgents(ctx, acct.ID, domain.ListQuery{}); err != nil || n != 2 {
			t.Fatalf("list: %d, %v", n, err)
		}
		u, _, err := s.Agents().UpdateAgent(ctx, acct.ID, sealed.ID, fields(t,
			"name", "renamed", "settings", map[string]any{"secrets": map[string]any{"K": domain.SecretMask}}), nil, domain.AnyVersion)

		mustOK(t, err)
		s.box = first
		wantSecret(t, s, u, "K", "v-sealed")
	})
}

func TestMaskWithoutStoredSecretIsRefused(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		_, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", "a",
			"settings", map[string]any{"secrets": map[string]any{"NEW": domain.SecretMask}})}, -1)
		wantField(t, err, "settings.secrets.NEW")
		a := secretAgent(t, s, acct.ID, "a", map[string]any{"K": "kept"})
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t,
			"settings", map[string]any{"secrets": map[string]any{"K": domain.SecretMask, "NEW": domain.SecretMask}}), nil, domain.AnyVersion)

		wantField(t, err, "settings.secrets.NEW")
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t,
			"settings", map[string]any{"secrets": map[string]any{"K": "enc:v1:AAAA"}}), nil, domain.AnyVersion)

		wantField(t, err, "settings.secrets.K")
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		wantSecret(t, s, got, "K", "kept")
	})
}

func TestMaskKeepsTheValueStoredAtUpdateTime(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.box = newBox(t)
		acct := mustAccount(t, s, "acme")
		a := secretAgent(t, s, acct.ID, "a", map[string]any{"K": "old", "L": "l"})
		_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "settings", map[string]any{"secrets": map[string]any{"K": "new", "L": "l"}}), nil, domain.AnyVersion)
		mustOK(t, err)
		u, changes, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t,
			"settings", map[string]any{"secrets": map[string]any{"K": domain.SecretMask, "L": domain.SecretMask}, "x": map[string]any{}}), nil, domain.AnyVersion)

		mustOK(t, err)
		if fmt.Sprint(changes) != "[settings]" {
			t.Errorf("changes %v", changes)
		}
		wantSecret(t, s, u, "K", "new")
		wantSecret(t, s, u, "L", "l")
	})
}

func TestRotateSecrets(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		plain := secretAgent(t, s, acct.ID, "plain", map[string]any{"K": "v-plain"})
		old := newBox(t)
		s.box = old
		sealed := secretAgent(t, s, acct.ID, "sealed", map[string]any{"K": "v-old"})
		s.box = newBox(t)
		lost := secretAgent(t, s, acct.ID, "lost", map[string]any{"K": "v-lost"})
		lostKey := s.box
		mustAgent(t, s, acct.ID, "none")

		s.box = newBox(t) // the new current key; lost's key is neither this one nor old
		res, err := s.Agents().RotateSecrets(ctx, old)
		mustOK(t, err)
		if res.Agents != 2 || fmt.Sprint(res.Unreadable) != fmt.Sprint([]string{lost.ID}) {
			t.Errorf("rotate = %+v, want 2 agents and %s unreadable", res, lost.ID)
		}
		for _, c := range []struct{ id, want string }{{plain.ID, "v-plain"}, {sealed.ID, "v-old"}} {
			got, err := s.Agents().GetAgent(ctx, acct.ID, c.id)
			mustOK(t, err)
			wantSecret(t, s, got, "K", c.want)
		}
		if raw := rawAgents(t, s); strings.Contains(raw, "v-plain") {
			t.Error("rotate left a plain secret")
		}
		s.box = lostKey
		got, err := s.Agents().GetAgent(ctx, acct.ID, lost.ID)
		mustOK(t, err)
		wantSecret(t, s, got, "K", "v-lost")

		s.box = nil
		if _, err := s.Agents().RotateSecrets(ctx, old); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("rotate without a key: %v", err)
		}
	})
}

// wantField fails unless err is an ErrInvalid naming field.
func wantField(t testing.TB, err error, field string) {
	t.Helper()
	wantErr(t, err, domain.ErrInvalid)
	var fe *domain.Error
	if !errors.As(err, &fe) || fe.Field != field {
		t.Errorf("error %v, want an invalid field %s", err, field)
	}
}

// TestRollingKeyChange: replicas restarted one by one through the key
// lists old → old,new → new,old → new read each other's writes at every
// step, including a write by a replica a step behind (security review D6).
func TestRollingKeyChange(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		oldKey, newKey := newKey(), newKey()
		box := func(keys ...[]byte) *secretbox.Box { return boxOf(t, keys...) }
		acct := mustAccount(t, s, "acme")
		s.box = box(oldKey)
		a := mustAgent(t, s, acct.ID, "rolled", "settings", map[string]any{"secrets": map[string]any{"K": "v0"}})
		steps := [][]*secretbox.Box{
			{box(oldKey), box(oldKey, newKey)},
			{box(oldKey, newKey), box(newKey, oldKey)},
			{box(newKey, oldKey), box(newKey)},
		}
		for i, step := range steps {
			behind, ahead := step[0], step[1]
			for j, writer := range []*secretbox.Box{behind, ahead} {
				if i == 2 && j == 0 {
					continue // the last step starts after the rotation: no replica writes with the old key then
				}
				s.box = writer
				value := fmt.Sprintf("v%d%d", i, j)
				_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "settings", map[string]any{"secrets": map[string]any{"K": value}}), nil, domain.AnyVersion)
				mustOK(t, err)
				for _, reader := range step {
					s.box = reader
					got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
					mustOK(t, err)
					secrets, err := s.Agents().Secrets(got)
					if err != nil || secrets.String("K") != value {
						t.Fatalf("step %d, write %d: read %q, %v", i, j, secrets.String("K"), err)
					}
				}
			}
			if i == 1 { // everything under the newest key before the old one goes
				s.box = ahead
				_, err := s.Agents().RotateSecrets(ctx, nil)
				mustOK(t, err)
			}
		}
	})
}

// TestSecretsAreBoundToTheirName: a sealed value copied to another secret
// name, settings.secrets member or MCP header, does not open (security
// review D7).
func TestSecretsAreBoundToTheirName(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.box = newBox(t)
		acct := mustAccount(t, s, "acme")
		a := mcpAgent(t, s, acct.ID, "bound", map[string]any{"A": "alpha", "B": "beta"}, map[string]any{"H": "eta"})
		for _, swap := range [][2]string{{"A", "B"}, {"A", docsHeader("H")}} {
			swapStored(t, s, a.ID, swap[0], swap[1])
			got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
			mustOK(t, err)
			if _, err := s.Agents().Secrets(got); !errors.Is(err, domain.ErrSecretUnreadable) {
				t.Errorf("swapped %v opened: %v", swap, err)
			}
			swapStored(t, s, a.ID, swap[0], swap[1])
		}
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		wantSecret(t, s, got, docsHeader("H"), "eta")
	})
}

// swapStored swaps the stored values of agent id's secrets x and y in its
// row, as one with access to the database could.
func swapStored(t testing.TB, s *Store, id, x, y string) {
	t.Helper()
	row, err := lockAgent(s.w, "id = ?", id)
	mustOK(t, err)
	stored, err := decodeFields(row.Fields)
	mustOK(t, err)
	values := map[string]json.RawMessage{}
	mustOK(t, eachSecret(stored, func(name string, v json.RawMessage) error {
		values[name] = v
		return nil
	}))
	swapped, err := mapSecrets(stored, func(name string, v json.RawMessage) (json.RawMessage, error) {
		switch name {
		case x:
			return values[y], nil
		case y:
			return values[x], nil
		}
		return v, nil
	})
	mustOK(t, err)
	enc, err := encodeJSON(swapped)
	mustOK(t, err)
	mustOK(t, s.w.Model(&agentRow{}).Where("id = ?", id).Update("fields", string(enc)).Error)
}

func TestMCPHeadersEncryptedAtRest(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.box = newBox(t)
		acct := mustAccount(t, s, "acme")
		a := mcpAgent(t, s, acct.ID, "a", map[string]any{"K": "k-created-1"}, map[string]any{"Authorization": "Bearer hdr-created-2"})
		_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "settings", mcpSettings(map[string]any{"K": domain.SecretMask},
			map[string]any{"Authorization": domain.SecretMask, "X-Api-Key": "hdr-updated-3"})), nil, domain.AnyVersion)

		mustOK(t, err)
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		wantSealed(t, s, got, "k-created-1", "hdr-created-2", "hdr-updated-3")
		if !strings.Contains(string(got.Fields["settings"]), `"url":"https://docs.example/mcp"`) {
			t.Errorf("the server's other members changed: %s", got.Fields["settings"])
		}
		secrets, err := s.Agents().Secrets(got)
		mustOK(t, err)
		want := []string{"K", docsHeader("Authorization"), docsHeader("X-Api-Key")}
		if names := slices.Sorted(maps.Keys(secrets)); !slices.Equal(names, want) {
			t.Errorf("secret names %v, want %v", names, want)
		}
		wantSecret(t, s, got, "K", "k-created-1")
		wantSecret(t, s, got, docsHeader("Authorization"), "Bearer hdr-created-2")
		wantSecret(t, s, got, docsHeader("X-Api-Key"), "hdr-updated-3")
	})
}

func TestMCPHeaderMaskKeepsValueAndNewValueIsSealed(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.box = newBox(t)
		acct := mustAccount(t, s, "acme")
		a := mcpAgent(t, s, acct.ID, "a", map[string]any{}, map[string]any{"Authorization": "Bearer old"})
		u, changes, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "settings", mcpSettings(map[string]any{},
			map[string]any{"Authorization": domain.SecretMask})), nil, domain.AnyVersion)

		mustOK(t, err)
		if len(changes) != 0 {
			t.Errorf("sending the mask back changed %v", changes)
		}
		wantSecret(t, s, u, docsHeader("Authorization"), "Bearer old")
		u, changes, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "settings", mcpSettings(map[string]any{},
			map[string]any{"Authorization": "Bearer new"})), nil, domain.AnyVersion)

		mustOK(t, err)
		if fmt.Sprint(changes) != "[settings]" {
			t.Errorf("changes %v", changes)
		}
		wantSealed(t, s, u, "Bearer old", "Bearer new")
		wantSecret(t, s, u, docsHeader("Authorization"), "Bearer new")
	})
}

// TestHeaderMaskWithoutStoredHeaderIsRefused: the mask keeps only the value
// stored at its own path, never a same-named secret or another server's
// header.
func TestHeaderMaskWithoutStoredHeaderIsRefused(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		const path = "settings.mcp.servers.docs.headers."
		_, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", "a",
			"settings", mcpSettings(map[string]any{}, map[string]any{"Authorization": domain.SecretMask}))}, -1)
		wantField(t, err, path+"Authorization")
		a := mcpAgent(t, s, acct.ID, "a", map[string]any{"Authorization": "a-secret"}, map[string]any{"X": "kept"})
		for _, c := range []struct {
			settings map[string]any
			field    string
		}{
			{mcpSettings(map[string]any{}, map[string]any{"X": domain.SecretMask, "Authorization": domain.SecretMask}), path + "Authorization"},
			{mcpSettings(map[string]any{}, map[string]any{"X": "enc:v1:AAAA"}), path + "X"},
			{map[string]any{"mcp": map[string]any{"servers": map[string]any{
				"docs":  map[string]any{"type": "http", "headers": map[string]any{"X": domain.SecretMask}},
				"other": map[string]any{"type": "http", "headers": map[string]any{"X": domain.SecretMask}}}}},
				"settings.mcp.servers.other.headers.X"},
		} {
			_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "settings", c.settings), nil, domain.AnyVersion)
			wantField(t, err, c.field)
		}
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		wantSecret(t, s, got, docsHeader("X"), "kept")
	})
}

func TestRotateSecretsReencryptsHeaders(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		plain := mcpAgent(t, s, acct.ID, "plain", map[string]any{}, map[string]any{"H": "h-plain"})
		old := newBox(t)
		s.box = old
		sealed := mcpAgent(t, s, acct.ID, "sealed", map[string]any{}, map[string]any{"H": "h-old"})
		s.box = newBox(t) // the only key from now on: the values must open under it alone
		res, err := s.Agents().RotateSecrets(ctx, old)
		mustOK(t, err)
		if res.Agents != 2 || len(res.Unreadable) != 0 {
			t.Errorf("rotate = %+v, want 2 agents", res)
		}
		for _, c := range []struct{ id, want string }{{plain.ID, "h-plain"}, {sealed.ID, "h-old"}} {
			got, err := s.Agents().GetAgent(ctx, acct.ID, c.id)
			mustOK(t, err)
			wantSealed(t, s, got, c.want)
			wantSecret(t, s, got, docsHeader("H"), c.want)
		}
	})
}

// TestMaskSecrets: every secret is masked, names and other members kept;
// members not of a group's shape are left alone, as the store leaves them
// unsealed.
func TestMaskSecrets(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"secrets":{"A":"a","B":{"pin":1}},"x":"<b>"}`, `{"secrets":{"A":"********","B":"********"},"x":"<b>"}`},
		{`{"mcp":{"servers":{"d":{"headers":{"H":"h"},"type":"http"},"e":{"type":"sse"}}}}`,
			`{"mcp":{"servers":{"d":{"headers":{"H":"********"},"type":"http"},"e":{"type":"sse"}}}}`},
		{`{"mcp":{"servers":{"a":{"headers":"x"},"b":null,"c":{"headers":{"H":"h"}},"d":[]}}}`,
			`{"mcp":{"servers":{"a":{"headers":"x"},"b":null,"c":{"headers":{"H":"********"}},"d":[]}}}`},
		{`{"mcp":"x","secrets":"y"}`, `{"mcp":"x","secrets":"y"}`},
		{`{"mcp":{"servers":[{"headers":{"H":"h"}}]}}`, `{"mcp":{"servers":[{"headers":{"H":"h"}}]}}`},
		{`{"discord":{"headers":{"H":"h"}},"secrets":null}`, `{"discord":{"headers":{"H":"h"}},"secrets":null}`},
		{`"settings"`, `"settings"`},
	} {
		got, err := MaskSecrets(json.RawMessage(c.in))
		mustOK(t, err)
		if string(got) != c.want {
			t.Errorf("MaskSecrets(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestStripSecrets: every secret group is absent, not masked, and every
// other member of settings is kept, including those not of the expected
// shape.
func TestStripSecrets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"discord":{"channels":["a"]},"mcp":{"servers":{"docs":{"headers":{"Authorization":"enc:v1:AAAA"},"url":"https://d.example/mcp"},"two":{"url":"https://t.example"}}},"secrets":{"K":"enc:v1:BBBB"}}`,
			`{"discord":{"channels":["a"]},"mcp":{"servers":{"docs":{"url":"https://d.example/mcp"},"two":{"url":"https://t.example"}}}}`},
		{`{"discord":{"channels":["a"]}}`, `{"discord":{"channels":["a"]}}`},
		{`{"mcp":"not an object","secrets":{}}`, `{"mcp":"not an object"}`},
		{`{"mcp":{"servers":{"odd":7}}}`, `{"mcp":{"servers":{"odd":7}}}`},
	} {
		got, err := StripSecrets(json.RawMessage(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("StripSecrets(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
