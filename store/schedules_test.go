package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

// newSchedule is a schedule of agent a: daily at eight in Berlin unless
// change says otherwise.
func newSchedule(a domain.Agent, change func(*domain.Schedule)) domain.Schedule {
	sc := domain.Schedule{AccountID: a.AccountID, AgentID: a.ID, Cron: "0 8 * * *", Timezone: "Europe/Berlin",
		Text: "Morning digest", Enabled: true}
	if change != nil {
		change(&sc)
	}
	return sc
}

// TestScheduleLifecycle: a schedule is created with its defaults and next
// due time, refused with the member at fault named, read, listed, changed
// (the next due time computed again only when the timing changes, from
// now), deleted, and deleted with its agent.
func TestScheduleLifecycle(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s) // Saturday 21 November 2026, 10:00 UTC
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "clocked")
		schedules := s.Schedules()

		daily, err := schedules.CreateSchedule(ctx, newSchedule(a, nil))
		mustOK(t, err)
		if daily.UserID != domain.DefaultScheduleUser || !daily.NextRunAt.Equal(time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)) {
			t.Fatalf("created %+v", daily)
		}
		utcDefault, err := schedules.CreateSchedule(ctx, newSchedule(a, func(sc *domain.Schedule) { sc.Timezone = "" }))
		mustOK(t, err)
		if utcDefault.Timezone != "UTC" || !utcDefault.NextRunAt.Equal(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)) {
			t.Fatalf("default zone %+v", utcDefault)
		}
		refused := map[string]func(*domain.Schedule){
			"cron":            func(sc *domain.Schedule) { sc.At = t0.Add(time.Hour) },
			"timezone":        func(sc *domain.Schedule) { sc.Timezone = "Europe/Atlantis" },
			"text":            func(sc *domain.Schedule) { sc.Text = "  " },
			"userId":          func(sc *domain.Schedule) { sc.UserID = "a\nb" },
			"target.platform": func(sc *domain.Schedule) { sc.Target = &domain.ScheduleTarget{Platform: "twitter", ChatID: "1"} },
			"target.chatId":   func(sc *domain.Schedule) { sc.Target = &domain.ScheduleTarget{Platform: "telegram"} },
		}
		for field, change := range refused {
			_, err := schedules.CreateSchedule(ctx, newSchedule(a, change))
			wantField(t, err, field)
		}
		for expr, field := range map[string]string{"5-1 * * * *": "cron", "": "cron", "0 0 30 2 *": "cron"} {
			_, err := schedules.CreateSchedule(ctx, newSchedule(a, func(sc *domain.Schedule) { sc.Cron = expr }))
			wantField(t, err, field)
		}
		for _, at := range []time.Time{t0, t0.AddDate(1, 0, 1)} {
			_, err := schedules.CreateSchedule(ctx, newSchedule(a, func(sc *domain.Schedule) { sc.Cron, sc.At = "", at }))
			wantField(t, err, "at")
		}
		once, err := schedules.CreateSchedule(ctx, newSchedule(a, func(sc *domain.Schedule) {
			sc.Cron, sc.At, sc.UserID, sc.RoomID = "", t0.Add(90*time.Minute), "ann", "room-1"
			sc.Target = &domain.ScheduleTarget{Platform: "telegram", ChatID: "-100"}
		}))
		mustOK(t, err)
		if !once.NextRunAt.Equal(t0.Add(90*time.Minute)) || once.Conversation() != (domain.ConversationRef{RoomID: "room-1", UserID: "ann", Platform: "telegram"}) {
			t.Fatalf("one-off %+v", once)
		}

		got, err := schedules.GetSchedule(ctx, acct.ID, a.ID, once.ID)
		mustOK(t, err)
		if got.Target == nil || *got.Target != *once.Target || !got.At.Equal(once.At) || got.RoomID != "room-1" {
			t.Fatalf("read back %+v", got)
		}
		other := mustAccount(t, s, "other")
		_, err = schedules.GetSchedule(ctx, other.ID, a.ID, once.ID)
		wantErr(t, err, domain.ErrNotFound)
		_, err = schedules.GetSchedule(ctx, acct.ID, a.ID, "sch_missing")
		wantErr(t, err, domain.ErrScheduleNotFound)
		list, total, err := schedules.ListSchedules(ctx, acct.ID, a.ID, 2, 2)
		mustOK(t, err)
		if total != 3 || len(list) != 1 || list[0].ID != once.ID {
			t.Fatalf("page 2: %d %+v", total, list)
		}

		// Disabled, a week passes, enabled again: due next at the first
		// time after now, none of the missed ones.
		off, on := false, true
		got, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, daily.ID, domain.ScheduleChanges{Enabled: &off})
		mustOK(t, err)
		if !got.NextRunAt.IsZero() || got.Enabled {
			t.Fatalf("disabled %+v", got)
		}
		clock.add(7 * 24 * time.Hour)
		got, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, daily.ID, domain.ScheduleChanges{Enabled: &on})
		mustOK(t, err)
		if !got.NextRunAt.Equal(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)) || !got.UpdatedAt.Equal(clock.now()) {
			t.Fatalf("enabled again %+v", got)
		}
		// A change of the text keeps the due time; of the zone moves it.
		text, tokyo := "Evening digest", "Asia/Tokyo"
		got, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, daily.ID, domain.ScheduleChanges{Text: &text})
		mustOK(t, err)
		if got.Text != text || !got.NextRunAt.Equal(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)) {
			t.Fatalf("text changed %+v", got)
		}
		got, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, daily.ID, domain.ScheduleChanges{Timezone: &tokyo})
		mustOK(t, err)
		if !got.NextRunAt.Equal(time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC)) {
			t.Fatalf("Tokyo %+v", got)
		}
		// at switches a cron schedule to a one-off, cron back.
		at := clock.now().Add(time.Hour)
		got, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, daily.ID, domain.ScheduleChanges{At: &at})
		mustOK(t, err)
		if got.Cron != "" || !got.NextRunAt.Equal(at) {
			t.Fatalf("switched to a one-off %+v", got)
		}
		hourly := "@hourly"
		got, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, daily.ID, domain.ScheduleChanges{Cron: &hourly})
		mustOK(t, err)
		if !got.At.IsZero() || !got.NextRunAt.Equal(clock.now().Truncate(time.Hour).Add(time.Hour)) {
			t.Fatalf("switched to a cron %+v", got)
		}
		_, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, daily.ID, domain.ScheduleChanges{Cron: &hourly, At: &at})
		wantField(t, err, "cron")
		atlantis := "Europe/Atlantis"
		_, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, once.ID, domain.ScheduleChanges{Timezone: &atlantis})
		wantField(t, err, "timezone")
		empty, noTarget := "", (*domain.ScheduleTarget)(nil)
		got, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, once.ID, domain.ScheduleChanges{RoomID: &empty, Target: &noTarget})
		mustOK(t, err)
		if got.RoomID != "" || got.Target != nil {
			t.Fatalf("cleared %+v", got)
		}
		_, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, "sch_missing", domain.ScheduleChanges{Text: &text})
		wantErr(t, err, domain.ErrScheduleNotFound)

		mustOK(t, schedules.DeleteSchedule(ctx, acct.ID, a.ID, utcDefault.ID))
		wantErr(t, schedules.DeleteSchedule(ctx, acct.ID, a.ID, utcDefault.ID), domain.ErrScheduleNotFound)
		wantErr(t, schedules.DeleteSchedule(ctx, other.ID, a.ID, daily.ID), domain.ErrNotFound)
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		mustOK(t, err)
		var left int64
		mustOK(t, s.w.Model(&scheduleRow{}).Count(&left).Error)
		if left != 0 {
			t.Errorf("%d schedules outlived their agent", left)
		}
	})
}

