package turn

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

// lostRunsPerLook bounds the lost runs one look takes over: a replica
// back from a crash shares a backlog with the others.
const lostRunsPerLook = 16

// runInput is what in's run stores so another process can start its turn
// again.
func runInput(in Input) domain.RunInput {
	out := domain.RunInput{Conv: in.Conv, UserName: in.UserName, Platform: in.Platform, Channel: in.Channel,
		ChatID: in.ChatID, Post: in.Shape.Post, MaxChars: in.Shape.MaxChars,
		Instructions: in.Instructions, MaxTokens: in.MaxTokens, Temperature: in.Temperature}
	for _, m := range in.Given {
		out.Given = append(out.Given, domain.GivenMessage{Role: string(m.Role), Text: m.Content})
	}
	return out
}

// inputOf is the input of run r's turn as runInput stored it. A resumed
// run waits for a slot, as a background run does; a platform's own
// length measure is not stored, so its reply is measured in characters.
func inputOf(r domain.Run) Input {
	in := Input{AccountID: r.AccountID, AgentID: r.AgentID, Text: r.Text, UserID: r.UserID, UserName: r.Input.UserName,
		Conv: r.Input.Conv, Platform: r.Input.Platform, Channel: r.Input.Channel, ChatID: r.Input.ChatID, Slot: SlotWait, Source: r.Source,
		Strategy: r.Strategy, Shape: Shaping{Post: r.Input.Post, MaxChars: r.Input.MaxChars},
		Instructions: r.Input.Instructions, MaxTokens: r.Input.MaxTokens, Temperature: r.Input.Temperature}
	for _, m := range r.Input.Given {
		in.Given = append(in.Given, llm.Message{Role: llm.Role(m.Role), Content: m.Text})
	}
	return in
}

// Resume takes over run id when whoever held it was lost (its replica
// died or stopped) and runs it to its end here: from its last stored
// step, never running a finished tool call again. It returns how long
// until the run should be looked at again when its holder is alive, 0
// when there is nothing (more) to do. The run goes on when ctx ends.
func (s *Service) Resume(ctx context.Context, id string) (time.Duration, error) {
	ctx = context.WithoutCancel(ctx)
	c, err := s.cfg.Stores.Runs.ClaimRun(ctx, id)
	if err != nil || !c.Claimed {
		return c.Again, err
	}
	s.cfg.Logger.InfoContext(ctx, "resuming a run whose holder was lost", "run", id, "attempts", c.Run.Attempts)
	s.goOn(ctx, c.Run)
	return 0, nil
}

// goOn runs r, accepted earlier (by this process or another), to its end
// here: from its stored steps, its outcome kept in the run.
func (s *Service) goOn(ctx context.Context, r domain.Run) {
	t, err := s.newTurn(ctx, inputOf(r), r.CreatedAt)
	if err != nil {
		status, code, message := runOutcome(err)
		if _, err := s.cfg.Stores.Runs.FinishRun(ctx, r.ID, status, nil, code, message); err != nil {
			s.cfg.Logger.WarnContext(ctx, "run not finished", "run", r.ID, "error", err)
		}
		s.board.runEnded(laneOf(r))
		return
	}
	t.runID, t.replyID, t.convID = r.ID, r.MessageID, r.ConversationID
	t.setRun(r)
	if err := s.Start(ctx, t); err != nil {
		return // the run ended with why
	}
	// The run keeps its outcome; a stream that saw it wait follows it here.
	_, _ = s.Stream(ctx, t, func(e Event) error {
		s.board.publish(r.ID, e)
		return nil
	})
}

// Follow calls emit with the events of run id while it goes on in this
// process after a wait (a decision made here), until stop is called.
func (s *Service) Follow(id string, emit func(Event)) (stop func()) {
	return s.board.follow(id, emit)
}

// ResumeLost looks for runs whose holder was lost, and for runs whose
// approvals expired, every interval until ctx ends, and goes on with them
// here, each on its own; Close waits for them. It is the queue of a
// database without a job engine (SQLite).
func (s *Service) ResumeLost(ctx context.Context, every time.Duration) {
	eachTick(ctx, every, func() {
		s.expire(ctx)
		ids, err := s.cfg.Stores.Runs.LostRuns(ctx, lostRunsPerLook)
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.WarnContext(ctx, "looking for lost runs", "error", err)
		}
		for _, id := range ids {
			s.bg.Go(func() {
				if _, err := s.Resume(ctx, id); err != nil {
					s.cfg.Logger.WarnContext(ctx, "resuming a run", "run", id, "error", err)
				}
			})
		}
	})
}

// ExpireApprovals is ResumeLost's look for expired approvals alone, for a
// database whose job engine resumes the lost runs (PostgreSQL).
func (s *Service) ExpireApprovals(ctx context.Context, every time.Duration) {
	eachTick(ctx, every, func() { s.expire(ctx) })
}

// eachTick calls look every interval until ctx ends.
func eachTick(ctx context.Context, every time.Duration, look func()) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		look()
	}
}
