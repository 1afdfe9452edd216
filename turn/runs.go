package turn

import (
	"cmp"
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

// Runs keeps the runs: every turn is one, accepted in its conversation's
// queue, started when it is first of it, and ended with what it made.
type Runs interface {
	// AcceptRun stores r queued, applying its strategy to the active runs
	// of its conversation; it returns the run the message belongs to (a
	// queued one it merged into, under merge) and the runs it stopped.
	// domain.ErrConversationBusy (naming the run in the way) under reject.
	AcceptRun(ctx context.Context, r domain.Run) (domain.Run, []domain.Run, error)
	// StartRun starts run id when it is first of its conversation: false
	// while it must wait, or when it ended meanwhile.
	StartRun(ctx context.Context, id string) (domain.Run, bool, error)
	// FinishRun ends run id in status (a run ended by someone else keeps
	// that status) with the reply stored, if any.
	FinishRun(ctx context.Context, id string, status domain.RunStatus, reply *domain.Reply, code, message string) (domain.Run, error)
	RunStatus(ctx context.Context, id string) (domain.RunStatus, error)
	GetRun(ctx context.Context, accountID, agentID, id string) (domain.Run, error)
	// CancelRun ends a run that has not ended as cancelled;
	// domain.ErrRunFinished when it has.
	CancelRun(ctx context.Context, accountID, agentID, id string) (domain.Run, error)
	// BeatRun says that whoever holds run id is alive: a run without a
	// beat for a minute lost its replica and blocks its conversation no
	// more.
	BeatRun(ctx context.Context, id string) error
}

const (
	// lanePoll is how often a queued run looks whether its turn came when
	// no run of this process ended meanwhile (a run of its conversation
	// may end on another replica).
	lanePoll = 100 * time.Millisecond
	// stopPoll is how often a running run looks whether it was stopped
	// elsewhere (a cancel or another message on another replica).
	stopPoll = 500 * time.Millisecond
	// beatEvery is how often a run waiting its turn or running says its
	// holder is alive; far below the store's minute without a beat.
	beatEvery = 5 * time.Second
)

// StoppedError ends a turn whose run was stopped before or while it ran:
// cancelled, or interrupted, rolled back or merged by a later message.
// By is the run that replaced it when known, else the stopped run.
type StoppedError struct {
	Run domain.Run
	By  string
}

func (e *StoppedError) Error() string {
	return "turn: the run was stopped (" + string(e.Run.Status) + ")"
}

// errRunStopped is the cause of a running turn's context when its run was
// ended by someone else.
var errRunStopped = errors.New("turn: the run was ended elsewhere")

// board is what the runs of this process tell each other: a run ended (so
// queued runs look whether their turn came), and how to stop a running
// run at once.
type board struct {
	mu      sync.Mutex
	ended   chan struct{} // closed, and replaced, when a run ends
	running map[string]func(status domain.RunStatus, by string)
}

func newBoard() *board {
	return &board{ended: make(chan struct{}), running: map[string]func(domain.RunStatus, string){}}
}

// changed is closed when a run of this process ends next.
func (b *board) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended
}

func (b *board) runEnded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ended)
	b.ended = make(chan struct{})
}

func (b *board) register(id string, stop func(status domain.RunStatus, by string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running[id] = stop
}

func (b *board) unregister(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.running, id)
}

// stop stops the runs of this process among runs, ended by run by ("" for
// a cancel); the others see their status at their next look.
func (b *board) stop(runs []domain.Run, by string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range runs {
		if stop := b.running[r.ID]; stop != nil {
			stop(r.Status, by)
		}
	}
}

// strategy is the strategy of in: the request's, else the agent's
// settings.runs.multitaskStrategy, else enqueue.
func strategy(in Input, a domain.Agent) domain.Strategy {
	if in.Strategy != "" {
		return in.Strategy
	}
	var settings struct {
		Runs struct {
			MultitaskStrategy domain.Strategy `json:"multitaskStrategy"`
		} `json:"runs"`
	}
	if _, err := agent.Document(a.Fields).Decode("settings", &settings); err == nil && settings.Runs.MultitaskStrategy.Valid() {
		return settings.Runs.MultitaskStrategy
	}
	return domain.StrategyEnqueue
}

