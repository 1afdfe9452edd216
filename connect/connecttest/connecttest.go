// Package connecttest helps tests of connect and its platforms.
package connecttest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Dropped reads agentd_connection_messages_dropped_total for platform from
// g (the Registerer given to connect.New); 0 when it has no such series.
func Dropped(t testing.TB, g prometheus.Gatherer, platform string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != "agentd_connection_messages_dropped_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "platform" && l.GetValue() == platform {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
