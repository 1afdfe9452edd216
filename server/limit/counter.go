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

// Take implements [Counter].
func (c *storeCounter) Take(ctx context.Context, key string, limit int64) (Result, error) {
	now := time.Now()
	s := spanAt(now, c.window)
	if limit <= 0 {
		return Result{Reset: s.end}, nil
	}
	st, err := c.store(ctx)
	if err != nil {
		return Result{}, err
	}
	k, rate := storeKey(key, s), c.rate(now, s, limit)
	lc, err := st.Get(ctx, k, rate)
	if err != nil {
		return Result{}, fmt.Errorf("limit: take %q: %w", key, err)
	}
	if lc.Reached {
		// Uncount the rejected request. The key belongs to this window
		// only, so this cannot leak into the next one.
		if _, err := st.Increment(ctx, k, -1, rate); err != nil {
			return Result{}, fmt.Errorf("limit: uncount %q: %w", key, err)
		}
	}
	return toResult(lc, s), nil
}

// Peek implements [Counter].
func (c *storeCounter) Peek(ctx context.Context, key string, limit int64) (Result, error) {
	now := time.Now()
	s := spanAt(now, c.window)
	if limit <= 0 {
		return Result{Reset: s.end}, nil
	}
	st, err := c.store(ctx)
	if err != nil {
		return Result{}, err
	}
	lc, err := st.Peek(ctx, storeKey(key, s), c.rate(now, s, limit))
	if err != nil {
		return Result{}, fmt.Errorf("limit: peek %q: %w", key, err)
	}
	res := toResult(lc, s)
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