// accept stores t's message as a run of its conversation. A message
// merged into a queued run makes none: t then follows that run.
func (s *Service) accept(ctx context.Context, t *Turn) error {
	run, stopped, err := s.cfg.Stores.Runs.AcceptRun(ctx, domain.Run{AccountID: t.agent.AccountID, AgentID: t.agent.ID,
		ConversationID: t.convID, UserID: t.in.UserID, RoomID: t.in.Conv.RoomID, Source: t.in.Source,
		Text: t.in.Text, MessageID: t.replyID, Strategy: strategy(t.in, t.agent)})
	if err != nil {
		return err
	}
	s.board.stop(stopped, run.ID)
	t.runID, t.merged = run.ID, run.MessageID != t.replyID
	t.setRun(run)
	if t.merged {
		t.replyID = run.MessageID
	}
	t.in.Text = run.Text // the texts of the runs it merged, joined, under merge
	return nil
}

// awaitTurn waits until t's run is first of its conversation and starts
// it, calling queued once before it first waits. A run stopped while it
// waited ends the turn with *StoppedError; ctx ending cancels the run.
func (s *Service) awaitTurn(ctx context.Context, t *Turn, queued func()) error {
	beat := time.Now()
	for waited := false; ; waited = true {
		if time.Since(beat) > beatEvery {
			beat = time.Now()
			s.beat(ctx, t)
		}
		changed := s.board.changed()
		run, started, err := s.cfg.Stores.Runs.StartRun(ctx, t.runID)
		switch {
		case err != nil:
			return err
		case started:
			t.setRun(run)
			return nil
		case run.Status.Final():
			t.setRun(run)
			return &StoppedError{Run: run}
		}
		if !waited {
			queued()
		}
		select {
		case <-ctx.Done():
			s.endRun(ctx, t, domain.RunCancelled, nil, "", "")
			return ctx.Err()
		case <-changed:
		case <-time.After(lanePoll):
		}
	}
}

// watch returns ctx ended when t's run is ended by someone else (a cancel,
// or a later message's strategy), here or on another replica, and the
// function that stops watching.
func (s *Service) watch(ctx context.Context, t *Turn) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stopped := func(status domain.RunStatus, by string) {
		t.stoppedAt.Store(time.Now())
		t.stoppedBy.Store(by)
		t.stoppedAs.Store(string(status))
		cancel(errRunStopped)
	}
	s.board.register(t.runID, stopped)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(stopPoll)
		defer tick.Stop()
		beat := time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if time.Since(beat) > beatEvery {
					beat = time.Now()
					s.beat(ctx, t)
				}
				if status, err := s.cfg.Stores.Runs.RunStatus(ctx, t.runID); err == nil && status.Final() {
					stopped(status, "")
					return
				}
			}
		}
	}()
	return ctx, func() {
		close(done)
		s.board.unregister(t.runID)
		cancel(nil)
	}
}

// beat renews t's run's beat; a failure is only logged, as the next one
// may succeed well within the minute.
func (s *Service) beat(ctx context.Context, t *Turn) {
	if err := s.cfg.Stores.Runs.BeatRun(ctx, t.runID); err != nil && ctx.Err() == nil {
		s.cfg.Logger.WarnContext(ctx, "run beat not stored", "run", t.runID, "error", err)
	}
}

// discards reports whether t's reply must not be stored: its run was
// rolled back (or merged into a later one), so history keeps nothing of it.
func (t *Turn) discards() bool {
	return t.stoppedAs.Load() == string(domain.RunRolledBack)
}

// interrupted reports whether a later message interrupted t's run: its
// message stays in history, with what was said of the reply.
func (t *Turn) interrupted() bool {
	return t.stoppedAs.Load() == string(domain.RunInterrupted)
}

// settle ends t's run with the outcome of its turn and returns the turn's
// result with the run named.
func (s *Service) settle(ctx context.Context, t *Turn, res Result, err error) (Result, error) {
	res.RunID = t.runID
	var reply *domain.Reply
	if err == nil || ((res.Text != "" || t.interrupted()) && !t.discards()) {
		r := res
		reply = &r
	}
	status, code, message := runOutcome(err)
	s.endRun(ctx, t, status, reply, code, message)
	switch stoppedAs, _ := t.stoppedAs.Load().(string); {
	case err == nil || stoppedAs == "":
		return res, err
	case stoppedAs == string(domain.RunCancelled):
		return res, nil // what was said before the cancel, stored partial
	}
	by, _ := t.stoppedBy.Load().(string)
	return res, &StoppedError{Run: t.Run(), By: cmp.Or(by, t.runID)}
}

// endRun stores the end of t's run, whoever waits for it: a run is never
// left running because its caller went away.
func (s *Service) endRun(ctx context.Context, t *Turn, status domain.RunStatus, reply *domain.Reply, code, message string) {
	if t.ended.Swap(true) {
		return
	}
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	run, err := s.cfg.Stores.Runs.FinishRun(writeCtx, t.runID, status, reply, code, message)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "run not finished", "run", t.runID, "error", err)
	} else {
		t.setRun(run)
	}
	s.board.runEnded()
}

