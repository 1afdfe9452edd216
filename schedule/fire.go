package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/turn"
)

// DefaultEvery is how often a process looks for due schedules: a due time
// fires within it (and the claim's few milliseconds), well within the 10
// seconds decided.
const DefaultEvery = 2 * time.Second

// Store is what firing needs of the schedules.
type Store interface {
	// DueSchedules are the schedules whose next due time has come, by the
	// store's clock, the most overdue first (a bounded number: the next
	// look takes the rest).
	DueSchedules(ctx context.Context) ([]domain.Schedule, error)
	// SkipSchedule passes over due time due of schedule id without a run,
	// reason its last error, and moves it on to its next due time;
	// domain.ErrScheduleTaken when someone fired, skipped or changed it
	// first.
	SkipSchedule(ctx context.Context, id string, due time.Time, reason string) error
	// NoteScheduleError records reason as the last error of schedule id
	// while its last run is still runID.
	NoteScheduleError(ctx context.Context, id, runID, reason string) error
}

// Holders says which replica runs an agent's connection to a platform.
type Holders interface {
	// ConnectionHolder is the owner of the live lease on the connection,
	// as Chats.Owner names a replica; "" when no replica runs it.
	ConnectionHolder(ctx context.Context, agentID, platform string) (string, error)
}

// Chats sends replies to platform chats through the agents' bots
// connected on this replica; *connect.Supervisor implements it.
type Chats interface {
	// Owner names this replica as the leases of its connections do.
	Owner() string
	// DeliverRun sends the reply of run, once it has ended, to chat
	// through the agent's bot on platform; done gets nil once it was
	// sent, else why it was not (the bot is not connected here, the run
	// failed, the platform refused it).
	DeliverRun(agentID, platform, chat string, run domain.Run, done func(error))
}

var _ Chats = (*connect.Supervisor)(nil)

// Turns accepts a schedule's message as a run and runs it in the
// background; *turn.Service implements it.
type Turns interface {
	// Accept makes the run, or refuses: domain.ErrScheduleTaken when
	// another process claimed the due time, a *turn.UnavailableError or a
	// *turn.ProviderError when the agent cannot answer.
	Accept(ctx context.Context, in turn.Input) (*turn.Turn, error)
	// Detach runs the run without its caller until ctx ends (a stopping
	// process hands it over rather than cancel it), passing its events to
	// emit.
	Detach(ctx context.Context, t *turn.Turn, emit func(turn.Event) error) <-chan turn.Outcome
}

var _ Turns = (*turn.Service)(nil)

// Config is what a Firer needs.
type Config struct {
	Store Store
	Turns Turns
	// Holders and Chats deliver the replies of the schedules that have a
	// target: a target's schedule is fired by the replica that runs the
	// agent's bot, so the reply can go, or by any when none runs it (its
	// lastError then says so). Chats is nil on a replica that runs no
	// platform connections; Holders nil means that none does.
	Holders Holders
	Chats   Chats
	// Every is how often to look for due schedules (DefaultEvery).
	Every  time.Duration
	Logger *slog.Logger
}

// Firer fires the due schedules of every agent. Each process runs one; the
// store's claim makes each due time one run whichever fires it.
type Firer struct{ cfg Config }

