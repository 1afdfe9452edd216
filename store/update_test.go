package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

func TestUpdateAgentChanges(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "eliza",
			"personality", map[string]any{"tone": "warm", "traits": []string{"kind", "curious"}},
			"bio", []string{"<b>born</b> & raised"}, "modelSettings", json.RawMessage(`{"temperature":0.70}`))

		clock.add(time.Second)
		same := map[string]json.RawMessage{
			"personality":   json.RawMessage(`{ "traits": ["kind","curious"],  "tone":"warm" }`),
			"bio":           json.RawMessage(`["\u003cb\u003eborn\u003c/b\u003e \u0026 raised"]`),
			"modelSettings": json.RawMessage(`{"temperature": 0.70}`),
			"name":          json.RawMessage(`"eliza"`),
		}
		active := domain.StatusActive
		u, changes, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, same, &active, domain.AnyVersion)
		mustOK(t, err)
		if len(changes) != 0 || changes == nil {
			t.Errorf("unchanged values reported as changes: %#v", changes)
		}
		if !u.UpdatedAt.Equal(a.UpdatedAt) {
			t.Errorf("updatedAt moved to %v without a change", u.UpdatedAt)
		}
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		if !got.UpdatedAt.Equal(a.UpdatedAt) {
			t.Errorf("stored updatedAt moved to %v without a change", got.UpdatedAt)
		}

		clock.add(time.Second)
		inactive := domain.StatusInactive
		u, changes, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t,
			"name", "Eliza II", "model", "gpt-4o", "lore", []string{"new"}, "bio", []string{"<b>born</b> & raised"},
			"deleteProtection", true), &inactive, domain.AnyVersion)

		mustOK(t, err)
		if fmt.Sprint(changes) != "[deleteProtection lore model name status]" {
			t.Errorf("changes = %v", changes)
		}
		if !u.UpdatedAt.Equal(clock.now()) || u.Name != "Eliza II" || u.Model != "gpt-4o" ||
			!u.DeleteProtection || u.Status != domain.StatusInactive || !u.CreatedAt.Equal(a.CreatedAt) {
			t.Errorf("updated agent = %+v", u)
		}
		got, err = s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		if got.Name != "Eliza II" || got.Status != domain.StatusInactive || !got.DeleteProtection ||
			string(got.Fields["lore"]) != `["new"]` || string(got.Fields["personality"]) != string(a.Fields["personality"]) ||
			!got.UpdatedAt.Equal(clock.now()) {
			t.Errorf("stored agent = %+v", got)
		}
		list, _, err := s.Agents().ListAgents(ctx, acct.ID, domain.ListQuery{SortBy: domain.SortName})
		mustOK(t, err)
		if list[0].Name != "Eliza II" {
			t.Errorf("name column not derived on update: %q", list[0].Name)
		}
		_, changes, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, nil, &inactive, domain.AnyVersion)
		mustOK(t, err)
		if len(changes) != 0 {
			t.Errorf("same status reported as a change: %v", changes)
		}
	})
}

func TestUpdateAgentRejects(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "eliza")
		bogus := domain.Status("sleeping")
		_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, nil, &bogus, domain.AnyVersion)
		wantErr(t, err, domain.ErrInvalid)
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "name", ""), nil, domain.AnyVersion)
		wantErr(t, err, domain.ErrInvalid)
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, map[string]json.RawMessage{"bio": json.RawMessage(`[`)}, nil, domain.AnyVersion)
		wantErr(t, err, domain.ErrInvalid)
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		if got.Name != "eliza" {
			t.Errorf("rejected update was stored: %+v", got)
		}
	})
}

// Concurrent updates of one agent, each of its own member, lose none of
// each other's changes: an update whose read was overtaken starts over.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "eliza")
		members := []string{"bio", "lore", "topics", "adjectives", "postExamples", "system"}
		const rounds = 8
		var wg sync.WaitGroup
		for _, m := range members {
			wg.Go(func() {
				for r := range rounds {
					value := fmt.Sprintf(`["%s %d"]`, m, r)
					if m == "system" {
						value = fmt.Sprintf(`"%s %d"`, m, r)
					}
					_, changes, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, map[string]json.RawMessage{m: json.RawMessage(value)}, nil, domain.AnyVersion)
					if err != nil || len(changes) != 1 {
						t.Errorf("update %s round %d: changes %v, %v", m, r, changes, err)
					}
				}
			})
		}
		wg.Wait()
		got, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
		mustOK(t, err)
		for _, m := range members {
			want := fmt.Sprintf(`["%s %d"]`, m, rounds-1)
			if m == "system" {
				want = fmt.Sprintf(`"%s %d"`, m, rounds-1)
			}
			if string(got.Fields[m]) != want {
				t.Errorf("%s = %s, want %s", m, got.Fields[m], want)
			}
		}
		if want := int64(1 + len(members)*rounds); got.Version != want {
			t.Errorf("version %d after %d changes, want %d", got.Version, len(members)*rounds, want)
		}
	})
}
