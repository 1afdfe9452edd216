package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// acceptRun accepts text as a run of agent a in conversation conv (""
// for none) under strategy, its reply's id made of the text.
func acceptRun(s *Store, a domain.Agent, conv, text string, strategy domain.Strategy) (domain.Run, []domain.Run, error) {
	return s.Runs().AcceptRun(context.Background(), domain.Run{AccountID: a.AccountID, AgentID: a.ID, ConversationID: conv,
		UserID: "ann", Source: domain.SourceAPI, Text: text, MessageID: "msg_" + text, Strategy: strategy})
}

// mustQueue is a run of text queued in conv as acceptRun makes it, under
// enqueue.
func mustQueue(t *testing.T, s *Store, a domain.Agent, conv, text string) domain.Run {
	t.Helper()
	r, _, err := acceptRun(s, a, conv, text, domain.StrategyEnqueue)
	mustOK(t, err)
	return r
}

// TestRunLanes: the runs of a conversation start one at a time in the
// order they were accepted, each strategy does what it says to the runs in
// the way, a run without a conversation waits for nobody, cancel ends a
// run once, and the runs go with their conversation.
func TestRunLanes(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "laner")
		conv, err := s.Conversations().OpenConversation(ctx, acct.ID, a.ID, domain.ConversationRef{UserID: "ann", Platform: "api"})
		mustOK(t, err)
		runs := s.Runs()
		start := func(r domain.Run) bool {
			t.Helper()
			_, ok, err := runs.StartRun(ctx, r.ID)
			mustOK(t, err)
			return ok
		}
		first, _, err := acceptRun(s, a, conv, "one", domain.StrategyEnqueue)
		mustOK(t, err)
		second, _, err := acceptRun(s, a, conv, "two", domain.StrategyEnqueue)
		mustOK(t, err)
		alone, _, err := acceptRun(s, a, "", "alone", domain.StrategyEnqueue)
		mustOK(t, err)
		if start(second) || !start(first) || start(second) || !start(alone) {
			t.Fatal("runs started out of their conversation's order")
		}
		_, _, err = acceptRun(s, a, conv, "three", domain.StrategyReject)
		var busy *domain.Error
		if !errors.As(err, &busy) || busy.Code != domain.CodeBusy || busy.RunID != first.ID {
			t.Fatalf("reject: %v, want busy naming %s", err, first.ID)
		}
		merged, stopped, err := acceptRun(s, a, conv, "more", domain.StrategyMerge)
		mustOK(t, err)
		if merged.ID != second.ID || merged.Text != "two\nmore" || len(stopped) != 0 {
			t.Fatalf("merge into the queued run: %+v, stopped %v", merged, stopped)
		}
		last, stopped, err := acceptRun(s, a, conv, "four", domain.StrategyInterrupt)
		mustOK(t, err)
		if len(stopped) != 2 || stopped[0].ID != first.ID || stopped[0].Status != domain.RunInterrupted || stopped[1].ID != second.ID {
			t.Fatalf("interrupt stopped %+v", stopped)
		}
		if !start(last) {
			t.Fatal("the interrupting run did not start at once")
		}
		done, err := runs.FinishRun(ctx, first.ID, domain.RunCompleted, &domain.Reply{Text: "late"}, "", "")
		mustOK(t, err)
		if done.Status != domain.RunInterrupted || done.Reply == nil || done.Reply.Text != "late" {
			t.Errorf("an interrupted run finishing keeps its status and takes its reply: %+v", done)
		}
		cancelled, err := runs.CancelRun(ctx, acct.ID, a.ID, last.ID)
		mustOK(t, err)
		if cancelled.Status != domain.RunCancelled || cancelled.FinishedAt.IsZero() {
			t.Errorf("cancelled = %+v", cancelled)
		}
		_, err = runs.CancelRun(ctx, acct.ID, a.ID, last.ID)
		var finished *domain.Error
		if !errors.As(err, &finished) || finished.Code != domain.CodeFinished || finished.Status != string(domain.RunCancelled) {
			t.Errorf("second cancel: %v", err)
		}
		wantErr(t, func() error { _, err := runs.GetRun(ctx, acct.ID, a.ID, "run_nope"); return err }(), domain.ErrRunNotFound)
		list, total, err := runs.ListRuns(ctx, acct.ID, domain.RunQuery{ConversationID: conv, Status: domain.RunInterrupted})
		mustOK(t, err)
		if total != 2 || len(list) != 2 || list[0].ID != second.ID {
			t.Errorf("interrupted runs of the conversation, newest first: %d %+v", total, list)
		}
		other := mustAccount(t, s, "other")
		if _, total, _ := runs.ListRuns(ctx, other.ID, domain.RunQuery{}); total != 0 {
			t.Errorf("another account sees %d runs", total)
		}
		_, err = s.Conversations().DeleteConversation(ctx, acct.ID, a.ID, conv)
		mustOK(t, err)
		if _, total, _ := runs.ListRuns(ctx, acct.ID, domain.RunQuery{}); total != 1 {
			t.Errorf("%d runs after the conversation was deleted, want the one without it", total)
		}
	})
}

