package limit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operation label values of agentd_limit_backend_errors_total.
const (
	OpTake    = "take"
	OpAcquire = "acquire"
)

// failOpenLogEvery is how often a fail-open wrapper logs backend errors at
// most; the errors in between are counted in the next message.
const failOpenLogEvery = time.Minute

// NewBackendErrors returns the counter vector
// agentd_limit_backend_errors_total{op="take"|"acquire"} for
// [FailOpenCounter] and [FailOpenSemaphore]. It is not registered: the
// server registers it once on its registry and passes it to both wrappers.
func NewBackendErrors() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentd_limit_backend_errors_total",
		Help: "Limit backend (Redis) errors; each admitted the request (fail open).",
	}, []string{"op"})
}

// FailOpenCounter wraps c so that a backend error admits the request: Take
// and Peek then return Allowed=true with Remaining=limit and the end of the
// current one-minute window, and a nil error. Each error increments
// errs{op="take"} (errs may be nil) and is logged as a warning on logger
// (nil: slog.Default()), at most once a minute. Errors of a request whose
// context is already done are neither counted nor logged.
func FailOpenCounter(c Counter, logger *slog.Logger, errs *prometheus.CounterVec) Counter {
	return &failOpenCounter{next: c, fail: newFailure(logger, errs, OpTake)}
}

// FailOpenSemaphore wraps s so that a backend error admits the caller with a
// no-op release, counted in errs{op="acquire"} and logged as
// [FailOpenCounter] does.
func FailOpenSemaphore(s Semaphore, logger *slog.Logger, errs *prometheus.CounterVec) Semaphore {
	return &failOpenSemaphore{next: s, fail: newFailure(logger, errs, OpAcquire)}
}

// failOpenCounter implements [FailOpenCounter].
type failOpenCounter struct {
	next Counter
	fail *failure
}

// Take implements [Counter].
func (f *failOpenCounter) Take(ctx context.Context, key string, limit int64) (Result, error) {
	res, err := f.next.Take(ctx, key, limit)
	if err != nil {
		return f.admit(ctx, err, key, limit), nil
	}
	return res, nil
}

// Peek implements [Counter].
func (f *failOpenCounter) Peek(ctx context.Context, key string, limit int64) (Result, error) {
	res, err := f.next.Peek(ctx, key, limit)
	if err != nil {
		return f.admit(ctx, err, key, limit), nil
	}
	return res, nil
}

// admit records err and returns an admitting result.
func (f *failOpenCounter) admit(ctx context.Context, err error, key string, limit int64) Result {
	f.fail.record(ctx, err, key)
	return Result{
		Limit:     limit,
		Remaining: max(limit, 0),
		Reset:     spanAt(time.Now(), Window).end,
		Allowed:   true,
	}
}

// failOpenSemaphore implements [FailOpenSemaphore].
type failOpenSemaphore struct {
	next Semaphore
	fail *failure
}

// TryAcquire implements [Semaphore].
func (f *failOpenSemaphore) TryAcquire(ctx context.Context, key string, size int) (func(), bool, error) {
	release, ok, err := f.next.TryAcquire(ctx, key, size)
	if err != nil {
		f.fail.record(ctx, err, key)
		return noop, true, nil
	}
	return release, ok, nil
}

// failure records backend errors of one operation.
type failure struct {
	op   string
	errs prometheus.Counter
	logs *throttledLog
}

// newFailure returns the recorder of op's errors.
func newFailure(logger *slog.Logger, errs *prometheus.CounterVec, op string) *failure {
	f := &failure{op: op, logs: newThrottledLog(logger, failOpenLogEvery)}
	if errs != nil {
		f.errs = errs.WithLabelValues(op)
	}
	return f
}

// record counts and logs err unless ctx is done (the caller went away,
// which says nothing about the backend).
func (f *failure) record(ctx context.Context, err error, key string) {
	if ctx.Err() != nil {
		return
	}
	if f.errs != nil {
		f.errs.Inc()
	}
	f.logs.warn("limit: backend error, request admitted", "op", f.op, "key", key, "error", err)
}

// throttledLog logs warnings at most once per interval, reporting how many
// were suppressed in between.
type throttledLog struct {
	logger     *slog.Logger
	every      time.Duration
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// newThrottledLog returns a throttledLog on logger (nil: slog.Default()).
func newThrottledLog(logger *slog.Logger, every time.Duration) *throttledLog {
	if logger == nil {
		logger = slog.Default()
	}
	return &throttledLog{logger: logger, every: every}
}

// warn logs msg with args unless a warning was logged less than every ago.
func (t *throttledLog) warn(msg string, args ...any) {
	t.mu.Lock()
	now := time.Now()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.suppressed++
		t.mu.Unlock()
		return
	}
	suppressed := t.suppressed
	t.last, t.suppressed = now, 0
	t.mu.Unlock()
	t.logger.Warn(msg, append(args, "suppressed", suppressed)...)
}
