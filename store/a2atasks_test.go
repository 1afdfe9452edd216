package store

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// TestA2ATasksLiveForTheirRetention: a task is made working, finished with
// its reply, read by its agent's account only, and gone once it has not
// changed for A2ATaskRetention (deleted by the next task made).
func TestA2ATasksLiveForTheirRetention(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		other := mustAccount(t, s, "globex")
		a := mustAgent(t, s, acct.ID, "host")

		task, err := s.Tasks().CreateA2ATask(ctx, acct.ID, domain.A2ATask{AgentID: a.ID, ContextID: "trip", RequestMessageID: "m1", RequestText: "hi"})
		mustOK(t, err)
		if task.State != domain.A2ATaskWorking || task.ID == "" || !task.CreatedAt.Equal(t0) {
			t.Fatalf("created = %+v", task)
		}
		_, err = s.Tasks().CreateA2ATask(ctx, other.ID, domain.A2ATask{AgentID: a.ID, ContextID: "trip"})
		wantErr(t, err, domain.ErrNotFound)

		clock.add(time.Second)
		done, err := s.Tasks().FinishA2ATask(ctx, acct.ID, domain.A2ATask{ID: task.ID, AgentID: a.ID, State: domain.A2ATaskCompleted,
			ReplyMessageID: "msg_1", ReplyText: "hello"})
		mustOK(t, err)
		if done.State != domain.A2ATaskCompleted || done.ReplyText != "hello" || done.RequestText != "hi" || !done.UpdatedAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("finished = %+v", done)
		}
		got, err := s.Tasks().GetA2ATask(ctx, acct.ID, a.ID, task.ID)
		mustOK(t, err)
		if got != done {
			t.Errorf("read %+v, want %+v", got, done)
		}
		_, err = s.Tasks().GetA2ATask(ctx, other.ID, a.ID, task.ID)
		wantErr(t, err, domain.ErrNotFound)
		_, err = s.Tasks().GetA2ATask(ctx, acct.ID, a.ID, "task_missing")
		wantErr(t, err, domain.ErrA2ATaskNotFound)

		clock.add(domain.A2ATaskRetention)
		if _, err := s.Tasks().GetA2ATask(ctx, acct.ID, a.ID, task.ID); err != nil {
			t.Fatalf("a task exactly %s old: %v", domain.A2ATaskRetention, err)
		}
		clock.add(time.Millisecond)
		_, err = s.Tasks().GetA2ATask(ctx, acct.ID, a.ID, task.ID)
		wantErr(t, err, domain.ErrA2ATaskNotFound)
		_, err = s.Tasks().CreateA2ATask(ctx, acct.ID, domain.A2ATask{AgentID: a.ID, ContextID: "trip"})
		mustOK(t, err)
		var rows int64
		mustOK(t, s.w.Model(&a2aTaskRow{}).Where("id = ?", task.ID).Count(&rows).Error)
		if rows != 0 {
			t.Error("an expired task outlived the next task made")
		}
	})
}

// TestA2ATasksGoWithTheirConversationAndAgent: forgetting an A2A room
// forgets the tasks of its context, and deleting the agent all of them.
func TestA2ATasksGoWithTheirConversationAndAgent(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "host")
		task := func(contextID string) string {
			t.Helper()
			task, err := s.Tasks().CreateA2ATask(ctx, acct.ID, domain.A2ATask{AgentID: a.ID, ContextID: contextID})
			mustOK(t, err)
			return task.ID
		}
		trip, other := task("trip"), task("other")
		_, convID, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, domain.ConversationRef{RoomID: domain.A2ARoom("trip")}, domain.Message{Text: "q"}, domain.Message{Text: "r"})
		mustOK(t, err)
		_, err = s.Conversations().DeleteConversation(ctx, acct.ID, a.ID, convID)
		mustOK(t, err)
		_, err = s.Tasks().GetA2ATask(ctx, acct.ID, a.ID, trip)
		wantErr(t, err, domain.ErrA2ATaskNotFound)
		_, err = s.Tasks().GetA2ATask(ctx, acct.ID, a.ID, other)
		mustOK(t, err)

		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		mustOK(t, err)
		var rows int64
		mustOK(t, s.w.Model(&a2aTaskRow{}).Count(&rows).Error)
		if rows != 0 {
			t.Errorf("%d tasks outlived their agent", rows)
		}
	})
}

// TestAbandonedA2ATasks: a working task renewed since the time asked about
// stays working; one not renewed since fails with the reason, once; a task
// that completed is left as it is, and renewing it changes nothing.
func TestAbandonedA2ATasks(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "host")
		task, err := s.Tasks().CreateA2ATask(ctx, acct.ID, domain.A2ATask{AgentID: a.ID, ContextID: "c", RequestMessageID: "m1", RequestText: "hi"})
		mustOK(t, err)
		clock.add(10 * time.Second)
		mustOK(t, s.Tasks().RenewA2ATask(ctx, a.ID, task.ID))

		got, err := s.Tasks().FailAbandonedA2ATask(ctx, acct.ID, a.ID, task.ID, t0.Add(5*time.Second), "gone")
		mustOK(t, err)
		if got.State != domain.A2ATaskWorking || !got.UpdatedAt.Equal(t0.Add(10*time.Second)) {
			t.Fatalf("a renewed task = %+v", got)
		}
		clock.add(30 * time.Second)
		got, err = s.Tasks().FailAbandonedA2ATask(ctx, acct.ID, a.ID, task.ID, t0.Add(20*time.Second), "gone")
		mustOK(t, err)
		if got.State != domain.A2ATaskFailed || got.Reason != "gone" || !got.UpdatedAt.Equal(t0.Add(40*time.Second)) {
			t.Fatalf("an abandoned task = %+v", got)
		}
		clock.add(time.Second)
		again, err := s.Tasks().FailAbandonedA2ATask(ctx, acct.ID, a.ID, task.ID, clock.now(), "other")
		mustOK(t, err)
		if again != got {
			t.Errorf("failed twice: %+v, was %+v", again, got)
		}

		done, err := s.Tasks().CreateA2ATask(ctx, acct.ID, domain.A2ATask{AgentID: a.ID, ContextID: "c", RequestMessageID: "m2", RequestText: "hi"})
		mustOK(t, err)
		done, err = s.Tasks().FinishA2ATask(ctx, acct.ID, domain.A2ATask{ID: done.ID, AgentID: a.ID, State: domain.A2ATaskCompleted, ReplyMessageID: "msg_2", ReplyText: "yo"})
		mustOK(t, err)
		clock.add(time.Minute)
		mustOK(t, s.Tasks().RenewA2ATask(ctx, a.ID, done.ID))
		got, err = s.Tasks().FailAbandonedA2ATask(ctx, acct.ID, a.ID, done.ID, clock.now(), "gone")
		mustOK(t, err)
		if got != done {
			t.Errorf("a completed task = %+v, want %+v", got, done)
		}
		_, err = s.Tasks().FailAbandonedA2ATask(ctx, "acct_other", a.ID, done.ID, clock.now(), "gone")
		wantErr(t, err, domain.ErrNotFound)
	})
}
