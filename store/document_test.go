package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
)

// TestRenderDocumentMasksSecrets: Get Agent shows every secret, MCP header
// values included, as the mask, keeping the names and the other members.
func TestRenderDocumentMasksSecrets(t *testing.T) {
	settings := `{"mcp":{"servers":{"docs":{"headers":{"Authorization":"enc:v1:AAAA","X-Team":"t"},"type":"http","url":"https://docs.example/mcp"}}},"secrets":{"K":"enc:v1:BBBB"}}`
	doc, err := renderDocument(domain.Agent{ID: "agent_1", Status: domain.StatusActive,
		Fields: agent.Document{"name": json.RawMessage(`"a"`), "settings": json.RawMessage(settings)}})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Settings json.RawMessage }
	if err := json.Unmarshal([]byte(doc), &got); err != nil {
		t.Fatal(err)
	}
	want := `{"mcp":{"servers":{"docs":{"headers":{"Authorization":"********","X-Team":"********"},"type":"http","url":"https://docs.example/mcp"}}},"secrets":{"K":"********"}}`
	if string(got.Settings) != want {
		t.Errorf("settings %s\nwant     %s", got.Settings, want)
	}
}

// TestAgentDocumentFollowsChanges: the stored document is what rendering
// the agent afresh gives, after a create, an update, a move into error
// and back; the metrics are counted at the read.
func TestAgentDocumentFollowsChanges(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "doc", "bio", []string{"one"})
		check := func(step string) {
			t.Helper()
			got, err := s.Agents().GetAgentDocument(ctx, acct.ID, a.ID)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			fresh, err := s.Agents().GetAgent(ctx, acct.ID, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			want, err := renderDocument(fresh)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Body) != want || got.Version != fresh.Version || got.Metrics != fresh.Metrics {
				t.Errorf("%s: document %s v%d %+v\nwant %s v%d %+v", step, got.Body, got.Version, got.Metrics,
					want, fresh.Version, fresh.Metrics)
			}
		}
		check("created")
		clock.add(time.Second)
		if _, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "bio", []string{"two"}), nil, domain.AnyVersion); err != nil {
			t.Fatal(err)
		}
		check("updated")
		if _, err := s.Agents().MarkAgentError(ctx, acct.ID, a.ID, "provider down", clock.now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		clock.add(time.Second)
		check("in error")
		if err := s.Agents().MarkAgentRecovered(ctx, acct.ID, a.ID); err != nil {
			t.Fatal(err)
		}
		check("recovered")
		inactive := domain.StatusInactive
		if _, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, nil, &inactive, domain.AnyVersion); err != nil {
			t.Fatal(err)
		}
		check("inactive")
		if _, err := s.Agents().GetAgentDocument(ctx, "acct_other", a.ID); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another account's agent: %v", err)
		}
	})
}

// TestAgentDocumentRenderedWhenStale: a row stored before documents were
// (or by a build rendering them otherwise) is rendered when read, and the
// document stored.
func TestAgentDocumentRenderedWhenStale(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "old", "bio", []string{"one"})
		err := s.w.Model(&agentRow{}).Where("id = ?", a.ID).
			Updates(map[string]any{"document": "", "document_rev": 0}).Error
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Agents().GetAgentDocument(ctx, acct.ID, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		var row agentRow
		if err := s.w.Take(&row, "id = ?", a.ID).Error; err != nil {
			t.Fatal(err)
		}
		if row.DocumentRev != documentRev || row.Document != string(got.Body) || !strings.Contains(row.Document, `"bio":["one"]`) {
			t.Errorf("stored document %q rev %d, answered %s", row.Document, row.DocumentRev, got.Body)
		}
	})
}
