package limit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func newTestLogger() (*slog.Logger, *testutil.SyncBuffer) {
	buf := &testutil.SyncBuffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

func counterValue(t *testing.T, errs *prometheus.CounterVec, op string) float64 {
	t.Helper()
	var m dto.Metric
	if err := errs.WithLabelValues(op).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestFailOpenCounterAdmitsWhenRedisIsDown(t *testing.T) {
	logger, logs := newTestLogger()
	errs := NewBackendErrors()
	c := FailOpenCounter(NewRedisCounter(deadRedisClient(t), "agentd-test-dead:"), logger, errs)
	for range 5 {
		res, err := c.Take(context.Background(), "k", 10)
		if err != nil || !res.Allowed || res.Limit != 10 || res.Remaining != 10 {
			t.Fatalf("Take: %+v, %v; want admitted", res, err)
		}
		if left := time.Until(res.Reset); left <= 0 || left > Window {
			t.Fatalf("reset in %v", left)
		}
	}
	if res, err := c.Peek(context.Background(), "k", 10); err != nil || !res.Allowed {
		t.Fatalf("Peek: %+v, %v; want admitted", res, err)
	}
	if got := counterValue(t, errs, OpTake); got != 6 {
		t.Errorf("take errors = %v, want 6", got)
	}
	if n := strings.Count(logs.String(), "backend error"); n != 1 {
		t.Errorf("%d warnings logged, want 1 (throttled):\n%s", n, logs)
	}
}

func TestFailOpenSemaphoreAdmitsWhenRedisIsDown(t *testing.T) {
	logger, logs := newTestLogger()
	errs := NewBackendErrors()
	s := FailOpenSemaphore(NewRedisSemaphore(deadRedisClient(t), "agentd-test-dead:", time.Second), logger, errs)
	release, ok, err := s.TryAcquire(context.Background(), "k", 1)
	if err != nil || !ok || release == nil {
		t.Fatalf("TryAcquire: %v, %v; want admitted", ok, err)
	}
	release()
	if got := counterValue(t, errs, OpAcquire); got != 1 {
		t.Errorf("acquire errors = %v, want 1", got)
	}
	if got := counterValue(t, errs, OpTake); got != 0 {
		t.Errorf("take errors = %v, want 0", got)
	}
	if !strings.Contains(logs.String(), "op=acquire") {
		t.Errorf("no warning logged:\n%s", logs)
	}
}

func TestFailOpenPassesResultsThrough(t *testing.T) {
	errs := NewBackendErrors()
	c := FailOpenCounter(NewMemoryCounter(), nil, errs)
	take(t, c, "k", 1)
	if res := take(t, c, "k", 1); res.Allowed {
		t.Errorf("over the limit admitted: %+v", res)
	}
	s := FailOpenSemaphore(NewMemorySemaphore(), nil, nil)
	release, _ := acquire(t, s, "k", 1)
	if _, ok := acquire(t, s, "k", 1); ok {
		t.Error("full semaphore admitted")
	}
	release()
	if got := counterValue(t, errs, OpTake); got != 0 {
		t.Errorf("take errors = %v, want 0", got)
	}
}

func TestFailOpenIgnoresCanceledRequests(t *testing.T) {
	logger, logs := newTestLogger()
	errs := NewBackendErrors()
	c := FailOpenCounter(fakeCounter{
		take: func(string, int64) (Result, error) { return Result{}, context.Canceled },
	}, logger, errs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := c.Take(ctx, "k", 1); err != nil || !res.Allowed {
		t.Fatalf("Take: %+v, %v", res, err)
	}
	if got := counterValue(t, errs, OpTake); got != 0 || logs.String() != "" {
		t.Errorf("canceled request recorded: errors %v, logs %q", got, logs)
	}
}

func TestBackendErrorsRegisters(t *testing.T) {
	reg := prometheus.NewRegistry()
	errs := NewBackendErrors()
	if err := reg.Register(errs); err != nil {
		t.Fatal(err)
	}
	c := FailOpenCounter(fakeCounter{
		take: func(string, int64) (Result, error) { return Result{}, errors.New("down") },
	}, slog.New(slog.DiscardHandler), errs)
	take(t, c, "k", 1)
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != "agentd_limit_backend_errors_total" {
		t.Fatalf("gathered %v, %v", families, err)
	}
}

func TestThrottledLogReportsSuppressed(t *testing.T) {
	logger, logs := newTestLogger()
	l := newThrottledLog(logger, 20*time.Millisecond)
	for range 4 {
		l.warn("w")
	}
	time.Sleep(25 * time.Millisecond)
	l.warn("w")
	out := logs.String()
	if strings.Count(out, "msg=w") != 2 || !strings.Contains(out, "suppressed=3") {
		t.Errorf("logs:\n%s", out)
	}
}
