package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

// TestStoreGauges: the connections by platform and state and the pending
// webhook deliveries are read from the database at each scrape.
func TestStoreGauges(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := storetest.Open(t, dsn)
		acct := storetest.Account(t, st, "acme")
		reg := prometheus.NewRegistry()
		reg.MustRegister(newStoreGauges(st, slog.New(slog.DiscardHandler)))
		if got := gauge(t, reg, "agentd_webhook_deliveries_pending"); got != 0 {
			t.Errorf("pending deliveries of an empty database: %v", got)
		}

		var leases []domain.Lease
		for _, name := range []string{"a", "b", "c"} {
			agent, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Name: name, ModelProvider: "openai", Model: "m",
				Status: domain.StatusActive, Fields: map[string]json.RawMessage{"name": json.RawMessage(strconv.Quote(name))}}, -1)
			if err != nil {
				t.Fatal(err)
			}
			l, ok, err := st.Connections().AcquireLease(ctx, agent.ID, "telegram", "replica-1", time.Minute)
			if err != nil || !ok {
				t.Fatalf("lease: %v %v", ok, err)
			}
			leases = append(leases, l)
		}
		if err := st.Connections().SetConnectionState(ctx, leases[0], domain.ConnConnected, ""); err != nil {
			t.Fatal(err)
		}
		w, err := st.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/", Events: []string{"*"}, Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := st.Webhooks().TestWebhook(ctx, acct.ID, w.ID); err != nil {
				t.Fatal(err)
			}
		}

		if got := gauge(t, reg, "agentd_connections", "platform", "telegram", "state", "connected"); got != 1 {
			t.Errorf("connected telegram connections: %v, want 1", got)
		}
		if got := gauge(t, reg, "agentd_connections", "platform", "telegram", "state", "connecting"); got != 2 {
			t.Errorf("connecting telegram connections: %v, want 2", got)
		}
		if got := gauge(t, reg, "agentd_webhook_deliveries_pending"); got != 2 {
			t.Errorf("pending deliveries: %v, want 2", got)
		}
	})
}

// gauge reads the gauge name with labels from g; -1 when absent.
func gauge(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := g.Gather()
	testutil.OK(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