// TestScheduleQuotas: an agent has at most ScheduleQuota schedules that
// count (one-offs whose time passed do not), and a user at most
// ReminderQuota reminders waiting, which count toward the agent's too.
func TestScheduleQuotas(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "busy")
		schedules := s.Schedules()
		reminder := func(user string) domain.Schedule {
			return newSchedule(a, func(sc *domain.Schedule) {
				sc.Cron, sc.At, sc.UserID, sc.Reminder = "", clock.now().Add(time.Minute), user, true
			})
		}
		for range domain.ReminderQuota {
			_, err := schedules.CreateSchedule(ctx, reminder("ann"))
			mustOK(t, err)
		}
		_, err := schedules.CreateSchedule(ctx, reminder("ann"))
		var quota *domain.Error
		if !errors.As(err, &quota) || quota.Code != domain.CodeQuotaExceeded || quota.Resource != "reminder" || quota.Used != domain.ReminderQuota {
			t.Fatalf("eleventh reminder: %v", err)
		}
		_, err = schedules.CreateSchedule(ctx, reminder("bob"))
		mustOK(t, err)
		for range domain.ScheduleQuota - domain.ReminderQuota - 1 {
			_, err := schedules.CreateSchedule(ctx, newSchedule(a, nil))
			mustOK(t, err)
		}
		_, err = schedules.CreateSchedule(ctx, newSchedule(a, nil))
		if !errors.As(err, &quota) || quota.Resource != "schedule" || quota.Quota != domain.ScheduleQuota || quota.Used != domain.ScheduleQuota {
			t.Fatalf("schedule %d: %v", domain.ScheduleQuota+1, err)
		}
		// The reminders' time passes: they no longer count, and stay.
		clock.add(2 * time.Minute)
		spent, err := schedules.CreateSchedule(ctx, newSchedule(a, nil))
		mustOK(t, err)
		_, total, err := schedules.ListSchedules(ctx, acct.ID, a.ID, 1, 1)
		mustOK(t, err)
		if total != domain.ScheduleQuota+1 {
			t.Fatalf("%d schedules listed", total)
		}
		// Making a passed one-off due again counts it once more: at the
		// quota (90 count now), it is refused.
		for range domain.ScheduleQuota - 90 {
			_, err := schedules.CreateSchedule(ctx, newSchedule(a, nil))
			mustOK(t, err)
		}
		list, _, err := schedules.ListSchedules(ctx, acct.ID, a.ID, 1, 1)
		mustOK(t, err)
		again := clock.now().Add(time.Hour)
		_, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, list[0].ID, domain.ScheduleChanges{At: &again})
		if !errors.As(err, &quota) || quota.Resource != "schedule" {
			t.Fatalf("a passed one-off due again at the quota: %v", err)
		}
		mustOK(t, schedules.DeleteSchedule(ctx, acct.ID, a.ID, spent.ID))
		_, err = schedules.UpdateSchedule(ctx, acct.ID, a.ID, list[0].ID, domain.ScheduleChanges{At: &again})
		mustOK(t, err)
	})
}

