package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

func TestLeaseOneOwnerAtATime(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "Ada")

		la, ok, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "replica-a", 10*time.Second)
		mustOK(t, err)
		if !ok || la.Epoch != 1 || la.Cursor != "" {
			t.Fatalf("first acquire = %+v, %v; want epoch 1", la, ok)
		}
		if _, ok, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "replica-b", 10*time.Second); err != nil || ok {
			t.Fatalf("second owner acquired a held lease: ok=%v err=%v", ok, err)
		}
		mustOK(t, s.Connections().SaveCursor(ctx, la, "42"))

		clock.add(11 * time.Second) // replica-a stopped renewing
		lb, ok, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "replica-b", 10*time.Second)
		mustOK(t, err)
		if !ok || lb.Epoch != 2 || lb.Cursor != "42" {
			t.Fatalf("takeover = %+v, %v; want epoch 2 and cursor 42", lb, ok)
		}
		if held, err := s.Connections().RenewLeases(ctx, "replica-a", 10*time.Second); err != nil || len(held) != 0 {
			t.Fatalf("replica-a renewed %+v, %v; want none: its lease was taken over", held, err)
		}
		if held, err := s.Connections().RenewLeases(ctx, "replica-b", 10*time.Second); err != nil || len(held) != 1 || held[0].Epoch != 2 || held[0].AgentID != a.ID {
			t.Fatalf("replica-b renewed %+v, %v; want its lease of epoch 2", held, err)
		}
		wantErr(t, s.Connections().SaveCursor(ctx, la, "43"), domain.ErrLeaseLost)
		mustOK(t, s.Connections().SaveCursor(ctx, lb, "43"))

		mustOK(t, s.Connections().ReleaseLease(ctx, lb, domain.ConnDisconnected, "stopped"))
		if _, ok, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "replica-a", 10*time.Second); err != nil || !ok {
			t.Fatalf("released lease not acquired: ok=%v err=%v", ok, err)
		}
	})
}

func TestLeaseEndsWithItsAgent(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "Ada")
		l, _, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "r", time.Minute)
		mustOK(t, err)
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		mustOK(t, err)
		wantErr(t, s.Connections().SaveCursor(ctx, l, "1"), domain.ErrLeaseLost)
		_, _, err = s.Connections().AcquireLease(ctx, a.ID, "telegram", "r", time.Minute)
		wantErr(t, err, domain.ErrNotFound)
	})
}

func TestConnectionStateBotAndMessages(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "Ada")
		b := mustAgent(t, s, acct.ID, "Bob")
		la, _, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "r", time.Minute)
		mustOK(t, err)
		lb, _, err := s.Connections().AcquireLease(ctx, b.ID, "telegram", "r", time.Minute)
		mustOK(t, err)

		mustOK(t, s.Connections().ClaimBot(ctx, la, "777", "ada_bot"))
		wantErr(t, s.Connections().ClaimBot(ctx, lb, "777", "ada_bot"), domain.ErrBotInUse)
		mustOK(t, s.Connections().SetConnectionState(ctx, la, domain.ConnConnected, ""))
		mustOK(t, s.Connections().CountConnectionMessage(ctx, la, true))
		mustOK(t, s.Connections().CountConnectionMessage(ctx, la, false))

		conns, err := s.Connections().ListConnections(ctx, acct.ID, a.ID)
		mustOK(t, err)
		if len(conns) != 1 {
			t.Fatalf("connections = %+v", conns)
		}
		c := conns[0]
		if c.State != domain.ConnConnected || c.BotID != "777" || c.BotUsername != "ada_bot" || c.MessagesIn != 1 || c.MessagesOut != 1 || c.LastEventAt == nil {
			t.Fatalf("connection = %+v", c)
		}
	})
}

