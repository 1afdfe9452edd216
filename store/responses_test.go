package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestResponses: a response is kept beside its run, read back whole by its
// account only, kept once per run, deleted, and deleted with its agent.
func TestResponses(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		other := mustAccount(t, s, "other")
		a := mustAgent(t, s, acct.ID, "responder")
		run, _, err := s.Runs().AcceptRun(ctx, domain.Run{AccountID: acct.ID, AgentID: a.ID, Source: domain.SourceOpenAI,
			Text: "hi", MessageID: "msg_1", Strategy: domain.StrategyEnqueue})
		mustOK(t, err)
		want := domain.Response{RunID: run.ID, AccountID: acct.ID, AgentID: a.ID, PreviousRunID: "run_before", UserID: "u1",
			Instructions: "Be brief.", Metadata: map[string]string{"k": "v"}, Background: true,
			Input:     []domain.ResponseItem{{Role: "developer", Text: "Be kind."}, {Role: "user", Text: "hi"}},
			CreatedAt: time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)}
		responses := s.Responses()
		mustOK(t, responses.CreateResponse(ctx, want))
		again := want
		again.UserID = "someone else"
		mustOK(t, responses.CreateResponse(ctx, again))
		got, err := responses.GetResponse(ctx, acct.ID, run.ID)
		mustOK(t, err)
		got.CreatedAt = got.CreatedAt.UTC()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read %+v, want %+v", got, want)
		}
		_, err = responses.GetResponse(ctx, other.ID, run.ID)
		wantErr(t, err, domain.ErrResponseNotFound)
		wantErr(t, responses.DeleteResponse(ctx, other.ID, run.ID), domain.ErrResponseNotFound)
		mustOK(t, responses.DeleteResponse(ctx, acct.ID, run.ID))
		_, err = responses.GetResponse(ctx, acct.ID, run.ID)
		wantErr(t, err, domain.ErrResponseNotFound)
		wantErr(t, responses.DeleteResponse(ctx, acct.ID, run.ID), domain.ErrResponseNotFound)

		mustOK(t, responses.CreateResponse(ctx, want))
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		mustOK(t, err)
		_, err = responses.GetResponse(ctx, acct.ID, run.ID)
		wantErr(t, err, domain.ErrResponseNotFound)
	})
}