// TestLostRunIsClaimed: a run whose holder stopped beating for longer
// than RunBeatTimeout is listed as lost and claimed by one caller, which
// counts a start; its conversation waits for it meanwhile; a run whose
// reply was stored ends completed when claimed; a third start without
// finishing fails it with RUN_ABANDONED, and the next run goes on.
func TestLostRunIsClaimed(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		runs := s.Runs()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "orphan")
		ref := domain.ConversationRef{UserID: "ann", Platform: "api"}
		conv, err := s.Conversations().OpenConversation(ctx, acct.ID, a.ID, ref)
		mustOK(t, err)
		silence := func(id string) {
			t.Helper()
			mustOK(t, s.w.Model(&runRow{}).Where("id = ?", id).Update("beat_at", s.now().Add(-2*RunBeatTimeout)).Error)
		}
		lost := mustQueue(t, s, a, conv, "lost")
		_, ok, err := runs.StartRun(ctx, lost.ID)
		mustOK(t, err)
		next := mustQueue(t, s, a, conv, "next")
		silence(lost.ID)
		ids, err := runs.LostRuns(ctx, 10)
		mustOK(t, err)
		if !ok || len(ids) != 1 || ids[0] != lost.ID {
			t.Fatalf("lost runs = %v, want [%s]", ids, lost.ID)
		}
		if _, started, _ := runs.StartRun(ctx, next.ID); started {
			t.Fatal("the next run started before the lost one was resumed")
		}
		if c, err := runs.ClaimRun(ctx, next.ID); err != nil || c.Claimed || c.Again <= 0 {
			t.Fatalf("claim of a run whose holder beats = %+v, %v", c, err)
		}
		c, err := runs.ClaimRun(ctx, lost.ID)
		mustOK(t, err)
		if !c.Claimed || c.Run.Attempts != 2 || c.Run.Status != domain.RunRunning {
			t.Fatalf("claim of the lost run = %+v", c)
		}
		if c, _ := runs.ClaimRun(ctx, lost.ID); c.Claimed {
			t.Fatal("a claimed run was claimed again")
		}
		silence(lost.ID)
		c, err = runs.ClaimRun(ctx, lost.ID)
		mustOK(t, err)
		silence(lost.ID)
		c, err = runs.ClaimRun(ctx, lost.ID)
		mustOK(t, err)
		if c.Claimed || c.Run.Status != domain.RunFailed || c.Run.ErrorCode != "RUN_ABANDONED" || c.Run.Attempts != 3 {
			t.Fatalf("a run lost after its third start = %+v", c.Run)
		}
		if _, started, err := runs.StartRun(ctx, next.ID); err != nil || !started {
			t.Fatalf("the next run after the abandoned one: %v, %v", started, err)
		}
		_, _, err = s.Conversations().SaveExchange(ctx, acct.ID, a.ID, ref, domain.Message{Text: "next"},
			domain.Message{ID: next.MessageID, Text: "the stored reply", Role: domain.RoleAssistant})
		mustOK(t, err)
		silence(next.ID)
		c, err = runs.ClaimRun(ctx, next.ID)
		mustOK(t, err)
		if c.Claimed || c.Run.Status != domain.RunCompleted || c.Run.Reply == nil || c.Run.Reply.Text != "the stored reply" {
			t.Fatalf("a lost run whose reply was stored = %+v", c)
		}
	})
}

