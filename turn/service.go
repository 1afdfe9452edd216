package turn

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/price"
	"github.com/prometheus/client_golang/prometheus"
)

// MaxInFlightPerAgent caps the turns an agent has in flight at once, on
// every replica: the API's (SlotRefuseWhenFull) and the platforms'
// (SlotWait).
const MaxInFlightPerAgent = 10

// slotPollMin and slotPollMax bound the back-off between two tries of a
// turn waiting for a slot (SlotWait): the Semaphore can only be
// polled, and across replicas it lives in Redis.
const (
	slotPollMin = 5 * time.Millisecond
	slotPollMax = 250 * time.Millisecond
)

// saveTimeout bounds the writes after the provider call, which go on when
// the caller has gone away. It is long: the reply is given and billed by
// then, and on a machine overloaded by open streams, SQLite's one writer
// queues exchanges for seconds; waiting for it costs less than losing the
// reply.
const saveTimeout = 30 * time.Second

// Stores is what a turn reads and writes, one small interface per
// resource; cmd/agentd passes the faces of its *store.Store.
type Stores struct {
	Agents        Agents
	Conversations Conversations
	Analytics     Analytics
	Runs          Runs
	Budgets       Budgets
	// Schedules keeps the reminders agents set; nil offers no
	// schedule_reminder.
	Schedules Schedules
}

// Agents is what a turn reads of its agent and how it marks the agent's
// state after a provider's failure or recovery.
type Agents interface {
	GetAgent(ctx context.Context, accountID, id string) (domain.Agent, error)
	// Secrets opens the agent's secrets; domain.ErrSecretUnreadable when
	// they do not decrypt under the configured key.
	Secrets(a domain.Agent) (domain.Secrets, error)
	// MarkAgentError puts the agent in `error` until retryAt unless it is
	// inactive, and returns its status afterwards.
	MarkAgentError(ctx context.Context, accountID, agentID, reason string, retryAt time.Time) (domain.Status, error)
	// MarkAgentRecovered moves an agent in `error` back to active.
	MarkAgentRecovered(ctx context.Context, accountID, agentID string) error
}

// Conversations is the history a turn reads and the exchange it saves.
type Conversations interface {
	// History is the last limit messages of the conversation, oldest first.
	History(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, limit int) ([]domain.Message, error)
	// SaveExchange stores a message and its reply in the conversation,
	// with their analytics and events, and returns the stored reply.
	SaveExchange(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, user, reply domain.Message) (domain.Message, string, error)
	// FinishExchange is SaveExchange that also ends the reply's run as
	// end says, in the same write; a zero run when the run is gone.
	FinishExchange(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, user, reply domain.Message,
		end domain.RunEnd) (domain.Message, domain.Run, error)
	// OpenConversation is the id of the agent's conversation conv, which
	// it creates when it does not exist; "" when conv names none.
	OpenConversation(ctx context.Context, accountID, agentID string, conv domain.ConversationRef) (string, error)
	// ConversationSummary is conv's summary and how many of its oldest
	// messages it covers.
	ConversationSummary(ctx context.Context, accountID, agentID string, conv domain.ConversationRef) (string, int, error)
	// SaveSummary stores a summary covering the oldest summarized
	// messages, unless the stored one covers as many.
	SaveSummary(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, summary string, summarized int) error
	// MessagesRange is messages [from, to) of conv, oldest first.
	MessagesRange(ctx context.Context, accountID, agentID string, conv domain.ConversationRef, from, to int) ([]domain.Message, error)
	// GetConversation is one conversation, with its message count.
	GetConversation(ctx context.Context, accountID, agentID, id string) (domain.Conversation, error)
	// NewMessageID is a new message id made at t, for a reply whose id is
	// known before it is stored.
	NewMessageID(t time.Time) string
}

// Analytics counts what a turn spends or fails outside its saved
// exchange.
type Analytics interface {
	// RecordTurnError counts a failed turn of kind in the agent's analytics.
	RecordTurnError(ctx context.Context, accountID, agentID, kind string, t time.Time) error
	// RecordTokens adds tokens spent outside a turn (summaries) to the
	// agent's analytics.
	RecordTokens(ctx context.Context, accountID, agentID string, tokens int, t time.Time) error
}

// Model produces an agent's reply; *llm.Client implements it.
type Model interface {
	Generate(ctx context.Context, req llm.Request) (llm.Reply, error)
	Stream(ctx context.Context, req llm.Request, onToken func(string) error) (llm.Reply, error)
	// Configured returns an *llm.Error when provider cannot be called as
	// configured (no API key in the environment, nor apiKey, the agent's
	// own), so a message is refused before it starts.
	Configured(provider, apiKey string) error
}

