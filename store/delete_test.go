package store

import (
	"context"
	"testing"

	"github.com/agentd/agentd/domain"
)

func TestDeleteProtection(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "keeper", "deleteProtection", true)
		if !a.DeleteProtection {
			t.Fatal("deleteProtection not derived on create")
		}
		got, err := s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		wantErr(t, err, domain.ErrDeleteProtected)
		if got.ID != a.ID || got.Name != "keeper" {
			t.Errorf("protected delete returned %+v", got)
		}
		if _, err := s.Agents().GetAgent(ctx, acct.ID, a.ID); err != nil {
			t.Fatalf("protected agent gone: %v", err)
		}
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "deleteProtection", false), nil, domain.AnyVersion)
		mustOK(t, err)
		got, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		mustOK(t, err)
		if got.ID != a.ID || got.Name != "keeper" || got.Fields["name"] == nil {
			t.Errorf("deleted agent = %+v", got)
		}
		_, err = s.Agents().GetAgent(ctx, acct.ID, a.ID)
		wantErr(t, err, domain.ErrNotFound)
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		wantErr(t, err, domain.ErrNotFound)
	})
}

func TestDeleteCascades(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "chatty")
		b := mustAgent(t, s, acct.ID, "bystander")
		for _, key := range []string{"user:u1", "room:r1"} {
			for _, id := range []string{a.ID, b.ID} {
				_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, id, ref(key), domain.Message{Text: "hi", UserID: "u1"}, domain.Message{Text: "hello"})
				mustOK(t, err)
			}
		}
		_, err := s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		mustOK(t, err)
		for _, key := range []string{"user:u1", "room:r1"} {
			h, err := s.Conversations().History(ctx, acct.ID, a.ID, ref(key), 10)
			mustOK(t, err)
			if len(h) != 0 {
				t.Errorf("history of %s survived: %v", key, h)
			}
			h, err = s.Conversations().History(ctx, acct.ID, b.ID, ref(key), 10)
			mustOK(t, err)
			if len(h) != 2 {
				t.Errorf("other agent's history of %s: %d messages, want 2", key, len(h))
			}
		}
		var convs, msgs int64
		mustOK(t, s.r.Model(&conversationRow{}).Count(&convs).Error)
		mustOK(t, s.r.Model(&messageRow{}).Count(&msgs).Error)
		if convs != 2 || msgs != 4 {
			t.Errorf("left %d conversations and %d messages, want 2 and 4", convs, msgs)
		}
		_, _, err = s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref("user:u1"), domain.Message{Text: "hi"}, domain.Message{Text: "hello"})
		wantErr(t, err, domain.ErrNotFound)
	})
}

// TestForeignKeysCascade checks the schema itself: deleting an agent row
// behind the store's back still removes its conversations and messages.
func TestForeignKeysCascade(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "chatty")
		_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref("user:u1"), domain.Message{Text: "q"}, domain.Message{Text: "r"})
		mustOK(t, err)
		mustOK(t, s.w.Exec("DELETE FROM agents WHERE id = ?", a.ID).Error)
		var convs, msgs int64
		mustOK(t, s.r.Model(&conversationRow{}).Count(&convs).Error)
		mustOK(t, s.r.Model(&messageRow{}).Count(&msgs).Error)
		if convs != 0 || msgs != 0 {
			t.Errorf("cascade left %d conversations and %d messages", convs, msgs)
		}
	})
}