// A message taken is new once: taken again while pending or after it was
// finished it is not, and it stays in the inbox until finished, for the
// lease's next holder. Taking is bound to the lease, finishing is not.
func TestInboxTakesEachMessageOnce(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "Ada")
		la, _, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "replica-a", 10*time.Second)
		mustOK(t, err)
		at := clock.now()
		msg := func(id, chat string, i int) domain.InboxMessage {
			return domain.InboxMessage{ID: id, Chat: chat, Payload: []byte(`{"id":"` + id + `"}`), ReceivedAt: at.Add(time.Duration(i) * time.Microsecond)}
		}
		fresh, err := s.Connections().TakePlatformMessages(ctx, la, "7:2", []domain.InboxMessage{msg("c:2", "c", 0), msg("c:1", "c", 1)})
		mustOK(t, err)
		if len(fresh) != 2 {
			t.Fatalf("fresh = %+v; want both", fresh)
		}
		fresh, err = s.Connections().TakePlatformMessages(ctx, la, "", []domain.InboxMessage{msg("c:1", "c", 2), msg("c:3", "d", 3)})
		mustOK(t, err)
		if len(fresh) != 1 || fresh[0].ID != "c:3" {
			t.Fatalf("fresh = %+v; want c:3 alone", fresh)
		}
		first, err := s.Connections().FinishPlatformMessage(ctx, la, "c:2")
		mustOK(t, err)
		again, err := s.Connections().FinishPlatformMessage(ctx, la, "c:2")
		mustOK(t, err)
		if !first || again {
			t.Fatalf("finished %v then %v; want true then false", first, again)
		}
		clock.add(11 * time.Second)
		_, err = s.Connections().FinishPlatformMessage(ctx, la, "c:1")
		wantErr(t, err, domain.ErrLeaseLost)
		lb, ok, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "replica-b", 10*time.Second)
		if err != nil || !ok || lb.Cursor != "7:2" {
			t.Fatalf("takeover = %+v, %v, %v; want the cursor stored with the messages", lb, ok, err)
		}
		_, err = s.Connections().TakePlatformMessages(ctx, la, "", []domain.InboxMessage{msg("c:9", "c", 4)})
		wantErr(t, err, domain.ErrLeaseLost)
		_, err = s.Connections().PendingPlatformMessages(ctx, la)
		wantErr(t, err, domain.ErrLeaseLost)
		pending, err := s.Connections().PendingPlatformMessages(ctx, lb)
		mustOK(t, err)
		var ids []string
		for _, m := range pending {
			ids = append(ids, m.ID+"="+string(m.Payload))
		}
		if got := strings.Join(ids, " "); got != `c:1={"id":"c:1"} c:3={"id":"c:3"}` {
			t.Fatalf("pending = %s; want c:1 then c:3, in the order taken", got)
		}
		fresh, err = s.Connections().TakePlatformMessages(ctx, lb, "", []domain.InboxMessage{msg("c:2", "c", 5)})
		mustOK(t, err)
		if len(fresh) != 0 {
			t.Fatalf("a finished message was taken again: %+v", fresh)
		}
		clock.add(AnsweredFor + time.Hour)
		n, err := s.Connections().PruneAnsweredMessages(ctx, 100)
		mustOK(t, err)
		if n != 1 {
			t.Fatalf("pruned %d; want the one finished", n)
		}
	})
}

// Replicas count the live ones; a replica sees which connections others
// hold, and releases all of its own in one statement.
func TestReplicasAndFreeConnections(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a, b := mustAgent(t, s, acct.ID, "Ada"), mustAgent(t, s, acct.ID, "Bob")
		for _, owner := range []string{"r1", "r2"} {
			_, err := s.Connections().Heartbeat(ctx, owner, 10*time.Second)
			mustOK(t, err)
		}
		clock.add(11 * time.Second)
		n, err := s.Connections().Heartbeat(ctx, "r3", 10*time.Second)
		mustOK(t, err)
		if n != 1 {
			t.Fatalf("%d live replicas; want r3 alone", n)
		}
		_, err = s.Connections().Heartbeat(ctx, "r1", 10*time.Second)
		mustOK(t, err)
		mustOK(t, s.Connections().LeaveReplicas(ctx, "r3"))
		if n, err = s.Connections().Heartbeat(ctx, "r1", 10*time.Second); err != nil || n != 1 {
			t.Fatalf("%d live replicas, %v; want r1 alone", n, err)
		}
		la, _, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "r1", 10*time.Second)
		mustOK(t, err)
		_, _, err = s.Connections().AcquireLease(ctx, b.ID, "telegram", "r1", 10*time.Second)
		mustOK(t, err)
		mustOK(t, s.Connections().ReleaseLease(ctx, la, domain.ConnDisconnected, "stopped"))
		taken, err := s.Connections().LeasedElsewhere(ctx, "r2")
		mustOK(t, err)
		if len(taken) != 1 || taken[0] != (domain.ConnKey{AgentID: b.ID, Platform: "telegram"}) {
			t.Fatalf("leased elsewhere than r2 = %+v; want Bob's telegram alone", taken)
		}
		if taken, err = s.Connections().LeasedElsewhere(ctx, "r1"); err != nil || len(taken) != 0 {
			t.Fatalf("leased elsewhere than r1 = %+v, %v; want none: its own are its own", taken, err)
		}
		mustOK(t, s.Connections().ReleaseLeases(ctx, "r1"))
		if taken, err = s.Connections().LeasedElsewhere(ctx, "r2"); err != nil || len(taken) != 0 {
			t.Fatalf("leased after r1 released all = %+v, %v; want none", taken, err)
		}
	})
}