// fire accepts schedule sc's due time due as a run of its agent, as the
// firing loop does.
func fire(s *Store, sc domain.Schedule, due time.Time) (domain.Run, error) {
	run, _, err := s.Runs().AcceptRun(context.Background(), domain.Run{AccountID: sc.AccountID, AgentID: sc.AgentID,
		UserID: sc.UserID, Source: domain.SourceSchedule, Text: sc.Text, MessageID: newID("msg_", time.Now()),
		Strategy: domain.StrategyEnqueue, ScheduleID: sc.ID, ScheduleDue: due})
	return run, err
}

// TestScheduleFiresOnce: a due time is fired by the one run whose accept
// claims it; any other claim of it, concurrent or later, makes no run. A
// due time passed over records why; after downtime the schedule is due
// once, then keeps its rhythm; a one-off is due no more once fired; a
// failed run's error and a delivery's are its schedule's last error while
// that run is its last.
func TestScheduleFiresOnce(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		clock := withClock(s)
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "punctual")
		schedules := s.Schedules()
		daily, err := schedules.CreateSchedule(ctx, newSchedule(a, func(sc *domain.Schedule) { sc.Timezone = "UTC" }))
		mustOK(t, err)
		due, err := schedules.DueSchedules(ctx)
		mustOK(t, err)
		if len(due) != 0 {
			t.Fatalf("due before its time: %+v", due)
		}
		// Three days down: three due times missed, one fire.
		clock.add(3 * 24 * time.Hour)
		due, err = schedules.DueSchedules(ctx)
		mustOK(t, err)
		if len(due) != 1 || due[0].ID != daily.ID {
			t.Fatalf("due %+v", due)
		}
		var wg sync.WaitGroup
		runs := make(chan domain.Run, 8)
		for range cap(runs) {
			wg.Go(func() {
				run, err := fire(s, due[0], due[0].NextRunAt)
				switch {
				case err == nil:
					runs <- run
				case !errors.Is(err, domain.ErrScheduleTaken):
					t.Errorf("claim: %v", err)
				}
			})
		}
		wg.Wait()
		close(runs)
		if len(runs) != 1 {
			t.Fatalf("%d runs for one due time", len(runs))
		}
		run := <-runs
		got, err := schedules.GetSchedule(ctx, acct.ID, a.ID, daily.ID)
		mustOK(t, err)
		if got.LastRunID != run.ID || !got.LastRunAt.Equal(clock.now()) || run.ScheduleID != daily.ID ||
			!got.NextRunAt.Equal(time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)) {
			t.Fatalf("after the catch-up %+v, run %+v", got, run)
		}
		stored, total, err := s.Runs().ListRuns(ctx, acct.ID, domain.RunQuery{AgentID: a.ID})
		mustOK(t, err)
		if total != 1 || stored[0].Source != domain.SourceSchedule || stored[0].ScheduleID != daily.ID {
			t.Fatalf("runs %+v", stored)
		}
		_, err = fire(s, got, due[0].NextRunAt)
		wantErr(t, err, domain.ErrScheduleTaken)

		_, err = s.Runs().FinishRun(ctx, run.ID, domain.RunFailed, nil, "MODEL_ERROR", "The model provider rejected the request.")
		mustOK(t, err)
		got, err = schedules.GetSchedule(ctx, acct.ID, a.ID, daily.ID)
		mustOK(t, err)
		if got.LastError != "the run failed (MODEL_ERROR): The model provider rejected the request." {
			t.Fatalf("last error %q", got.LastError)
		}

		// The next due time is passed over: no run, the reason kept.
		clock.add(24 * time.Hour)
		mustOK(t, schedules.SkipSchedule(ctx, daily.ID, got.NextRunAt, "the agent is inactive"))
		wantErr(t, schedules.SkipSchedule(ctx, daily.ID, got.NextRunAt, "again"), domain.ErrScheduleTaken)
		got, err = schedules.GetSchedule(ctx, acct.ID, a.ID, daily.ID)
		mustOK(t, err)
		if got.LastError != "the agent is inactive" || got.LastRunID != run.ID || !got.NextRunAt.Equal(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)) {
			t.Fatalf("skipped %+v", got)
		}
		// A note about an earlier run leaves it.
		mustOK(t, schedules.NoteScheduleError(ctx, daily.ID, "run_older", "not sent"))
		mustOK(t, schedules.NoteScheduleError(ctx, daily.ID, run.ID, "the reply was not sent: the bot is not connected"))
		got, err = schedules.GetSchedule(ctx, acct.ID, a.ID, daily.ID)
		mustOK(t, err)
		if got.LastError != "the reply was not sent: the bot is not connected" {
			t.Fatalf("noted %q", got.LastError)
		}

		once, err := schedules.CreateSchedule(ctx, newSchedule(a, func(sc *domain.Schedule) { sc.Cron, sc.At = "", clock.now().Add(time.Second) }))
		mustOK(t, err)
		clock.add(time.Second)
		_, err = fire(s, once, once.NextRunAt)
		mustOK(t, err)
		got, err = schedules.GetSchedule(ctx, acct.ID, a.ID, once.ID)
		mustOK(t, err)
		if !got.NextRunAt.IsZero() || got.LastRunID == "" || got.LastError != "" {
			t.Fatalf("fired one-off %+v", got)
		}
		clock.add(time.Hour)
		due, err = schedules.DueSchedules(ctx)
		mustOK(t, err)
		if len(due) != 0 {
			t.Fatalf("due after their fires: %s", fmt.Sprint(due))
		}
	})
}