// TestRunStepsKept: the steps stored while a run goes on are read with it.
func TestRunStepsKept(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "stepper")
		r := mustQueue(t, s, a, "", "q")
		steps := []domain.RunStep{{Text: "looking", Calls: []domain.StepCall{{ProviderID: "p1", Arguments: `{"x":1}`,
			Record: domain.ToolCall{ID: "call_1", Name: "lookup"}, Result: "42", Done: true}}}}
		mustOK(t, s.Runs().SaveRunSteps(ctx, r.ID, steps))
		got, err := s.Runs().GetRun(ctx, acct.ID, a.ID, r.ID)
		mustOK(t, err)
		if len(got.Steps) != 1 || got.Steps[0].Calls[0].Result != "42" || !got.Steps[0].Calls[0].Done || got.Steps[0].Calls[0].Record.ID != "call_1" {
			t.Errorf("steps = %+v", got.Steps)
		}
	})
}

// TestRunsKeptThirtyDays: an agent's runs that ended more than
// RunRetention ago go when it accepts its next run; newer ones stay.
func TestRunsKeptThirtyDays(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "keeper")
		old, recent := mustQueue(t, s, a, "", "old"), mustQueue(t, s, a, "", "recent")
		for _, r := range []domain.Run{old, recent} {
			_, err := s.Runs().CancelRun(ctx, acct.ID, a.ID, r.ID)
			mustOK(t, err)
		}
		past := s.now().Add(-RunRetention - time.Hour)
		mustOK(t, s.w.Model(&runRow{}).Where("id = ?", old.ID).Updates(map[string]any{"created_at": past, "finished_at": past}).Error)
		mustQueue(t, s, a, "", "next")
		wantErr(t, func() error { _, err := s.Runs().GetRun(ctx, acct.ID, a.ID, old.ID); return err }(), domain.ErrRunNotFound)
		if _, err := s.Runs().GetRun(ctx, acct.ID, a.ID, recent.ID); err != nil {
			t.Errorf("a recent run went: %v", err)
		}
	})
}