// A connection's state change reaches the account's webhooks through the
// outbox, once per change.
func TestConnectionStateChangesEmitEvents(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "bot")
		w, err := s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{string(domain.EventConnectionChanged)}, Enabled: true})
		mustOK(t, err)
		l, ok, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "replica-a", 10*time.Second)
		if err != nil || !ok {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		mustOK(t, s.Connections().SetConnectionState(ctx, l, domain.ConnConnected, ""))
		mustOK(t, s.Connections().SetConnectionState(ctx, l, domain.ConnConnected, "")) // no change, no event
		mustOK(t, s.Connections().ReleaseLease(ctx, l, domain.ConnDisconnected, "the agent is inactive"))
		ds, total, err := s.Webhooks().ListDeliveries(ctx, acct.ID, w.ID, domain.DeliveryQuery{})
		mustOK(t, err)
		if total != 2 || ds[0].Type != domain.EventConnectionChanged || ds[1].Type != domain.EventConnectionChanged {
			t.Errorf("deliveries: %d %+v", total, ds)
		}
	})
}

// Idle states are written once per change, with their event when the
// account has webhooks (row by row) and without one when it has none (many
// rows a statement), and never over a connection a live lease holds.
func TestSetIdleConnections(t *testing.T) {
	for _, hooked := range []bool{true, false} {
		t.Run(fmt.Sprintf("webhooks=%v", hooked), func(t *testing.T) {
			backends(t, func(t *testing.T, s *Store) { testSetIdleConnections(t, s, hooked) })
		})
	}
}

func testSetIdleConnections(t *testing.T, s *Store, hooked bool) {
	ctx := context.Background()
	acct := mustAccount(t, s, "acme")
	a := mustAgent(t, s, acct.ID, "idle")
	b := mustAgent(t, s, acct.ID, "running")
	var w domain.Webhook
	if hooked {
		var err error
		w, err = s.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{string(domain.EventConnectionChanged)}, Enabled: true})
		mustOK(t, err)
	}
	l, ok, err := s.Connections().AcquireLease(ctx, b.ID, "telegram", "replica-a", 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	mustOK(t, s.Connections().SetConnectionState(ctx, l, domain.ConnConnected, ""))
	idle := []domain.IdleConnection{
		{AgentID: a.ID, Platform: "telegram", State: domain.ConnDisabled, Reason: "TELEGRAM_BOT_TOKEN missing from settings.secrets"},
		{AgentID: a.ID, Platform: "discord", State: domain.ConnDisabled, Reason: "DISCORD_BOT_TOKEN missing from settings.secrets"},
		{AgentID: b.ID, Platform: "telegram", State: domain.ConnDisabled, Reason: "TELEGRAM_BOT_TOKEN missing from settings.secrets"},
		{AgentID: "agent_gone", Platform: "telegram", State: domain.ConnDisabled, Reason: "x"},
	}
	mustOK(t, s.Connections().SetIdleConnections(ctx, idle))
	first, err := s.Connections().ListConnections(ctx, acct.ID, a.ID)
	mustOK(t, err)
	withClock(s).add(time.Minute)
	mustOK(t, s.Connections().SetIdleConnections(ctx, idle)) // unchanged: nothing written
	again, err := s.Connections().ListConnections(ctx, acct.ID, a.ID)
	mustOK(t, err)
	if len(again) != 2 || !again[0].Since.Equal(first[0].Since) || !again[1].Since.Equal(first[1].Since) {
		t.Errorf("an unchanged idle state was written again: %+v, then %+v", first, again)
	}
	for _, c := range again {
		if c.State != domain.ConnDisabled || !strings.HasPrefix(c.Reason, strings.ToUpper(c.Platform)) {
			t.Errorf("%s: %s %q, want disabled with its own reason", c.Platform, c.State, c.Reason)
		}
	}
	running, err := s.Connections().ListConnections(ctx, acct.ID, b.ID)
	mustOK(t, err)
	if running[0].State != domain.ConnConnected {
		t.Errorf("the leased connection is %s; want it untouched", running[0].State)
	}
	if !hooked {
		return
	}
	_, total, err := s.Webhooks().ListDeliveries(ctx, acct.ID, w.ID, domain.DeliveryQuery{})
	mustOK(t, err)
	if total != 3 { // b connected, a's two disabled once each
		t.Errorf("%d connection.changed deliveries, want 3", total)
	}
}

