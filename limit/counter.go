package limit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ulule/limiter/v3"
)

// storeCounter is a [Counter] over a ulule limiter store. Each window of a
// key is its own store key ("<key>:<window index>"), so windows are aligned
// to Unix time and Reset is known exactly, whatever the store reports.
type storeCounter struct {
	window time.Duration
	store  func(ctx context.Context) (limiter.Store, error)
}

// span is one fixed window.
type span struct {
	index int64
	end   time.Time
}

// spanAt returns the window of length w that contains now.
func spanAt(now time.Time, w time.Duration) span {
	idx := now.UnixNano() / int64(w)
	return span{index: idx, end: time.Unix(0, (idx+1)*int64(w))}
}

// storeKey returns the store key of key in window s.
func storeKey(key string, s span) string {
	b := make([]byte, 0, len(key)+21)
	b = append(b, key...)
	b = append(b, ':')
	return string(strconv.AppendInt(b, s.index, 10))
}

// rate returns the ulule rate for limit in window s. Its period is the store
// key's lifetime: to the window's end plus one window of grace for replicas
// whose clocks lag, after which the key is garbage.
func (c *storeCounter) rate(now time.Time, s span, limit int64) limiter.Rate {
	return limiter.Rate{Period: s.end.Sub(now) + c.window, Limit: limit}
}

// op is one Take or Peek: the store, the key's store key in the current
// window, and the rate that gives that key its limit and lifetime.
type op struct {
	st   limiter.Store
	key  string
	rate limiter.Rate
	span span
}

// begin prepares an op on key. A limit of zero or less admits nothing and
// needs no store: ok is false and op.span still gives the reset.
func (c *storeCounter) begin(ctx context.Context, key string, limit int64) (o op, ok bool, err error) {
	now := time.Now()
	o.span = spanAt(now, c.window)
	if limit <= 0 {
		return o, false, nil
	}
	if o.st, err = c.store(ctx); err != nil {
		return o, false, err
	}
	o.key, o.rate = storeKey(key, o.span), c.rate(now, o.span, limit)
	return o, true, nil
}

// Take implements [Counter].
func (c *storeCounter) Take(ctx context.Context, key string, limit int64) (Result, error) {
	o, ok, err := c.begin(ctx, key, limit)
	if err != nil || !ok {
		return Result{Reset: o.span.end}, err
	}
	lc, err := o.st.Get(ctx, o.key, o.rate)
	if err != nil {
		return Result{}, fmt.Errorf("limit: take %q: %w", key, err)
	}
	if lc.Reached {
		// Uncount the rejected request. The key belongs to this window
		// only, so this cannot leak into the next one.
		if _, err := o.st.Increment(ctx, o.key, -1, o.rate); err != nil {
			return Result{}, fmt.Errorf("limit: uncount %q: %w", key, err)
		}
	}
	return toResult(lc, o.span), nil
}

// Peek implements [Counter].
func (c *storeCounter) Peek(ctx context.Context, key string, limit int64) (Result, error) {
	o, ok, err := c.begin(ctx, key, limit)
	if err != nil || !ok {
		return Result{Reset: o.span.end}, err
	}
	lc, err := o.st.Peek(ctx, o.key, o.rate)
	if err != nil {
		return Result{}, fmt.Errorf("limit: peek %q: %w", key, err)
	}
	res := toResult(lc, o.span)
	res.Allowed = res.Remaining > 0
	return res, nil
}

// toResult maps a ulule context to a Result. ulule's Reset (Unix seconds of
// the store key's expiry) is not used: the window's end is known exactly.
func toResult(lc limiter.Context, s span) Result {
	return Result{
		Limit:     lc.Limit,
		Remaining: max(lc.Remaining, 0),
		Reset:     s.end,
		Allowed:   !lc.Reached,
	}
}
