package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/llm"
	"github.com/prometheus/client_golang/prometheus"
)

// serverMetrics are the Prometheus collectors of the HTTP layer and of the
// provider calls it makes.
type serverMetrics struct {
	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	providerCalls    *prometheus.CounterVec
	providerDuration *prometheus.HistogramVec
}

func newServerMetrics(reg prometheus.Registerer) (*serverMetrics, error) {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agentd_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		providerCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_provider_calls_total", Help: "Model provider calls by provider and outcome.",
		}, []string{"provider", "outcome"}),
		providerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agentd_provider_call_duration_seconds", Help: "Time from a message's arrival to its reply, by provider.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 40, 60, 120},
		}, []string{"provider"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.providerCalls, m.providerDuration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server: register metrics: %w", err)
		}
	}
	return m, nil
}

// observeProvider counts one provider call by its outcome.
func (m *serverMetrics) observeProvider(provider string, err error, elapsed time.Duration) {
	m.providerCalls.WithLabelValues(provider, providerOutcome(err)).Inc()
	if err == nil {
		m.providerDuration.WithLabelValues(provider).Observe(elapsed.Seconds())
	}
}

// providerOutcome names an outcome for the metrics: "ok", the llm error
// kind ("rate_limited", "request_failed", ...), "canceled" when the client
// went away, else "error".
func providerOutcome(err error) string {
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
