package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentd/agentd/store"
	"github.com/prometheus/client_golang/prometheus"
)

// gaugeTimeout bounds the queries of one scrape.
const gaugeTimeout = 2 * time.Second

// storeGauges reports, at each scrape, counts read from the database:
// platform connections by state and the webhook backlog. They are the
// whole service's, not one replica's: every replica reports the same
// figures, so aggregate them with max, not sum.
type storeGauges struct {
	st          *store.Store
	logger      *slog.Logger
	connections *prometheus.Desc
	pending     *prometheus.Desc
}

func newStoreGauges(st *store.Store, logger *slog.Logger) *storeGauges {
	return &storeGauges{
		st: st, logger: logger,
		connections: prometheus.NewDesc("agentd_connections",
			"Platform connections of every account by platform and state (the same on every replica).",
			[]string{"platform", "state"}, nil),
		pending: prometheus.NewDesc("agentd_webhook_deliveries_pending",
			"Webhook deliveries still to be sent, retries included (the same on every replica).", nil, nil),
	}
}

// Describe sends the descriptions of the gauges.
func (g *storeGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.connections
	ch <- g.pending
}

// Collect queries the database; a failed query leaves its gauge out of
// this scrape (logged), rather than failing the whole scrape.
func (g *storeGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), gaugeTimeout)
	defer cancel()
	if counts, err := g.st.Connections().CountConnections(ctx); err != nil {
		g.logger.Warn("metrics: counting connections", "error", err)
	} else {
		for _, c := range counts {
			ch <- prometheus.MustNewConstMetric(g.connections, prometheus.GaugeValue, float64(c.N), c.Platform, string(c.State))
		}
	}
	if n, err := g.st.Webhooks().CountPendingDeliveries(ctx); err != nil {
		g.logger.Warn("metrics: counting pending webhook deliveries", "error", err)
	} else {
		ch <- prometheus.MustNewConstMetric(g.pending, prometheus.GaugeValue, float64(n))
	}
}
