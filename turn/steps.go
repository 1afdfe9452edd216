package turn

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

// stepLog is a run's finished steps, stored as each provider call that
// asks for tools and each of its calls finishes: a run resumed elsewhere
// starts from them and never runs a finished call again.
type stepLog struct {
	mu    sync.Mutex
	steps []domain.RunStep
	// save stores the whole list (nil stores nothing: a turn without a
	// run); a failure is logged, the turn goes on.
	save   func(ctx context.Context, steps []domain.RunStep) error
	logger *slog.Logger
	runID  string
	// cost prices a provider call: stored with its step, it is what the
	// run has spent so far for a budget check.
	cost func(llm.Reply) int64
}

// newStepLog starts the log of t's run from its stored steps.
func (s *Service) newStepLog(t *Turn) *stepLog {
	runID := t.runID
	l := &stepLog{steps: t.Run().Steps, runID: runID, logger: s.cfg.Logger,
		cost: func(r llm.Reply) int64 {
			return s.priceOf(t.agent, r.Model).Cost(r.Usage.PromptTokens, r.Usage.CompletionTokens)
		}}
	if runID != "" {
		l.save = func(ctx context.Context, steps []domain.RunStep) error {
			return s.cfg.Stores.Runs.SaveRunSteps(ctx, runID, steps)
		}
	}
	return l
}

// stored is how many steps the log holds.
func (l *stepLog) stored() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.steps)
}

// all is the steps as stored so far (a copy).
func (l *stepLog) all() []domain.RunStep {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.steps)
}

// step is step i as stored (its calls a copy of the log's).
func (l *stepLog) step(i int) domain.RunStep {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.steps[i]
	st.Calls = slices.Clone(st.Calls)
	return st
}

// add stores a provider call that asked for calls, each with its record
// (agentd's id made once, so a resumed run keeps it),
// and returns its index. A call of a tool waits names (with arguments it
// can run with) waits for a decision.
func (l *stepLog) add(ctx context.Context, reply llm.Reply, waits func(name string) bool) int {
	st := domain.RunStep{Text: reply.Text, InputTokens: reply.Usage.PromptTokens,
		OutputTokens: reply.Usage.CompletionTokens, TotalTokens: reply.Usage.TotalTokens, Model: reply.Model,
		CostMicros: l.cost(reply)}
	for _, c := range reply.ToolCalls {
		rec, _, ok := newRecord(c)
		st.Calls = append(st.Calls, domain.StepCall{ProviderID: c.ID, Arguments: c.Arguments, Record: rec, Waits: ok && waits(c.Name)})
	}
	l.mu.Lock()
	l.steps = append(l.steps, st)
	i := len(l.steps) - 1
	l.mu.Unlock()
	l.store(ctx)
	return i
}

// done stores call j of step i finished with its record and its result as
// the model sees it.
func (l *stepLog) done(ctx context.Context, i, j int, rec domain.ToolCall, result string) {
	l.mu.Lock()
	c := &l.steps[i].Calls[j]
	c.Record, c.Result, c.Done = rec, result, true
	l.mu.Unlock()
	l.store(ctx)
}

// store writes the whole log; writes of one run are one at a time, so the
// last stored is the latest.
func (l *stepLog) store(ctx context.Context) {
	if l.save == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if err := l.save(writeCtx, l.steps); err != nil {
		l.logger.WarnContext(ctx, "run step not stored", "run", l.runID, "error", err)
	}
}

// replyOf is the provider's reply a stored step was made from.
func replyOf(st domain.RunStep) llm.Reply {
	return llm.Reply{Text: st.Text, Model: st.Model, Usage: llm.Usage{PromptTokens: st.InputTokens,
		CompletionTokens: st.OutputTokens, TotalTokens: st.TotalTokens}}
}

// callOf is the call of a stored step as the model wrote it.
func callOf(c domain.StepCall) llm.ToolCall {
	return llm.ToolCall{ID: c.ProviderID, Name: c.Record.Name, Arguments: c.Arguments}
}