var _ Model = (*llm.Client)(nil)

// Semaphore caps concurrent holders of a key (package limit's, in memory or
// Redis).
type Semaphore interface {
	TryAcquire(ctx context.Context, key string, max int) (release func(), ok bool, err error)
}

// Config is what a Service needs.
type Config struct {
	Stores Stores
	Model  Model
	// Semaphore holds the per-agent cap of turns (MaxInFlightPerAgent).
	Semaphore Semaphore
	// ErrorCooldown is how long an agent in error refuses messages when
	// the provider gave no Retry-After (30s).
	ErrorCooldown time.Duration
	Logger        *slog.Logger
	// Registerer receives the provider call metrics; nil registers none.
	Registerer prometheus.Registerer
	// Tools makes the agents' tools; nil offers none.
	Tools Tools
	// Recall finds the agents' memories and knowledge; nil recalls none.
	Recall Recall
	// TraceContent records the messages, tool arguments and results in the
	// turn's spans (AGENTD_TRACE_CONTENT); off, spans carry no content.
	TraceContent bool
	// Prices prices the runs' provider calls (price.Builtin when zero); an
	// agent's modelSettings.price wins over it.
	Prices price.Table
	// Remotes asks the remote agents of settings.agents.remote; nil
	// offers none.
	Remotes Remotes
	// AskWait is how long ask_agent waits for the asked run
	// (AGENTD_PROVIDER_TIMEOUT × 2; DefaultAskWait when zero).
	AskWait time.Duration
}

// Service runs turns. It is safe for concurrent use.
type Service struct {
	cfg     Config
	metrics *providerMetrics
	bg      sync.WaitGroup // summaries and background runs
	board   *board         // what this process's runs tell each other
	// handingOver is set once the process stops and hands its runs over.
	handingOver atomic.Bool
	chars       characters
}

// Close waits for the work a Service does after its turns (summaries)
// and for its background runs.
func (s *Service) Close() { s.bg.Wait() }

// Stop is Close for a stopping process: the runs still going on here are
// handed over to be resumed elsewhere, then Close waits for the rest.
func (s *Service) Stop() {
	s.HandOver()
	s.Close()
}

// New returns a Service; Stores (all three), Model and Semaphore are
// required.
func New(cfg Config) (*Service, error) {
	st := cfg.Stores
	if st.Agents == nil || st.Conversations == nil || st.Analytics == nil || st.Runs == nil || st.Budgets == nil || cfg.Model == nil || cfg.Semaphore == nil {
		return nil, errors.New("turn: Stores, Model and Semaphore are required")
	}
	if cfg.ErrorCooldown <= 0 {
		cfg.ErrorCooldown = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AskWait <= 0 {
		cfg.AskWait = DefaultAskWait
	}
	if cfg.Prices.IsZero() {
		cfg.Prices = price.Builtin()
	}
	m, err := newProviderMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, metrics: m, board: newBoard()}, nil
}

// Input is one message to an agent, from the API or a platform.
type Input struct {
	AccountID, AgentID string
	Text               string
	// UserID is the speaker ("<platform>:<user id>" on platforms); "" when
	// the API message names none.
	UserID string
	// UserName is the speaker's display name when the platform gives one.
	UserName string
	// Conv is the conversation the exchange is stored in: a room, else the
	// speaker's direct conversation; Platform is set.
	Conv domain.ConversationRef
	// Platform and Channel are the prompt's context ("" for none).
	Platform, Channel string
	// ChatID is the chat of Platform the reply goes to (a Telegram chat
	// id, a Discord channel id), "" when it goes to none: a reminder the
	// agent sets (schedule_reminder) is sent there too.
	ChatID string
	// Shape is what the platform asks of the reply's form (X's posts and
	// limit); the zero Shaping asks nothing.
	Shape Shaping
	// Slot is whether the turn takes a slot of the agent's
	// MaxInFlightPerAgent, and what it does when none is free.
	Slot SlotPolicy
	// RequestID names the request in the log ("" for none).
	RequestID string
	// Source is the way the message came in, stored on its run.
	Source domain.RunSource
	// Strategy is what the message does when its conversation has an
	// active run; "" for the agent's setting (else enqueue).
	Strategy domain.Strategy
	// ParentRunID, on an ask_agent's message, is the asking run; AskDepth,
	// on a message another server's ask sent, the runs of that chain so far.
	ParentRunID string
	AskDepth    int
	// StartAtOnce starts the run as it is accepted when no run of its
	// conversation is ahead of it, for a caller that shows nobody the
	// run queued (a plain Send Message): one write fewer. Otherwise, and
	// when a run is ahead, Start starts it.
	StartAtOnce bool
	// ScheduleID and ScheduleDue, on a schedule's message, are the
	// schedule and the due time it fires: Accept makes the run only when
	// it claims that due time (else domain.ErrScheduleTaken).
	ScheduleID  string
	ScheduleDue time.Time
	// Given, when not nil, is the conversation so far as the caller sent
	// it (OpenAI Chat Completions without `user`), oldest first, roles
	// user and assistant only: the prompt takes its history from it, cut
	// to the character's window and context budget as stored history is,
	// and the stored history is not read.
	Given []llm.Message
	// Instructions, when not "", are the caller's own, added after the
	// character's system prompt (the OpenAI Responses API's).
	Instructions string
	// MaxTokens and Temperature, when not nil, override the character's
	// modelSettings for this turn.
	MaxTokens   *int
	Temperature *float64
}