// New returns a Firer; Store and Turns are required.
func New(cfg Config) (*Firer, error) {
	if cfg.Store == nil || cfg.Turns == nil {
		return nil, errors.New("schedule: Store and Turns are required")
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Firer{cfg: cfg}, nil
}

// Run fires the due schedules every cfg.Every until ctx ends. The runs it
// made go on in the turn service, which hands them over when the process
// stops.
func (f *Firer) Run(ctx context.Context) {
	tick := time.NewTicker(f.cfg.Every)
	defer tick.Stop()
	for {
		f.FireDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// FireDue fires the schedules due now, one after the other: accepting a
// run costs a few writes, not a provider call.
func (f *Firer) FireDue(ctx context.Context) {
	due, err := f.cfg.Store.DueSchedules(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.cfg.Logger.WarnContext(ctx, "due schedules not read", "error", err)
		}
		return
	}
	for _, sc := range due {
		if ctx.Err() != nil {
			return
		}
		f.fire(ctx, sc)
	}
}

// fire makes sc's due time one run, in the background, unless another
// process claimed it first or, for a schedule with a target, the agent's
// bot runs on another replica, which fires it; when the agent cannot
// answer, it passes the due time over with the reason. Any other failure
// (the database) leaves the due time for the next look.
func (f *Firer) fire(ctx context.Context, sc domain.Schedule) {
	log := f.cfg.Logger.With("schedule", sc.ID, "agent", sc.AgentID)
	connected := false
	if sc.Target != nil {
		holder, err := f.holder(ctx, sc)
		if err != nil {
			log.WarnContext(ctx, "schedule not fired: its bot's replica not read; the next look tries again", "error", err)
			return
		}
		if holder != "" && (f.cfg.Chats == nil || holder != f.cfg.Chats.Owner()) {
			return // the replica running the bot fires it, and sends the reply
		}
		connected = holder != ""
	}
	t, err := f.cfg.Turns.Accept(ctx, input(sc))
	switch {
	case errors.Is(err, domain.ErrScheduleTaken):
		return // fired by another process
	case errors.As(err, new(*domain.BudgetExceededError)):
		// The run is stored failed and the schedule moved on with it.
		log.InfoContext(ctx, "schedule fired; a spent budget refused its run", "reason", err.Error())
		return
	case err != nil:
		reason, refused := refusal(err)
		if !refused {
			if ctx.Err() == nil {
				log.WarnContext(ctx, "schedule not fired; the next look tries again", "error", err)
			}
			return
		}
		switch err := f.cfg.Store.SkipSchedule(ctx, sc.ID, sc.NextRunAt, reason); {
		case err == nil:
			log.InfoContext(ctx, "schedule due time passed over", "reason", reason)
		case !errors.Is(err, domain.ErrScheduleTaken): // else another process passed it over
			log.WarnContext(ctx, "skipped due time not recorded", "error", err)
		}
		return
	}
	run := t.Run()
	// The run outlives this look and the loop; nobody follows its events.
	f.cfg.Turns.Detach(context.WithoutCancel(ctx), t, func(turn.Event) error { return nil })
	log.InfoContext(ctx, "schedule fired", "run", run.ID, "due", sc.NextRunAt)
	if sc.Target != nil {
		f.deliver(ctx, sc, run, connected)
	}
}

// holder is the replica running the bot of sc's target, "" for none.
func (f *Firer) holder(ctx context.Context, sc domain.Schedule) (string, error) {
	if f.cfg.Holders == nil {
		return "", nil
	}
	return f.cfg.Holders.ConnectionHolder(ctx, sc.AgentID, sc.Target.Platform)
}

// deliver has the reply of run, sc's, sent to sc's target through the
// agent's bot, connected on this replica, once the run has ended; why it
// was not sent becomes sc's last error (while run is its last).
func (f *Firer) deliver(ctx context.Context, sc domain.Schedule, run domain.Run, connected bool) {
	target := sc.Target
	failed := func(err error) {
		reason := fmt.Sprintf("the reply was not sent to %s chat %s: %v", target.Platform, target.ChatID, err)
		write, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteTimeout)
		defer cancel()
		if err := f.cfg.Store.NoteScheduleError(write, sc.ID, run.ID, reason); err != nil {
			f.cfg.Logger.WarnContext(write, "schedule's last error not recorded", "schedule", sc.ID, "reason", reason, "error", err)
		}
	}
	if !connected {
		failed(fmt.Errorf("the agent's %s bot is not connected", target.Platform))
		return
	}
	f.cfg.Chats.DeliverRun(sc.AgentID, target.Platform, target.ChatID, run, func(err error) {
		if err != nil {
			failed(err)
		}
	})
}

// noteTimeout bounds the write of why a reply was not sent, which may
// come when the run ends, long after the look that fired it.
const noteTimeout = 10 * time.Second

// input is the message of sc's due time: from its user, in its
// conversation, waiting for the agent's slot rather than refused (as a
// background message), and queued behind the conversation's runs
// whatever the agent's strategy: a clock neither stops a person's run
// (interrupt, rollback, merge) nor is turned away (reject).
func input(sc domain.Schedule) turn.Input {
	in := turn.Input{AccountID: sc.AccountID, AgentID: sc.AgentID, Text: sc.Text, UserID: sc.UserID,
		Conv: sc.Conversation(), Slot: turn.SlotWait, Source: domain.SourceSchedule, Strategy: domain.StrategyEnqueue,
		ScheduleID: sc.ID, ScheduleDue: sc.NextRunAt}
	if sc.Target != nil { // the reply is shaped for where it goes, and a reminder set in the run goes there too
		in.Platform, in.ChatID = sc.Target.Platform, sc.Target.ChatID
	}
	return in
}

// refusal is why a due time makes no run when err says the agent cannot
// answer it, naming the agent's status; false for any other error.
func refusal(err error) (string, bool) {
	var unavailable *turn.UnavailableError
	var provider *turn.ProviderError
	switch {
	case errors.As(err, &unavailable):
		return fmt.Sprintf("no run: the agent is %s: %s", unavailable.Status, unavailable.Reason), true
	case errors.As(err, &provider):
		return fmt.Sprintf("no run: the agent is %s: its model provider cannot be called: %s", provider.Status, provider.Err.Reason), true
	}
	return "", false
}
