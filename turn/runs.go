package turn

import (
	"cmp"
	"context"
	"errors"
	"runtime/debug"
	"slices"
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
	// RefuseRun stores r as a run that failed as it was accepted, with
	// code and message; a schedule's run takes its due time.
	RefuseRun(ctx context.Context, r domain.Run, code, message string) (domain.Run, error)
	// StartRun starts run id when it is first of its conversation: false
	// while it must wait, or when it ended meanwhile.
	StartRun(ctx context.Context, id string) (domain.Run, bool, error)
	// FinishRun ends run id in status (a run ended by someone else keeps
	// that status) with the reply stored, if any.
	FinishRun(ctx context.Context, id string, status domain.RunStatus, reply *domain.Reply, code, message string) (domain.Run, error)
	RunStatus(ctx context.Context, id string) (domain.RunStatus, error)
	GetRun(ctx context.Context, accountID, agentID, id string) (domain.Run, error)
	// ListRuns is a page of the account's runs matching q, newest first.
	ListRuns(ctx context.Context, accountID string, q domain.RunQuery) ([]domain.Run, int64, error)
	// CancelRun ends a run that has not ended as cancelled;
	// domain.ErrRunFinished when it has.
	CancelRun(ctx context.Context, accountID, agentID, id string) (domain.Run, error)
	// BeatRun says that whoever holds run id is alive: a run without a
	// beat for a minute lost its replica and blocks its conversation no
	// more.
	BeatRun(ctx context.Context, id string) error
	// SaveRunSteps stores the run's finished steps, the whole list.
	SaveRunSteps(ctx context.Context, id string, steps []domain.RunStep) error
	// ClaimRun takes over run id when whoever held it was lost.
	ClaimRun(ctx context.Context, id string) (domain.RunClaim, error)
	// LostRuns are the ids of up to limit runs whose holder was lost.
	LostRuns(ctx context.Context, limit int) ([]string, error)
	// ReleaseRun gives up a run without ending it, for another process
	// to resume at once.
	ReleaseRun(ctx context.Context, id string) error
	// AskChain is the agents of the chain of asks that led to run id,
	// its own first, and the runs on other servers that led to the first
	// (its RunInput.AskDepth).
	AskChain(ctx context.Context, id string) ([]string, int, error)
	decisions
}

const (
	// lanePoll is how often a queued run looks whether its turn came when
	// no run of its conversation ended in this process meanwhile (one may
	// end on another replica); the gap doubles up to laneMaxPoll while it
	// waits, so a long backlog costs few looks.
	lanePoll    = 100 * time.Millisecond
	laneMaxPoll = 800 * time.Millisecond
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

// ErrHandedOver ends a turn whose process is stopping: its run did not
// end, and goes on in another process from its last stored step.
var ErrHandedOver = errors.New("turn: the run was handed over to another process")

// board is what the runs of this process tell each other: a run ended (so
// queued runs look whether their turn came), and how to stop a running
// run at once.
type board struct {
	mu sync.Mutex
	// ended holds, per lane (a conversation, or a run without one) that
	// someone waits on, a channel closed when a run of it ends here.
	ended   map[string]chan struct{}
	running map[string]func(stopped domain.Run, by string)
	// handOvers stop the running runs of this process without ending them.
	handOvers map[string]func()
	// followers get the events of runs that go on here after a wait.
	followers map[string][]*func(Event)
}

func newBoard() *board {
	return &board{ended: map[string]chan struct{}{}, running: map[string]func(domain.Run, string){},
		handOvers: map[string]func(){}, followers: map[string][]*func(Event){}}
}

// follow adds emit to the followers of run id until the returned stop.
func (b *board) follow(id string, emit func(Event)) (stop func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := &emit
	b.followers[id] = append(b.followers[id], f)
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.followers[id] = slices.DeleteFunc(b.followers[id], func(g *func(Event)) bool { return g == f })
		if len(b.followers[id]) == 0 {
			delete(b.followers, id)
		}
	}
}

// publish gives e to the followers of run id.
func (b *board) publish(id string, e Event) {
	b.mu.Lock()
	fs := slices.Clone(b.followers[id])
	b.mu.Unlock()
	for _, f := range fs {
		(*f)(e)
	}
}

