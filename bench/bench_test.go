package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
