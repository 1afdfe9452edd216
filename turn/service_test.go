package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/turn"
)

// scriptedModel answers with its replies in order, then with its last.
type scriptedModel struct {
	mu      sync.Mutex
	replies []func() (llm.Reply, error)
	calls   int
}

func (m *scriptedModel) Generate(context.Context, llm.Request) (llm.Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.replies[min(m.calls, len(m.replies)-1)]
	m.calls++
	return r()
}

func (m *scriptedModel) Stream(ctx context.Context, req llm.Request, _ func(string) error) (llm.Reply, error) {
	return m.Generate(ctx, req)
}

func (m *scriptedModel) Configured(string, string) error { return nil }

// newService returns a Service over a fresh SQLite store and model, with an
// account and an agent of it.
func newService(t *testing.T, model turn.Model) (*turn.Service, *store.Store, domain.Agent) {
	return newServiceWith(t, turn.Config{Model: model}, nil, nil)
}

// newServiceWith is newService with cfg's Model and Tools, an agent with
// the character members fields besides its name, and a store opened with
// opts; tweak, when given, completes cfg once the store is open.
func newServiceWith(t *testing.T, cfg turn.Config, fields map[string]json.RawMessage, opts []store.Option, tweak ...func(*store.Store, *turn.Config)) (*turn.Service, *store.Store, domain.Agent) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "agentd.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	acct, err := st.Accounts().CreateAccount(ctx, domain.Account{Name: "acme", Tier: domain.TierEnterprise, AgentQuota: 10})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]json.RawMessage{"name": json.RawMessage(`"Ada"`),
		"modelProvider": json.RawMessage(`"openai"`), "model": json.RawMessage(`"m"`)}
	for k, v := range fields {
		all[k] = v
	}
	agent, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Name: "Ada", ModelProvider: "openai", Model: "m",
		Status: domain.StatusActive, Fields: all}, -1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Stores = turn.Stores{Agents: st.Agents(), Conversations: st.Conversations(), Analytics: st.Analytics(), Runs: st.Runs(), Budgets: st.Analytics()}
	cfg.Semaphore, cfg.ErrorCooldown = limit.NewMemorySemaphore(), time.Hour
	for _, f := range tweak {
		f(st, &cfg)
	}
	svc, err := turn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc, st, agent
}