// changed is closed when a run of lane ends next in this process: only
// the runs of that conversation need to look again.
func (b *board) changed(lane string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch, ok := b.ended[lane]
	if !ok {
		ch = make(chan struct{})
		b.ended[lane] = ch
	}
	return ch
}

// runEnded wakes whoever waits on lane.
func (b *board) runEnded(lane string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch, ok := b.ended[lane]; ok {
		close(ch)
		delete(b.ended, lane)
	}
}

// laneOf is the lane of run r: its conversation, or itself.
func laneOf(r domain.Run) string { return cmp.Or(r.ConversationID, r.ID) }

// lane is the lane of t's run.
func (t *Turn) lane() string { return cmp.Or(t.convID, t.runID) }

func (b *board) register(id string, stop func(stopped domain.Run, by string), handOver func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running[id], b.handOvers[id] = stop, handOver
}

func (b *board) unregister(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.running, id)
	delete(b.handOvers, id)
}

// handOverAll stops every running run of this process without ending it.
func (b *board) handOverAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range b.handOvers {
		h()
	}
}

// stop stops the runs of this process among runs, ended by run by ("" for
// a cancel); the others see their status at their next look.
func (b *board) stop(runs []domain.Run, by string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range runs {
		if stop := b.running[r.ID]; stop != nil {
			stop(r, by)
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

// newRun is the run t's message asks for, as accepted.
func (t *Turn) newRun() domain.Run {
	return domain.Run{AccountID: t.agent.AccountID, AgentID: t.agent.ID,
		ConversationID: t.convID, UserID: t.in.UserID, RoomID: t.in.Conv.RoomID, Source: t.in.Source,
		Text: t.in.Text, MessageID: t.replyID, Strategy: strategy(t.in, t.agent), Input: runInput(t.in),
		ParentRunID: t.in.ParentRunID, ScheduleID: t.in.ScheduleID, ScheduleDue: t.in.ScheduleDue, StartAtOnce: t.in.StartAtOnce}
}

// accept stores t's message as a run of its conversation. A message
// merged into a queued run makes none: t then follows that run.
func (s *Service) accept(ctx context.Context, t *Turn) error {
	run, stopped, err := s.cfg.Stores.Runs.AcceptRun(ctx, t.newRun())
	if err != nil {
		return err
	}
	s.board.stop(stopped, run.ID)
	if len(stopped) > 0 {
		s.board.runEnded(laneOf(run)) // the queued ones among them look again
	}
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
	beat, poll := time.Now(), lanePoll
	for waited := false; ; waited = true {
		if time.Since(beat) > beatEvery {
			beat = time.Now()
			s.beat(ctx, t)
		}
		changed := s.board.changed(t.lane())
		run, started, err := s.cfg.Stores.Runs.StartRun(ctx, t.runID)
		switch {
		case err != nil:
			return err
		case started:
			t.setRun(run)
			t.in.Text = run.Text // with the texts merged into it while it waited
			return nil
		case run.Status.Final():
			t.setRun(run)
			if run.Status == domain.RunInterrupted {
				s.keepInterrupted(ctx, t, run)
			}
			return &StoppedError{Run: run, By: s.replacer(ctx, run)}
		}
		if !waited {
			queued()
		}
		if s.handingOver.Load() {
			return s.handOver(ctx, t)
		}
		select {
		case <-ctx.Done():
			if s.handingOver.Load() {
				return s.handOver(ctx, t)
			}
			s.endRun(ctx, t, domain.RunCancelled, nil, "", "")
			return ctx.Err()
		case <-changed:
		case <-time.After(poll):
			poll = min(2*poll, laneMaxPoll)
		}
	}
}

// keepInterrupted stores the message of t's run, interrupted before it
// started, with an empty partial reply dated from its end: interrupt keeps
// a stopped run's message in history, whether it was running or queued.
func (s *Service) keepInterrupted(ctx context.Context, t *Turn, run domain.Run) {
	t.stoppedAt.Store(run.FinishedAt)
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	meta := s.metadata(t, llm.Reply{})
	end := &domain.RunEnd{Status: run.Status, Reply: s.result(t, domain.Message{}, llm.Reply{}, meta)}
	_, err := s.saveExchange(writeCtx, t, llm.Reply{}, meta, true, end)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "the message of an interrupted run not kept", "run", t.runID, "error", err)
	}
}

// watch returns ctx ended when t's run is ended by someone else (a cancel,
// or a later message's strategy), here or on another replica, and the
// function that stops watching.
func (s *Service) watch(ctx context.Context, t *Turn) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stopped := func(run domain.Run, by string) {
		// What was said of the reply dates from the stop, not from when
		// this replica saw it: history keeps it before the next run's.
		t.stoppedAt.Store(cmp.Or(run.FinishedAt, time.Now()))
		t.stoppedBy.Store(by)
		t.stoppedAs.Store(string(run.Status))
		cancel(errRunStopped)
	}
	s.board.register(t.runID, stopped, func() { cancel(ErrHandedOver) })
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
					run, err := s.cfg.Stores.Runs.GetRun(ctx, t.agent.AccountID, t.agent.ID, t.runID)
					if err != nil {
						run = domain.Run{ID: t.runID, Status: status}
					}
					stopped(run, "")
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
	if by == "" { // stopped by a message to another replica
		by = s.replacer(ctx, t.Run())
	}
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
	s.board.runEnded(t.lane())
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
	return Result{}, &StoppedError{Run: run, By: s.replacer(ctx, run)}
}

