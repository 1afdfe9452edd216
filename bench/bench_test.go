package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/connect/telegram/telegramtest"
)

// These tests only check that the load generator and the servers work;
// they never assert speed.

func TestLoadAgainstBaselineAndFloor(t *testing.T) {
	ctx := context.Background()
	baseline := httptest.NewServer(baselineHandler(300))
	defer baseline.Close()
	f, err := openFloor(filepath.Join(t.TempDir(), "floor.db"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := f.seed("a", fixedDocument(300), 50)
	if err != nil {
		t.Fatal(err)
	}
	floor := httptest.NewServer(f.handler())
	defer floor.Close()
	for name, req := range map[string]request{
		"baseline get":  {method: "GET", url: baseline.URL + "/doc", want: 200},
		"baseline post": {method: "POST", url: baseline.URL + "/doc", body: agentBody, want: 201},
		"floor get":     {method: "GET", url: floor.URL + "/docs/" + ids[7], want: 200},
		"floor list":    {method: "GET", url: floor.URL + "/docs?limit=20", want: 200},
		"floor insert":  {method: "POST", url: floor.URL + "/docs", body: agentBody, want: 201},
	} {
		res := load(ctx, 4, 0, 200*time.Millisecond, func(ctx context.Context, c *http.Client, _ int64) (time.Duration, error) {
			return do(ctx, c, req)
		})
		if res.n == 0 || res.errs != 0 || res.quantile(0.99) < res.quantile(0.5) {
			t.Errorf("%s: %d requests, %d errors (%v), p50 %v p99 %v", name, res.n, res.errs, res.firstErr, res.quantile(0.5), res.quantile(0.99))
		}
	}
	if got := len(fixedDocument(300)); got != 300 {
		t.Errorf("baseline document is %d bytes, want 300", got)
	}
}

func TestLoadCountsWrongStatusesAsErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	res := load(context.Background(), 2, 0, 100*time.Millisecond, func(ctx context.Context, c *http.Client, _ int64) (time.Duration, error) {
		return do(ctx, c, request{method: "GET", url: srv.URL, want: 200})
	})
	if res.n != 0 || res.errs == 0 || !strings.Contains(res.firstErr.Error(), "status 404") {
		t.Errorf("%d ok, %d errors, first %v", res.n, res.errs, res.firstErr)
	}
}

// TestProviderStreamsAndTimesFirstToken checks the instant provider's
// stream and that it finds the marker of the newest message.
func TestProviderStreamsAndTimesFirstToken(t *testing.T) {
	p := newProvider()
	srv := httptest.NewServer(p)
	defer srv.Close()
	body := `{"stream":true,"messages":[{"role":"user","content":"ttft-1 old"},{"role":"user","content":"ttft-22 new"}]}`
	res, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if _, ok := p.firstSent("ttft-22"); !ok {
		t.Error("the newest marker was not recorded")
	}
	if _, ok := p.firstSent("ttft-1"); ok {
		t.Error("a marker of the history was recorded")
	}
}

// TestLeasesScenario runs the connection leases scenario on a few bots:
// every connection ends up connected under one replica's lease and the
// counter sees the renewals.
func TestLeasesScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("the scenario takes a few lease rounds")
	}
	const agents = 12
	tg := telegramtest.New(t)
	addBots(tg, agents)
	bots := botServer{url: tg.URL, stats: func(_ context.Context, calls bool) (botStats, error) { return statsOf(tg, agents, calls), nil }}
	o := leaseOptions{agents: agents, replicas: 3, window: 4 * time.Second, pollTimeout: 2 * time.Second,
		startLimit: time.Minute, stopLimit: 30 * time.Second, pgPool: 2, progressEvery: time.Hour}
	r, err := leasesOn(context.Background(), "sqlite", filepath.Join(t.TempDir(), "leases.db"), bots, o)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, n := range r.heldAtStart {
		held += n
	}
	if !r.allConnected || held != agents || !r.stopped {
		t.Errorf("all connected %v after %s, %d leases held (%v), stopped %v", r.allConnected, r.connectedAfter, held, r.heldAtStart, r.stopped)
	}
	// Stopping frees every lease: one by one as the runners end, and in one
	// statement for those whose release did not make it in time.
	if r.startup.writes.calls[mAcquireLease] < agents || r.steady.writes.calls[mRenewLeases] == 0 ||
		r.stop.writes.calls[mReleaseLease] == 0 || r.heldAfterStop == nil || len(r.heldAfterStop) != 0 {
		t.Errorf("acquired %d, renewed %d in the window, released %d at the stop, held after it %v",
			r.startup.writes.calls[mAcquireLease], r.steady.writes.calls[mRenewLeases],
			r.stop.writes.calls[mReleaseLease], r.heldAfterStop)
	}
	if s := leasesSection([]leaseRun{r}); !strings.HasPrefix(s, "## Connection leases (12 bots, 3 replicas)") {
		t.Errorf("section starts %q", s[:min(len(s), 60)])
	}
}

func TestSpliceSection(t *testing.T) {
	const sec = "## Connection leases (new)\n\nnew\n"
	for name, c := range map[string]struct{ in, want string }{
		"replaced":       {"# r\n\n## Connection leases (old)\n\nold\n\n## Targets\n\nt\n", "# r\n\n" + sec + "\n## Targets\n\nt\n"},
		"replaced last":  {"# r\n\n## Connection leases (old)\n\nold\n", "# r\n\n" + sec},
		"before targets": {"# r\n\n## Memory\n\nm\n\n## Targets\n\nt\n", "# r\n\n## Memory\n\nm\n\n" + sec + "\n## Targets\n\nt\n"},
		"appended":       {"# r\n\nx", "# r\n\nx\n\n" + sec},
	} {
		if got := spliceSection(c.in, leasesHeading, sec); got != c.want {
			t.Errorf("%s: got\n%q\nwant\n%q", name, got, c.want)
		}
	}
}