// Shaping is what a platform asks of a reply's form.
type Shaping struct {
	// Post asks for an original post written from the character
	// (postExamples, topics, style) instead of an answer; Text is filled
	// with the post prompt once the character is read.
	Post bool
	// MaxChars, when positive, is the platform's limit on a message: the
	// reply is shortened to it at a word boundary before it is stored, so
	// history keeps what the platform shows.
	MaxChars int
	// Length measures a reply against MaxChars as the platform counts
	// (X weighs CJK and emoji double, links 23); nil counts characters.
	Length func(string) int
}

// SlotPolicy says whether a turn takes a slot of the agent's
// MaxInFlightPerAgent, and what it does when none is free.
type SlotPolicy int

// The slot policies.
const (
	// SlotNone takes no slot (the zero value).
	SlotNone SlotPolicy = iota
	// SlotRefuseWhenFull takes a slot and refuses the turn with ErrBusy
	// when none is free (the API's turns).
	SlotRefuseWhenFull
	// SlotWait takes a slot, waiting until one is free or ctx ends (then
	// ctx's error): the platforms' turns, which must not be refused.
	SlotWait
)

// Turn is one message between the checks and the reply. Release frees its
// slot; Generate and Stream release it.
type Turn struct {
	replyID string // the reply's message id, known from the start
	// convID is the conversation's id, "" for a turn without one: it
	// exists from the moment the turn is accepted, so the first exchange's
	// tool calls and memories name it too.
	convID  string
	agent   domain.Agent
	apiKey  string // the agent's own provider key, "" for the environment's
	secrets domain.Secrets
	in      Input
	req     llm.Request
	tools   *toolRun // nil when the turn offers no tools
	start   time.Time
	release func()
	// runID is the turn's run, set when it is accepted; run is the run as
	// last read (under runMu: a detached run's goroutine writes it while
	// its caller reads it); merged is set when the message was merged
	// into a queued run, which t then follows; stoppedAs is the status of
	// a run stopped while it ran.
	runID     string
	runMu     sync.Mutex
	run       domain.Run
	merged    bool
	stoppedAs atomic.Value
	stoppedBy atomic.Value
	stoppedAt atomic.Value // when it was stopped: what was said of the reply dates from then
	ended     atomic.Bool  // the run's end is stored
	svc       *Service
	// What the prompt recalled, for the context preview.
	memories []domain.Memory
	chunks   []domain.KnowledgeChunk
	// limits are the budgets that hold the run, read once (nil before);
	// checked is what was spent when they were checked (nil when they
	// were not, in this process).
	limits  *domain.BudgetLimits
	checked *domain.BudgetSpend
}

// Release frees the turn's concurrency slot and ends its run as
// cancelled unless it ended (a turn prepared and never answered); it is
// idempotent.
func (t *Turn) Release() {
	if t.release != nil {
		t.release()
	}
	if t.runID != "" && !t.merged && !t.ended.Load() {
		t.svc.endRun(context.Background(), t, domain.RunCancelled, nil, "", "")
	}
}

// Run is the turn's run as it was last read.
func (t *Turn) Run() domain.Run {
	t.runMu.Lock()
	defer t.runMu.Unlock()
	return t.run
}

// setRun keeps the run as it was last read.
func (t *Turn) setRun(r domain.Run) {
	t.runMu.Lock()
	defer t.runMu.Unlock()
	t.run = r
}

// ReplyID is the id the reply is stored under, known before it is made
// (a stream's start event names it).
func (t *Turn) ReplyID() string { return t.replyID }

