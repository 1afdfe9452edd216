// Package connecttest helps tests of connect and its platforms.
package connecttest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

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

// Logs is a slog.Handler keeping every record, for tests of what a
// connection logs. Its methods are safe for concurrent use.
type Logs struct {
	attrs []slog.Attr // from WithAttrs
	kept  *records
}

type records struct {
	mu   sync.Mutex
	list []Record
}

// Record is one kept log record.
type Record struct {
	Message string
	Attrs   map[string]slog.Value // its own and its logger's; groups are ignored
}

// NewLogs returns an empty Logs.
func NewLogs() *Logs { return &Logs{kept: &records{}} }

// Enabled keeps every level.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps r.
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Message: r.Message, Attrs: map[string]slog.Value{}}
	for _, a := range l.attrs {
		rec.Attrs[a.Key] = a.Value
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value
		return true
	})
	l.kept.mu.Lock()
	l.kept.list = append(l.kept.list, rec)
	l.kept.mu.Unlock()
	return nil
}

// WithAttrs returns a handler adding attrs to its records, kept with l's.
func (l *Logs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Logs{attrs: append(slices.Clip(l.attrs), attrs...), kept: l.kept}
}

// WithGroup returns l: groups are ignored.
func (l *Logs) WithGroup(string) slog.Handler { return l }

// Records returns the records with message msg, oldest first.
func (l *Logs) Records(msg string) []Record {
	l.kept.mu.Lock()
	defer l.kept.mu.Unlock()
	var out []Record
	for _, r := range l.kept.list {
		if r.Message == msg {
			out = append(out, r)
		}
	}
	return out
}

// Eventually polls cond every 20 ms for up to 5 s, the bound decisions.md
// gives connections to follow a change, and fails t if it never holds.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