// runOutcome is the status a run ends in after its turn ended with err, and
// for a failure the code a synchronous Send Message would have answered.
func runOutcome(err error) (domain.RunStatus, string, string) {
	var provider *ProviderError
	var unavailable *UnavailableError
	switch {
	case err == nil:
		return domain.RunCompleted, "", ""
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, errRunStopped):
		return domain.RunCancelled, "", ""
	case errors.As(err, &provider) && (provider.Err.Kind == llm.KindRequest || provider.Err.UnknownModel):
		return domain.RunFailed, "MODEL_ERROR", "The model provider rejected the request."
	case errors.As(err, &provider):
		return domain.RunFailed, "AGENT_UNAVAILABLE", provider.Err.Reason
	case errors.As(err, &unavailable):
		return domain.RunFailed, "AGENT_UNAVAILABLE", unavailable.Reason
	}
	return domain.RunFailed, "INTERNAL_ERROR", "The run failed."
}

// followMerged waits for the run t's message was merged into and returns
// its reply, or why it has none.
func (s *Service) followMerged(ctx context.Context, t *Turn) (Result, error) {
	run, err := s.Wait(ctx, t.agent.AccountID, t.agent.ID, t.runID, 0)
	switch {
	case err != nil:
		return Result{}, err
	case run.Reply != nil && run.Status == domain.RunCompleted:
		return *run.Reply, nil
	}
	return Result{}, &StoppedError{Run: run}
}

// Wait returns run id of the account's agent once it ended or waits for an
// approval, or as it is when limit (0 for none) passed or ctx ended.
func (s *Service) Wait(ctx context.Context, accountID, agentID, id string, limit time.Duration) (domain.Run, error) {
	var deadline <-chan time.Time
	if limit > 0 {
		timer := time.NewTimer(limit)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		changed := s.board.changed()
		run, err := s.cfg.Stores.Runs.GetRun(ctx, accountID, agentID, id)
		if err != nil || run.Status.Final() || run.Status == domain.RunRequiresAction {
			return run, err
		}
		select {
		case <-ctx.Done():
			return run, nil
		case <-deadline:
			return run, nil
		case <-changed:
		case <-time.After(lanePoll):
		}
	}
}

// Cancel ends run id of the account's agent as cancelled
// (domain.ErrRunFinished when it has ended): a queued one at once, a
// running one here at once and on another replica at its next look, its
// partial reply stored.
func (s *Service) Cancel(ctx context.Context, accountID, agentID, id string) (domain.Run, error) {
	run, err := s.cfg.Stores.Runs.CancelRun(ctx, accountID, agentID, id)
	if err == nil {
		s.board.stop([]domain.Run{run}, "")
		s.board.runEnded()
	}
	return run, err
}

// errRunPanicked ends a turn whose code panicked; the log has the panic.
var errRunPanicked = errors.New("turn: the run failed unexpectedly")

// recoverRun turns a panic of t's turn into its run's failure and the
// turn's error *err: a run, which may have no caller to recover it, never
// takes its process down.
func (s *Service) recoverRun(ctx context.Context, t *Turn, err *error) {
	p := recover()
	if p == nil {
		return
	}
	s.cfg.Logger.ErrorContext(ctx, "run panicked", "run", t.runID, "panic", p, "stack", string(debug.Stack()))
	s.endRun(ctx, t, domain.RunFailed, nil, "INTERNAL_ERROR", "The run failed.")
	*err = errRunPanicked
}

// Outcome is how a detached run's turn ended.
type Outcome struct {
	Result Result
	Err    error
}

// Detach runs t's run without its caller: it waits its turn, answers as
// Stream does, passing each event to emit (so a run nobody waits for
// still shows its reply as it comes), and ends whoever waits for it, and
// its outcome arrives on the channel returned, which a caller may read
// for as long as it chooses and then leave. ctx ending cancels the run,
// as it cancels a Stream: a caller that leaves the run to go on passes a
// context that outlives it. Close waits for the run.
func (s *Service) Detach(ctx context.Context, t *Turn, emit func(Event) error) <-chan Outcome {
	out := make(chan Outcome, 1)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if err := s.Start(ctx, t); err != nil {
			out <- Outcome{Err: err} // the run ended with why
			return
		}
		res, err := s.Stream(ctx, t, emit)
		out <- Outcome{Result: res, Err: err}
	}()
	return out
}