// The supervisor pages through the versions and clients of every agent of
// the service by id, and reads whole the ones it needs.
func TestAgentVersionsChangedSincePages(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		other := mustAccount(t, s, "other")
		want := []string{mustAgent(t, s, acct.ID, "a").ID, mustAgent(t, s, other.ID, "b", "clients", []string{"telegram"}).ID,
			mustAgent(t, s, acct.ID, "c").ID}
		wantClients := map[string]string{want[1]: `["telegram"]`}
		var got []string
		for after := (domain.AgentVersion{}); ; {
			page, err := s.Agents().AgentVersionsChangedSince(ctx, time.Time{}, after, 2)
			mustOK(t, err)
			for _, a := range page {
				if a.Version != 1 || a.Clients != wantClients[a.ID] {
					t.Errorf("agent %s at version %d with clients %q, want 1 and %q", a.ID, a.Version, a.Clients, wantClients[a.ID])
				}
				got = append(got, a.ID)
			}
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("paged %v, want %v", got, want)
		}
		recent, err := s.Agents().AgentVersionsChangedSince(ctx, time.Now().Add(time.Hour), domain.AgentVersion{}, 10)
		mustOK(t, err)
		if len(recent) != 0 {
			t.Errorf("changed in the future: %d agents", len(recent))
		}
		// A window holds only what changed in it, the agent changed last
		// at its end.
		time.Sleep(2 * time.Millisecond)                     // past the creations' millisecond
		since := time.Now().UTC().Truncate(time.Millisecond) // the store's precision
		_, _, err = s.Agents().UpdateAgent(ctx, acct.ID, want[0], fields(t, "bio", []string{"changed"}), nil, domain.AnyVersion)
		mustOK(t, err)
		recent, err = s.Agents().AgentVersionsChangedSince(ctx, since, domain.AgentVersion{}, 10)
		mustOK(t, err)
		if len(recent) != 1 || recent[0].ID != want[0] || recent[0].Version != 2 {
			t.Errorf("changed since the update: %+v, want agent %s at version 2", recent, want[0])
		}
		all, err := s.Agents().AgentVersionsChangedSince(ctx, time.Time{}, domain.AgentVersion{}, 10)
		mustOK(t, err)
		if len(all) != 3 || all[2].ID != want[0] {
			t.Errorf("every agent by last change: %+v, want %s last", all, want[0])
		}
		whole, err := s.Agents().AgentsByID(ctx, []string{want[2], "missing", want[0]})
		mustOK(t, err)
		if len(whole) != 2 || whole[0].ID != want[0] || whole[1].ID != want[2] || whole[1].AccountID != acct.ID {
			t.Errorf("AgentsByID gave %+v, want agents %s and %s", whole, want[0], want[2])
		}
	})
}

// TestOrphanedConnectionShowsDisconnected: a connection left connected by
// a runner that died (its lease expired unreleased) is shown
// disconnected, saying why; a live one, or one in error, as stored.
func TestOrphanedConnectionShowsDisconnected(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "Ada")
		l, _, err := s.Connections().AcquireLease(ctx, a.ID, "telegram", "r", 15*time.Second)
		mustOK(t, err)
		mustOK(t, s.Connections().SetConnectionState(ctx, l, domain.ConnConnected, ""))
		state := func() domain.Connection {
			conns, err := s.Connections().ListConnections(ctx, acct.ID, a.ID)
			mustOK(t, err)
			return conns[0]
		}
		if c := state(); c.State != domain.ConnConnected {
			t.Fatalf("live connection shown %+v", c)
		}
		clock.add(16 * time.Second) // the replica died: no renewal, no release
		if c := state(); c.State != domain.ConnDisconnected || !strings.Contains(c.Reason, "No replica holds") {
			t.Errorf("orphaned connection shown %+v", c)
		}
		l, _, err = s.Connections().AcquireLease(ctx, a.ID, "telegram", "r2", 15*time.Second)
		mustOK(t, err)
		mustOK(t, s.Connections().SetConnectionState(ctx, l, domain.ConnError, "token rejected"))
		clock.add(time.Minute)
		if c := state(); c.State != domain.ConnError {
			t.Errorf("an error shown %+v", c)
		}
	})
}

// TestConnectionHolder: the holder of a connection is the owner of its
// live lease, none before the first lease or once it lapsed.
func TestConnectionHolder(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "held")
		conns := s.Connections()
		holder, err := conns.ConnectionHolder(ctx, a.ID, "telegram")
		mustOK(t, err)
		if holder != "" {
			t.Fatalf("holder before any lease: %q", holder)
		}
		_, ok, err := conns.AcquireLease(ctx, a.ID, "telegram", "replica-b", 15*time.Second)
		mustOK(t, err)
		if !ok {
			t.Fatal("lease not acquired")
		}
		if holder, err = conns.ConnectionHolder(ctx, a.ID, "telegram"); err != nil || holder != "replica-b" {
			t.Fatalf("holder %q, %v", holder, err)
		}
		if holder, err = conns.ConnectionHolder(ctx, a.ID, "discord"); err != nil || holder != "" {
			t.Fatalf("holder of another platform %q, %v", holder, err)
		}
		clock.add(16 * time.Second)
		if holder, err = conns.ConnectionHolder(ctx, a.ID, "telegram"); err != nil || holder != "" {
			t.Fatalf("holder of a lapsed lease %q, %v", holder, err)
		}
	})
}
