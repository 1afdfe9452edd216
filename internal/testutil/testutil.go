// Package testutil holds the helpers tests of every package share: waiting
// for a state, a log destination and a log handler safe for concurrent use,
// and reading a counter. It imports nothing of agentd, so any package's
// tests, internal ones included, may use it.
package testutil

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Timeout bounds every wait for a state that must come. It is no speed
// assertion (a passing test never waits that long), so it is generous:
// the race detector slows code several times over, and make test runs
// two packages at once on CI's two cores, where the slowest wait seen, 50
// failing webhook deliveries on PostgreSQL (commit 3af91e8), took over
// 15 s against 2 s alone. A test that promises a bound says so with
// Within.
const Timeout = 20 * time.Second

// interval is the pause between two checks.
const interval = 10 * time.Millisecond

// Eventually calls check every 10 ms until it returns nil, and fails t
// when it has not within Timeout. check returns what it saw, such as
// fmt.Errorf("state %q", got), so that a timeout says where the state
// stopped: "what: not within 20s; last: state "connecting"".
func Eventually(t testing.TB, what string, check func() error) {
	t.Helper()
	wait(t, what, Timeout, check)
}

// Within is Eventually for a state promised within bound (a cache's
// lifetime, a documented reaction time): it fails t unless check returns
// nil within bound. It waits Timeout at least, so a late state is
// reported with the time it took.
func Within(t testing.TB, what string, bound time.Duration, check func() error) {
	t.Helper()
	start := time.Now()
	wait(t, what, max(bound, Timeout), check)
	if took := time.Since(start); took > bound {
		t.Fatalf("%s: after %s, beyond the %s promised", what, took.Round(time.Millisecond), bound)
	}
}

func wait(t testing.TB, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %v", what, timeout, err)
		}
		time.Sleep(interval)
	}
}

// Equal is a check for Eventually: nil when got is want, else an error
// naming what was seen ("replies 1, want 2").
func Equal[T comparable](what string, got, want T) error {
	if got != want {
		return fmt.Errorf("%s %v, want %v", what, got, want)
	}
	return nil
}

// OK fails t on a non-nil error.
func OK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// SyncBuffer is a bytes.Buffer safe for writers and a reader in different
// goroutines: a process's output, a logger's destination.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Counter reads the counter name of the series whose labels include
// every pair of labels (name, value, name, value...) from g; 0 when g has
// no such series.
func Counter(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m.GetLabel(), labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// hasLabels reports whether have includes every pair of want.
func hasLabels(have []*dto.LabelPair, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range have {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Logs is a slog.Handler keeping every record, for tests of what code
// logs. Its methods are safe for concurrent use.
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

// Unavailable ends a test that cannot have what it needs (a server, a
// program), said by what, with err the reason. With CI set in the
// environment the machine must have it (.ci/setup installs it), so the test
// fails; elsewhere it is skipped with a line naming what is missing and how
// to get it: `make test` runs .ci/setup, which installs and starts it.
func Unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: %v (CI is set: .ci/setup must provide it)", what, err)
	}
	t.Skipf("SKIP: %s: %v (make test runs .ci/setup to install and start it; CI never skips)", what, err)
}