// TestPlatformTurnShortensBeforeStoring: a reply longer than the
// platform's limit is cut at a word boundary, and history keeps what the
// platform shows.
func TestPlatformTurnShortensBeforeStoring(t *testing.T) {
	model := &scriptedModel{replies: []func() (llm.Reply, error){func() (llm.Reply, error) {
		return llm.Reply{Text: strings.Repeat("lovely tea ", 40)}, nil
	}}}
	svc, st, agent := newService(t, model)
	ctx := context.Background()
	conv := domain.ConversationRef{RoomID: "twitter:posts", Platform: "twitter"}
	res, err := svc.Reply(ctx, turn.Input{AccountID: agent.AccountID, AgentID: agent.ID, Text: "hi", Conv: conv, Shape: turn.Shaping{MaxChars: 30}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "lovely tea lovely tea lovely" {
		t.Fatalf("reply %q, want it cut at the last word within 30 characters", res.Text)
	}
	history, err := st.Conversations().History(ctx, agent.AccountID, agent.ID, conv, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 2 || history[1].Text != res.Text {
		t.Fatalf("history %+v, want the shortened reply", history)
	}
}

// TestAgentInErrorRecoversAfterCooldown: a provider failure puts the agent
// in error; during the cool-down the turn is refused without calling the
// provider; after it the provider is tried again and, when it answers, the
// agent is active again. Any way in (API or platform) takes this path.
func TestAgentInErrorRecoversAfterCooldown(t *testing.T) {
	down := &llm.Error{Kind: llm.KindRateLimited, Provider: "openai", Reason: "rate limited", RetryAfter: 200 * time.Millisecond}
	model := &scriptedModel{replies: []func() (llm.Reply, error){
		func() (llm.Reply, error) { return llm.Reply{}, down },
		func() (llm.Reply, error) { return llm.Reply{Text: "back"}, nil },
	}}
	svc, st, agent := newService(t, model)
	ctx := context.Background()
	in := turn.Input{AccountID: agent.AccountID, AgentID: agent.ID, Text: "hi",
		Conv: domain.ConversationRef{UserID: "telegram:1", Platform: "telegram"}, UserID: "telegram:1"}
	var pe *turn.ProviderError
	if _, err := svc.Reply(ctx, in); !errors.As(err, &pe) || pe.Status != domain.StatusError {
		t.Fatalf("first turn: %v, want a provider error leaving the agent in error", err)
	}
	failedAt := time.Now()
	var ue *turn.UnavailableError
	if _, err := svc.Reply(ctx, in); !errors.As(err, &ue) || ue.Reason != "rate limited" {
		t.Fatalf("turn during the cool-down: %v, want unavailable", err)
	}
	if model.calls != 1 {
		t.Fatalf("%d provider calls, want the refused turn to make none", model.calls)
	}
	time.Sleep(time.Until(failedAt.Add(250 * time.Millisecond))) // past the provider's Retry-After
	res, err := svc.Reply(ctx, in)
	if err != nil || res.Text != "back" {
		t.Fatalf("turn after the cool-down: %+v, %v", res, err)
	}
	if a, err := st.Agents().GetAgent(ctx, agent.AccountID, agent.ID); err != nil || a.Status != domain.StatusActive {
		t.Fatalf("agent after the recovery: %v, %v; want active", a.Status, err)
	}
}

// TestPlatformTurnWaitsForSlot: platform turns (SlotWait) count against
// the agent's MaxInFlightPerAgent like the API's; when every slot is held
// the API's turn is refused with ErrBusy while a platform turn waits, takes
// the slot as soon as one is released, and gives up when its ctx ends.
func TestPlatformTurnWaitsForSlot(t *testing.T) {
	model := &scriptedModel{replies: []func() (llm.Reply, error){func() (llm.Reply, error) {
		return llm.Reply{Text: "hello"}, nil
	}}}
	svc, _, agent := newService(t, model)
	ctx := context.Background()
	platform := turn.Input{AccountID: agent.AccountID, AgentID: agent.ID, Text: "hi", UserID: "telegram:1",
		Conv: domain.ConversationRef{UserID: "telegram:1", Platform: "telegram"}, Slot: turn.SlotWait}
	api := turn.Input{AccountID: agent.AccountID, AgentID: agent.ID, Text: "hi", Slot: turn.SlotRefuseWhenFull}

	held := make([]*turn.Turn, 0, turn.MaxInFlightPerAgent)
	for i := range turn.MaxInFlightPerAgent {
		in := api
		if i%2 == 0 { // both kinds hold slots of the one cap, each in its own conversation
			in = platform
			in.UserID = fmt.Sprint("telegram:", i)
			in.Conv.UserID = in.UserID
		}
		tr, err := svc.Prepare(ctx, in)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		held = append(held, tr)
	}
	if _, err := svc.Prepare(ctx, api); !errors.Is(err, turn.ErrBusy) {
		t.Fatalf("API turn with every slot held: %v, want ErrBusy", err)
	}

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := svc.Prepare(short, platform); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("platform turn whose ctx ends while waiting: %v, want its ctx's error", err)
	}

	type outcome struct {
		res turn.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := svc.Reply(ctx, platform)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		t.Fatalf("platform turn did not wait for a slot: %+v, %v", o.res, o.err)
	case <-time.After(150 * time.Millisecond):
	}
	held[0].Release()
	select {
	case o := <-done:
		if o.err != nil || o.res.Text != "hello" {
			t.Fatalf("platform turn after a release: %+v, %v", o.res, o.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("platform turn still waiting after a slot was released")
	}
	// Its slot is free again once it has answered: nine are held, one is
	// free.
	tr, err := svc.Prepare(ctx, api)
	if err != nil {
		t.Fatalf("API turn after the platform turn answered: %v", err)
	}
	tr.Release()
	for _, tr := range held[1:] {
		tr.Release()
	}
}