// TestRunJobsHook: AcceptRun calls the WithRunJobs hook in the
// transaction that stores the run (the hook sees and changes the row no
// other connection sees yet), with the time the run would be lost, for a
// new run only; a hook that fails fails the acceptance and leaves no run.
// ClaimRun calls it for the run it takes over, DecideRun for the run its
// last decision queues again, each with the time the run's new holder
// would be lost, and ReleaseRun for a run given up, due at once.
func TestRunJobsHook(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "hooked")
		update := "UPDATE runs SET room_id = 'hooked' WHERE id = ?"
		if s.postgres {
			update = "UPDATE runs SET room_id = 'hooked' WHERE id = $1"
		}
		type call struct {
			id string
			at time.Time
		}
		var calls []call
		fail := errors.New("no engine")
		var failWith error
		s.runJobs = func(ctx context.Context, tx *sql.Tx, runID string, at time.Time) error {
			calls = append(calls, call{runID, at})
			if failWith != nil {
				return failWith
			}
			res, err := tx.ExecContext(ctx, update, runID)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				t.Errorf("the hook's transaction updated %d rows (%v): it is not the one storing the run", n, err)
			}
			return nil
		}
		first := mustQueue(t, s, a, "conv_1", "one")
		if len(calls) != 1 || calls[0].id != first.ID || !calls[0].at.Equal(first.CreatedAt.Add(RunBeatTimeout)) {
			t.Fatalf("hook calls %+v, want one for %s at %v", calls, first.ID, first.CreatedAt.Add(RunBeatTimeout))
		}
		stored, err := s.Runs().GetRun(ctx, acct.ID, a.ID, first.ID)
		mustOK(t, err)
		if stored.RoomID != "hooked" {
			t.Errorf("what the hook wrote in the transaction was not committed: room %q", stored.RoomID)
		}
		second := mustQueue(t, s, a, "conv_1", "two")
		merged, _, err := acceptRun(s, a, "conv_1", "more", domain.StrategyMerge)
		mustOK(t, err)
		if merged.ID != second.ID || len(calls) != 2 {
			t.Fatalf("a merge into a queued run scheduled a job: %d calls, run %s", len(calls), merged.ID)
		}
		failWith = fail
		_, _, err = acceptRun(s, a, "conv_2", "lost", domain.StrategyEnqueue)
		if err == nil || !strings.Contains(err.Error(), fail.Error()) {
			t.Fatalf("accept with a failing hook: %v, want it to say %q", err, fail)
		}
		listed, total, err := s.Runs().ListRuns(ctx, acct.ID, domain.RunQuery{ConversationID: "conv_2"})
		mustOK(t, err)
		if total != 0 || len(listed) != 0 {
			t.Errorf("a run whose job failed to schedule was stored: %+v", listed)
		}
		failWith = nil

		calls = nil
		mustOK(t, s.w.Model(&runRow{}).Where("id = ?", first.ID).Update("beat_at", s.now().Add(-2*RunBeatTimeout)).Error)
		c, err := s.Runs().ClaimRun(ctx, first.ID)
		mustOK(t, err)
		if !c.Claimed || len(calls) != 1 || calls[0].id != first.ID || calls[0].at.Sub(s.now()) > RunBeatTimeout || calls[0].at.Sub(s.now()) < RunBeatTimeout-5*time.Second {
			t.Fatalf("claim %+v called the hook %+v, want once for %s a beat timeout from now", c, calls, first.ID)
		}

		calls = nil
		_, _, err = s.Runs().StartRun(ctx, first.ID)
		mustOK(t, err)
		steps := []domain.RunStep{{Calls: []domain.StepCall{{ProviderID: "p1", Arguments: "{}", Waits: true,
			Record: domain.ToolCall{ID: "call_1", Name: "get_price", Arguments: json.RawMessage("{}")}}}}}
		_, err = s.Runs().AwaitDecision(ctx, first.ID, steps, s.now().Add(time.Hour))
		mustOK(t, err)
		decided, err := s.Runs().DecideRun(ctx, acct.ID, a.ID, first.ID, []domain.Decision{{CallID: "call_1", Approve: true, By: "ann"}}, true)
		mustOK(t, err)
		if decided.Status != domain.RunQueued || len(calls) != 1 || calls[0].id != first.ID {
			t.Fatalf("decision left %s and called the hook %+v, want queued and once for %s", decided.Status, calls, first.ID)
		}

		calls = nil
		mustOK(t, s.Runs().ReleaseRun(ctx, first.ID))
		if len(calls) != 1 || calls[0].id != first.ID || calls[0].at.After(s.now()) {
			t.Fatalf("release called the hook %+v, want once for %s, due at once", calls, first.ID)
		}
		_, err = s.Runs().CancelRun(ctx, acct.ID, a.ID, first.ID)
		mustOK(t, err)
		mustOK(t, s.Runs().ReleaseRun(ctx, first.ID))
		if len(calls) != 1 {
			t.Errorf("releasing an ended run scheduled a job: %+v", calls)
		}
	})
}

