package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/domain"
)

func TestCreateAndGetAgent(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		withClock(s)
		acct := mustAccount(t, s, "acme")
		in := map[string]json.RawMessage{
			"name":          json.RawMessage(`"Eliza"`),
			"modelProvider": json.RawMessage(`"anthropic"`),
			"model":         json.RawMessage(`"claude-3-5-haiku-latest"`),
			"personality":   json.RawMessage(`{ "tone": "warm", "traits": ["kind"] }`),
			"modelSettings": json.RawMessage(`{"temperature": 0.70}`),
			"lore":          json.RawMessage(`["<b>bold</b> & co"]`),
			"status":        json.RawMessage(`"inactive"`),
		}
		a, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: in}, 10)
		mustOK(t, err)
		if !strings.HasPrefix(a.ID, "agent_") || a.ID != strings.ToLower(a.ID) {
			t.Errorf("id = %q", a.ID)
		}
		if a.Status != domain.StatusActive || a.Name != "Eliza" || a.ModelProvider != "anthropic" ||
			a.Model != "claude-3-5-haiku-latest" || a.DeleteProtection || a.AccountID != acct.ID {
			t.Errorf("agent = %+v", a)
		}
		if !a.CreatedAt.Equal(t0) || !a.UpdatedAt.Equal(t0) {
			t.Errorf("times %v %v", a.CreatedAt, a.UpdatedAt)
		}
		if _, ok := a.Fields["status"]; ok {
			t.Error("status stored as a field")
		}
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		want := map[string]string{
			"name": `"Eliza"`, "modelProvider": `"anthropic"`, "model": `"claude-3-5-haiku-latest"`,
			"personality": `{"tone":"warm","traits":["kind"]}`, "modelSettings": `{"temperature":0.70}`,
			"lore": `["<b>bold</b> & co"]`,
		}
		if len(got.Fields) != len(want) {
			t.Errorf("fields = %v", got.Fields)
		}
		for k, v := range want {
			if string(got.Fields[k]) != v {
				t.Errorf("field %s = %s, want %s", k, got.Fields[k], v)
			}
		}
		if got.Metrics != (domain.Metrics{Uptime: 100}) {
			t.Errorf("metrics of a new agent = %+v", got.Metrics)
		}
		got.Metrics = domain.Metrics{}
		if got.ID != a.ID || !got.CreatedAt.Equal(a.CreatedAt) || got.Status != a.Status || !got.RetryAt.IsZero() {
			t.Errorf("read %+v, created %+v", got, a)
		}
	})
}

func TestAgentOfAnotherAccountIsNotFound(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		mine := mustAccount(t, s, "mine")
		theirs := mustAccount(t, s, "theirs")
		a := mustAgent(t, s, theirs.ID, "secret")
		_, err := s.Agents().GetAgent(ctx, mine.ID, a.ID)
		wantErr(t, err, domain.ErrNotFound)
		_, _, err = s.Agents().UpdateAgent(ctx, mine.ID, a.ID, fields(t, "name", "x"), nil, domain.AnyVersion)
		wantErr(t, err, domain.ErrNotFound)
		_, err = s.Agents().DeleteAgent(ctx, mine.ID, a.ID, domain.AnyVersion)
		wantErr(t, err, domain.ErrNotFound)
		_, err = s.Agents().GetAgent(ctx, mine.ID, "agent_missing")
		wantErr(t, err, domain.ErrNotFound)
		if _, err := s.Agents().GetAgent(ctx, theirs.ID, a.ID); err != nil {
			t.Fatalf("owner cannot read its agent: %v", err)
		}
	})
}

func TestCreateAgentRejects(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		for name, f := range map[string]map[string]json.RawMessage{
			"no name":         fields(t, "model", "m"),
			"empty name":      fields(t, "name", ""),
			"name not string": fields(t, "name", 3),
			"bad json":        {"name": json.RawMessage(`"a`)},
			"bad protection":  fields(t, "name", "a", "deleteProtection", "yes"),
		} {
			_, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: f}, -1)
			if err == nil {
				t.Errorf("%s: accepted", name)
				continue
			}
			wantErr(t, err, domain.ErrInvalid)
		}
		_, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: "acct_missing", Fields: fields(t, "name", "a")}, 5)
		wantErr(t, err, domain.ErrNotFound)
	})
}
