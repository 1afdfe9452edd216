package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
	"github.com/prometheus/client_golang/prometheus"
)

// providerMetrics count the provider calls of turns, the tokens they use
// and the tool calls they make.
type providerMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
	tools    *prometheus.CounterVec
}

func newProviderMetrics(reg prometheus.Registerer) (*providerMetrics, error) {
	m := &providerMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_provider_calls_total", Help: "Model provider calls by provider and outcome.",
		}, []string{"provider", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agentd_provider_call_duration_seconds", Help: "Time from a message's arrival to its reply, by provider.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 40, 60, 120},
		}, []string{"provider"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_tokens_total", Help: "Tokens of turns as the provider reported them, by provider and kind (prompt, completion).",
		}, []string{"provider", "kind"}),
		// By outcome only: tool names are the agents' own, unbounded.
		tools: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_tool_calls_total", Help: "Tool calls of turns by outcome (ok, error).",
		}, []string{"outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.calls, m.duration, m.tokens, m.tools} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("turn: register metrics: %w", err)
		}
	}
	return m, nil
}

// observe counts one provider call by its outcome.
func (m *providerMetrics) observe(provider string, err error, elapsed time.Duration) {
	m.calls.WithLabelValues(provider, outcome(err)).Inc()
	if err == nil {
		m.duration.WithLabelValues(provider).Observe(elapsed.Seconds())
	}
}

// observeUsage counts the tokens a turn used and its tool calls.
func (m *providerMetrics) observeUsage(provider string, u llm.Usage, calls []domain.ToolCall) {
	if u.PromptTokens > 0 {
		m.tokens.WithLabelValues(provider, "prompt").Add(float64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		m.tokens.WithLabelValues(provider, "completion").Add(float64(u.CompletionTokens))
	}
	for _, c := range calls {
		if c.OK {
			m.tools.WithLabelValues("ok").Inc()
		} else {
			m.tools.WithLabelValues("error").Inc()
		}
	}
}

// outcome names an outcome for the metrics: "ok", the llm error kind
// ("rate_limited", "request_failed", ...), "canceled" when the caller went
// away, else "error".
func outcome(err error) string {
	var le *llm.Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &le):
		return strings.ReplaceAll(le.Kind.String(), " ", "_")
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}