// TestFinishExchangeEndsItsRun: a run accepted to start at once is
// running when first of its conversation and queued behind another; a
// reply stored with FinishExchange ends its run in the same write, with
// its reply, cost and run.completed after message.completed, as
// SaveExchange then FinishRun did; a run gone meanwhile leaves the
// exchange stored.
func TestFinishExchangeEndsItsRun(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		mustWebhookAll(t, s, acct.ID)
		a := mustAgent(t, s, acct.ID, "finisher")
		conv, err := s.Conversations().OpenConversation(ctx, acct.ID, a.ID, domain.ConversationRef{UserID: "ann", Platform: "api"})
		mustOK(t, err)
		accept := func(text string) domain.Run {
			t.Helper()
			r, _, err := s.Runs().AcceptRun(ctx, domain.Run{AccountID: a.AccountID, AgentID: a.ID, ConversationID: conv, UserID: "ann",
				Source: domain.SourceAPI, Text: text, MessageID: "msg_" + text, Strategy: domain.StrategyEnqueue, StartAtOnce: true})
			mustOK(t, err)
			return r
		}
		first, second := accept("one"), accept("two")
		if first.Status != domain.RunRunning || first.StartedAt.IsZero() || first.Attempts != 1 || second.Status != domain.RunQueued {
			t.Fatalf("accepted %s (started %v, %d attempts) and %s", first.Status, first.StartedAt, first.Attempts, second.Status)
		}
		if stored, err := s.Runs().GetRun(ctx, acct.ID, a.ID, first.ID); err != nil || stored.Status != domain.RunRunning || !stored.StartedAt.Equal(first.StartedAt) {
			t.Fatalf("stored %+v, %v", stored, err)
		}

		user := domain.Message{Text: "one", UserID: "ann"}
		reply := domain.Message{ID: first.MessageID, Text: "hi", PromptTokens: 10, CompletionTokens: 3, CostMicros: 42, RunID: first.ID}
		end := domain.RunEnd{Status: domain.RunCompleted, Reply: domain.Reply{RunID: first.ID, Text: "hi", AgentID: a.ID, UserID: "ann",
			Metadata: domain.ReplyMetadata{CostMicros: 42, Model: "m"}}}
		stored, run, err := s.Conversations().FinishExchange(ctx, acct.ID, a.ID, domain.ConversationRef{UserID: "ann"}, user, reply, end)
		mustOK(t, err)
		if run.Status != domain.RunCompleted || run.FinishedAt.IsZero() || run.CostMicros != 42 || run.InputTokens != 10 ||
			run.Reply == nil || run.Reply.MessageID != stored.ID || !run.Reply.CreatedAt.Equal(stored.CreatedAt) || run.Reply.Text != "hi" {
			t.Fatalf("run ended as %+v (reply %+v)", run, run.Reply)
		}
		if got, err := s.Runs().GetRun(ctx, acct.ID, a.ID, first.ID); err != nil || got.Status != domain.RunCompleted || got.Reply == nil {
			t.Fatalf("stored run %+v, %v", got, err)
		}
		var types []string
		mustOK(t, s.r.Model(&eventRow{}).Where("account_id = ? AND type <> ?", acct.ID, domain.EventAgentCreated).Order("id").Pluck("type", &types).Error)
		if strings.Join(types, ",") != "message.completed,run.completed" {
			t.Errorf("events %v", types)
		}

		if _, err := s.Conversations().DeleteConversation(ctx, acct.ID, a.ID, conv); err != nil {
			t.Fatal(err)
		}
		gone := domain.Message{ID: second.MessageID, Text: "late", RunID: second.ID}
		stored, run, err = s.Conversations().FinishExchange(ctx, acct.ID, a.ID, domain.ConversationRef{UserID: "ann"}, domain.Message{Text: "two"}, gone,
			domain.RunEnd{Status: domain.RunCompleted})
		if err != nil || run.ID != "" || stored.ID != second.MessageID {
			t.Errorf("a reply whose run is gone: %+v, run %+v, %v", stored, run, err)
		}
	})
}