// replacerScan bounds the runs of a conversation replacer reads, newest
// first: the run it looks for was accepted when the stopped one ended.
const replacerScan = 20

// replacer is the id of the run whose message stopped run r (interrupted,
// rolled back, or merged into it): the first run of its conversation
// accepted when r ended (Runs.AcceptRun ends the runs it stops at the
// time it accepts the new one). "" when r was not stopped by a message or
// that run is not found. A replica that did not accept that message
// learns it only so.
func (s *Service) replacer(ctx context.Context, r domain.Run) string {
	if r.Status != domain.RunInterrupted && r.Status != domain.RunRolledBack || r.ConversationID == "" || r.FinishedAt.IsZero() {
		return ""
	}
	readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout) // ctx may have ended with the run
	defer cancel()
	runs, _, err := s.cfg.Stores.Runs.ListRuns(readCtx, r.AccountID,
		domain.RunQuery{AgentID: r.AgentID, ConversationID: r.ConversationID, Limit: replacerScan})
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "the run that stopped a run not read", "run", r.ID, "error", err)
		return ""
	}
	by := ""
	for _, later := range runs { // newest first: the last one not before r ended
		if later.CreatedAt.Before(r.FinishedAt) {
			break
		}
		by = later.ID
	}
	return by
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
	lane := "" // known once the run was read
	for {
		var changed <-chan struct{}
		if lane != "" {
			changed = s.board.changed(lane)
		}
		run, err := s.cfg.Stores.Runs.GetRun(ctx, accountID, agentID, id)
		if err != nil || run.Status.Final() || run.Status == domain.RunRequiresAction {
			return run, err
		}
		if lane == "" {
			lane = laneOf(run)
			continue
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
		s.board.runEnded(laneOf(run))
	}
	return run, err
}

// HandOver stops the runs of this process without ending them, for a
// graceful stop past its drain time: each is released and resumed at once
// by another process (or this one after its restart) from its last stored
// step; runs that would start here from now on are released too.
func (s *Service) HandOver() {
	s.handingOver.Store(true)
	s.board.handOverAll()
}

// handOver releases t's run, which this process stops running, and ends
// the turn with ErrHandedOver.
func (s *Service) handOver(ctx context.Context, t *Turn) error {
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if err := s.cfg.Stores.Runs.ReleaseRun(writeCtx, t.runID); err != nil {
		s.cfg.Logger.WarnContext(ctx, "run not released", "run", t.runID, "error", err)
	}
	t.ended.Store(true) // Release must not end it
	s.board.runEnded(t.lane())
	return ErrHandedOver
}

// suspended ends t's turn without ending its run when converse stopped
// because calls wait for decisions, or because this process hands its
// runs over: the run goes on later, or elsewhere, from its stored steps.
func (s *Service) suspended(ctx context.Context, t *Turn, err error) (bool, error) {
	switch {
	case errors.Is(err, errAwaiting):
		return true, s.pause(ctx, t)
	case err != nil && errors.Is(context.Cause(ctx), ErrHandedOver):
		return true, s.handOver(ctx, t)
	}
	return false, nil
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
