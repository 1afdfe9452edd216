package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestRunOfWaitingCall: a button's call id finds the run waiting for it,
// of its agent only, until that call is decided; another agent's call,
// an unknown one, a decided one and one of a run that went on find none.
func TestRunOfWaitingCall(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a, other := mustAgent(t, s, acct.ID, "asker"), mustAgent(t, s, acct.ID, "other")
		runs := s.Runs()
		wait := func(agent domain.Agent, text string, calls ...string) domain.Run {
			t.Helper()
			r := mustQueue(t, s, agent, "", text)
			_, ok, err := runs.StartRun(ctx, r.ID)
			mustOK(t, err)
			if !ok {
				t.Fatal("run not started")
			}
			step := domain.RunStep{}
			for _, id := range calls {
				step.Calls = append(step.Calls, domain.StepCall{Waits: true,
					Record: domain.ToolCall{ID: id, Name: "pay", Arguments: json.RawMessage(`{}`)}})
			}
			r, err = runs.AwaitDecision(ctx, r.ID, []domain.RunStep{step}, time.Now().Add(time.Hour))
			mustOK(t, err)
			return r
		}
		first := wait(a, "one", "call_a1", "call_a2")
		wait(other, "two", "call_b1")

		got, err := runs.RunOfWaitingCall(ctx, a.ID, "call_a2")
		mustOK(t, err)
		if got.ID != first.ID {
			t.Errorf("run of call_a2 = %s, want %s", got.ID, first.ID)
		}
		for _, id := range []string{"call_b1", "call_zz", "call_a", "call%", ""} {
			if _, err := runs.RunOfWaitingCall(ctx, a.ID, id); err == nil {
				t.Errorf("call %q found a run of the agent's", id)
			} else {
				wantErr(t, err, domain.ErrRunNotFound)
			}
		}
		decide := func(call string) {
			t.Helper()
			_, err := runs.DecideRun(ctx, acct.ID, a.ID, first.ID, []domain.Decision{{CallID: call, Approve: true, By: "telegram:1"}}, false)
			mustOK(t, err)
		}
		decide("call_a1")
		if _, err := runs.RunOfWaitingCall(ctx, a.ID, "call_a1"); err == nil {
			t.Error("a decided call still finds its run")
		}
		decide("call_a2") // the last: the run goes on
		if _, err := runs.RunOfWaitingCall(ctx, a.ID, "call_a2"); err == nil {
			t.Error("a call of a run no longer waiting still finds it")
		}
	})
}

// TestContacts: a private writer is found by username (any case, with or
// without '@'), the newest holder of a name wins, a username moves with
// its user, and contacts go with their agent.
func TestContacts(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "bot")
		c := s.Connections()
		find := func(name string) string {
			t.Helper()
			id, err := c.ContactByUsername(ctx, a.ID, "telegram", name)
			if err != nil {
				wantErr(t, err, domain.ErrNotFound)
			}
			return id
		}
		mustOK(t, c.RememberContact(ctx, a.ID, "telegram", "42", "Ada"))
		if got := find("@ada"); got != "42" {
			t.Errorf("@ada = %q, want 42", got)
		}
		if got, err := c.ContactByUsername(ctx, a.ID, "discord", "ada"); err == nil {
			t.Errorf("another platform's contact found: %q", got)
		}
		mustOK(t, c.RememberContact(ctx, a.ID, "telegram", "42", "ada_new"))
		mustOK(t, c.RememberContact(ctx, a.ID, "telegram", "43", "ADA"))
		if got, renamed := find("ada"), find("ada_new"); got != "43" || renamed != "42" {
			t.Errorf("ada = %q (want 43), ada_new = %q (want 42)", got, renamed)
		}
		if _, err := s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if got := find("ada"); got != "" {
			t.Errorf("a deleted agent's contact found: %q", got)
		}
		wantErr(t, c.RememberContact(ctx, a.ID, "telegram", "44", "eve"), domain.ErrNotFound)
	})
}
