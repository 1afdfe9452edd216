package limit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Window is the length of every rate window.
const Window = time.Minute

// DefaultLease is the Redis semaphore lease used when a non-positive lease is
// given to [NewRedisSemaphore].
const DefaultLease = 30 * time.Second

// Result is one counter's state after a Take or a Peek.
type Result struct {
	// Limit is the number of requests allowed per window.
	Limit int64
	// Remaining is the number of requests still allowed in the current
	// window; never negative.
	Remaining int64
	// Reset is the end of the current fixed window.
	Reset time.Time
	// Allowed reports whether the request was admitted (Take), or whether
	// a request would be admitted now (Peek).
	Allowed bool
}

// RetryAfter returns whole seconds until Reset, rounded up, at least 1.
func (r Result) RetryAfter(now time.Time) int {
	secs := math.Ceil(r.Reset.Sub(now).Seconds())
	if secs < 1 {
		return 1
	}
	return int(secs)
}

// Counter counts requests in fixed windows (one minute unless built with
// [WithWindow]). Implementations are safe for concurrent use.
type Counter interface {
	// Take counts one request against key with the given per-window limit.
	// The limit may differ between calls for the same key; the latest is
	// honoured. Exactly limit requests are allowed per window; a request
	// over the limit is rejected (Allowed=false) and not counted, so a
	// rejected burst does not eat into a limit raised later in the same
	// window. A limit of zero or less rejects every request.
	Take(ctx context.Context, key string, limit int64) (Result, error)
	// Peek returns the state of key without counting; Allowed reports
	// whether a Take would be admitted now.
	Peek(ctx context.Context, key string, limit int64) (Result, error)
}

// Semaphore caps concurrent holders per key. Implementations are safe for
// concurrent use.
type Semaphore interface {
	// TryAcquire admits the caller if fewer than max hold key; ok is false
	// when the key is full (or max is zero or less). On success, the caller
	// must call release when done; release is idempotent and safe to call
	// from any goroutine. release is never nil (a no-op when ok is false). ctx bounds only the acquisition itself: after
	// TryAcquire returns, the slot is held (and, in Redis, its lease kept
	// alive in the background) until release, whatever happens to ctx.
	TryAcquire(ctx context.Context, key string, max int) (release func(), ok bool, err error)
}

// Option configures the constructors of this package. Each option documents
// which constructors honour it; the others ignore it.
type Option func(*options)

type options struct {
	window  time.Duration
	logger  *slog.Logger
	refresh bool
}

func buildOptions(opts []Option) options {
	o := options{window: Window, logger: slog.Default(), refresh: true}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithWindow sets the window length of a counter (default [Window]); meant
// for tests. Durations below one millisecond are ignored. Honoured by
// [NewMemoryCounter] and [NewRedisCounter].
func WithWindow(d time.Duration) Option {
	return func(o *options) {
		if d >= time.Millisecond {
			o.window = d
		}
	}
}

// WithLogger sets the logger for errors that cannot be returned (lease
// refreshes and releases of the Redis semaphore). Default slog.Default().
// Honoured by [NewRedisSemaphore].
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// withoutRefresh disables lease refreshing: a test hook that makes a holder
// behave like a crashed replica.
func withoutRefresh() Option {
	return func(o *options) { o.refresh = false }
}

// Rule is one rate limit applied to a request: Limit requests per window
// under Key.
type Rule struct {
	// Key names the counter, e.g. "account:<id>" or "agent:<id>:messages".
	Key string
	// Limit is the number of requests allowed per window.
	Limit int64
}

// Check takes one request against the rules, in order. If every rule admits
// the request, it returns Allowed=true and the result with the least
// Remaining (the binding one; the first on ties). If a rule rejects it, the
// request is rejected: the rules after it are not counted but peeked, and the
// returned result is the exhausted rule with the latest Reset, so
// RetryAfter tells when every exhausted rule admits again. Rules before the
// rejecting one stay counted (Check is not all-or-nothing), so list the
// narrowest rule first. Check with no rules returns Allowed=true and a zero
// Limit.
func Check(ctx context.Context, c Counter, rules ...Rule) (Result, error) {
	best := Result{Allowed: true}
	for i, rule := range rules {
		res, err := c.Take(ctx, rule.Key, rule.Limit)
		if err != nil {
			return Result{}, fmt.Errorf("limit: check %q: %w", rule.Key, err)
		}
		if !res.Allowed {
			return rejected(ctx, c, res, rules[i+1:])
		}
		if i == 0 || res.Remaining < best.Remaining {
			best = res
		}
	}
	return best, nil
}

// rejected peeks rules and returns, among res and the exhausted rules, the
// one with the latest Reset.
func rejected(ctx context.Context, c Counter, res Result, rules []Rule) (Result, error) {
	for _, rule := range rules {
		p, err := c.Peek(ctx, rule.Key, rule.Limit)
		if err != nil {
			return Result{}, fmt.Errorf("limit: check %q: %w", rule.Key, err)
		}
		if p.Remaining <= 0 && p.Reset.After(res.Reset) {
			res = p
		}
	}
	res.Allowed = false
	return res, nil
}