// AccountID and AgentID say whose turn it is.
func (t *Turn) AccountID() string { return t.agent.AccountID }

// AgentID is the id of the agent answering.
func (t *Turn) AgentID() string { return t.agent.ID }

// Result is the stored reply of a turn.
type Result = domain.Reply

// Metadata describes how the reply was made.
type Metadata = domain.ReplyMetadata

// Prepare is Accept then Start: the turn, ready to call the provider, once
// its run is first of its conversation. The caller must call Release, or
// Generate or Stream.
func (s *Service) Prepare(ctx context.Context, in Input) (*Turn, error) {
	t, err := s.Accept(ctx, in)
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// Accept does every check that can refuse a message before the provider
// is called, and stores the message as a run queued in its conversation
// under its strategy (a refused message makes no run). A turn limited by
// SlotRefuseWhenFull is refused when the agent's slots are all taken; it
// keeps the slot it took while its run can start at once.
func (s *Service) Accept(ctx context.Context, in Input) (*Turn, error) {
	if strings.TrimSpace(in.Text) == "" && !in.Shape.Post {
		return nil, ErrEmptyText
	}
	t, err := s.newTurn(ctx, in, time.Now())
	if err != nil {
		return nil, err
	}
	t.replyID = s.cfg.Stores.Conversations.NewMessageID(t.start)
	if err := s.checkBudget(ctx, t); err != nil {
		var over *domain.BudgetExceededError
		if errors.As(err, &over) && !in.Source.Requested() {
			err = s.refuseRun(ctx, t, over)
		}
		return nil, err
	}
	if in.Slot == SlotRefuseWhenFull {
		if t.release, err = s.acquireSlot(ctx, t.agent.ID, in.Slot); err != nil {
			return nil, err
		}
	}
	if t.convID, err = s.cfg.Stores.Conversations.OpenConversation(ctx, t.agent.AccountID, t.agent.ID, in.Conv); err == nil {
		err = s.accept(ctx, t)
	}
	if err != nil || t.merged {
		t.Release()
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// newTurn is the turn of in, which arrived at start, once its agent can
// answer it: active or past its cool-down, its secrets readable, its
// provider configured.
func (s *Service) newTurn(ctx context.Context, in Input, start time.Time) (*Turn, error) {
	agent, err := s.cfg.Stores.Agents.GetAgent(ctx, in.AccountID, in.AgentID)
	if err != nil {
		return nil, err
	}
	if err := CanAnswer(agent, time.Now()); err != nil {
		return nil, err
	}
	secrets, err := s.secrets(ctx, agent)
	if err != nil {
		return nil, err
	}
	apiKey := secrets.String(llm.APIKeyVar(agent.ModelProvider))
	if err := s.cfg.Model.Configured(agent.ModelProvider, apiKey); err != nil {
		return nil, s.providerFailure(ctx, in.RequestID, agent, err)
	}
	return &Turn{agent: agent, apiKey: apiKey, in: in, start: start, secrets: secrets, svc: s}, nil
}

// Start waits until t's run is first of its conversation and starts it,
// takes the turn's slot (a queued run holds none) and builds the provider
// request. A turn merged into another run starts nothing: Generate and
// Stream follow that run. On an error the run has ended and the slot is
// free.
func (s *Service) Start(ctx context.Context, t *Turn) error {
	if t.merged {
		return nil
	}
	var err error
	if t.Run().Status != domain.RunRunning { // a resumed running run holds its lane
		err = s.awaitTurn(ctx, t, func() {
			if t.release != nil {
				t.release() // a queued run holds no slot
				t.release = nil
			}
		})
	}
	if err == nil && t.release == nil {
		t.release, err = s.acquireSlot(ctx, t.agent.ID, afterQueue(t.in.Slot))
	}
	if err == nil {
		if t.req, err = s.providerRequest(ctx, t); err == nil {
			t.tools, err = s.newToolRun(ctx, t, t.secrets)
		}
	}
	if err != nil {
		t.Release()
		if !t.Run().Status.Final() {
			s.endRun(ctx, t, domain.RunFailed, nil, "INTERNAL_ERROR", "The run could not start.")
		}
		return err
	}
	return nil
}

// afterQueue is the slot policy of a turn whose run waited its turn: it
// waits for a slot rather than being refused.
func afterQueue(p SlotPolicy) SlotPolicy {
	if p == SlotNone {
		return SlotNone
	}
	return SlotWait
}

// acquireSlot takes a slot of the agent's MaxInFlightPerAgent for a turn
// that needs one and returns its release (a no-op for a turn that needs
// none, SlotNone). A SlotRefuseWhenFull turn is refused with ErrBusy when
// the agent is full; a SlotWait turn polls the Semaphore with a growing,
// jittered back-off until a slot frees or ctx ends. A Semaphore failure is
// returned as is.
func (s *Service) acquireSlot(ctx context.Context, agentID string, slot SlotPolicy) (func(), error) {
	if slot != SlotRefuseWhenFull && slot != SlotWait {
		return func() {}, nil
	}
	key := "agent:" + agentID
	backoff := slotPollMin
	for {
		release, ok, err := s.cfg.Semaphore.TryAcquire(ctx, key, MaxInFlightPerAgent)
		switch {
		case err != nil:
			return nil, err
		case ok:
			return release, nil
		case slot != SlotWait:
			return nil, ErrBusy
		}
		wait := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil, ctx.Err()
		case <-wait.C:
		}
		backoff = min(2*backoff, slotPollMax)
	}
}

// Generate asks the provider for the whole reply of t, running the tools
// it asks for, and finishes it.
func (s *Service) Generate(ctx context.Context, t *Turn) (res Result, err error) {
	defer t.Release()
	defer s.recoverRun(ctx, t, &err)
	if t.merged {
		return s.followMerged(ctx, t)
	}
	ctx, stop := s.watch(ctx, t)
	defer stop()
	reply, calls, err := s.converse(ctx, t, s.cfg.Model.Generate, nil)
	if ok, err := s.suspended(ctx, t, err); ok {
		return Result{RunID: t.runID, MessageID: t.replyID}, err
	}
	res, err = s.finish(ctx, t, reply, calls, err)
	return s.settle(ctx, t, res, err)
}

// Stream asks the provider for the reply of t, passing each fragment and
// each tool call's start and end to emit as they come, and finishes it. An
// error of emit, or ctx ending, ends the turn: the part already produced is
// stored as partial and returned, Partial set, with the error.
func (s *Service) Stream(ctx context.Context, t *Turn, emit func(Event) error) (res Result, err error) {
	defer t.Release()
	defer s.recoverRun(ctx, t, &err)
	if t.merged {
		res, err = s.followMerged(ctx, t)
		if err == nil {
			err = emit(Event{Kind: EventToken, Token: res.Text})
		}
		return res, err
	}
	ctx, stop := s.watch(ctx, t)
	defer stop()
	said := false // a call's text follows earlier text after a blank line
	ask := func(ctx context.Context, req llm.Request) (llm.Reply, error) {
		first := true
		return s.cfg.Model.Stream(ctx, req, func(tok string) error {
			if first && said {
				tok = stepSeparator + tok
			}
			first, said = false, true
			return emit(Event{Kind: EventToken, Token: tok})
		})
	}
	reply, calls, err := s.converse(ctx, t, ask, emit)
	if ok, err := s.suspended(ctx, t, err); ok {
		if waiting := (*AwaitingDecisionError)(nil); errors.As(err, &waiting) {
			_ = emit(Event{Kind: EventRequiresAction, RunID: t.runID, Required: waiting.Run.RequiredAction()}) // the error stays the wait
		}
		return Result{RunID: t.runID, MessageID: t.replyID}, err
	}
	res, err = s.finish(ctx, t, reply, calls, err)
	return s.settle(ctx, t, res, err)
}

// Reply runs a whole turn: Prepare, then Generate.
func (s *Service) Reply(ctx context.Context, in Input) (Result, error) {
	t, err := s.Prepare(ctx, in)
	if err != nil {
		return Result{}, err
	}
	return s.Generate(ctx, t)
}

// errSecretKeyReason is the reason an agent whose secrets do not decrypt
// gives; it names the setting to fix and no secret.
const errSecretKeyReason = "The agent's secrets cannot be decrypted: AGENTD_SECRET_KEY is not set or is not the key they were written with."

// secrets opens the agent's secrets: its own provider key (the secret
// named like the provider's variable, e.g. OPENAI_API_KEY), its action
// secret and MCP headers. Secrets that do not decrypt refuse the turn
// without putting the agent in error: the fix is the server's key, not the
// provider.
func (s *Service) secrets(ctx context.Context, agent domain.Agent) (domain.Secrets, error) {
	secrets, err := s.cfg.Stores.Agents.Secrets(agent)
	if errors.Is(err, domain.ErrSecretUnreadable) {
		s.cfg.Logger.WarnContext(ctx, "agent secrets cannot be decrypted", "agent", agent.ID, "error", err)
		return nil, &UnavailableError{Status: agent.Status, Reason: errSecretKeyReason}
	}
	return secrets, err
}
