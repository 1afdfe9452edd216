package limit

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// counterBackend builds a fresh counter of one backend; every call of the
// same backend in one test shares state (Redis: same prefix, new client).
type counterBackend struct {
	name string
	new  func(t *testing.T) func(opts ...Option) Counter
}

var counterBackends = []counterBackend{
	{"memory", func(t *testing.T) func(...Option) Counter {
		var once sync.Once
		var c Counter
		return func(opts ...Option) Counter {
			once.Do(func() { c = NewMemoryCounter(opts...) })
			return c
		}
	}},
	{"redis", func(t *testing.T) func(...Option) Counter {
		prefix := testPrefix(t, newRedisClient(t))
		return func(opts ...Option) Counter {
			return NewRedisCounter(newRedisClient(t), prefix, opts...)
		}
	}},
}

// forEachBackend runs f as a subtest per counter backend.
func forEachBackend(t *testing.T, f func(t *testing.T, newCounter func(...Option) Counter)) {
	for _, b := range counterBackends {
		t.Run(b.name, func(t *testing.T) { f(t, b.new(t)) })
	}
}

func take(t *testing.T, c Counter, key string, limit int64) Result {
	t.Helper()
	res, err := c.Take(context.Background(), key, limit)
	if err != nil {
		t.Fatalf("Take(%q, %d): %v", key, limit, err)
	}
	return res
}

func peek(t *testing.T, c Counter, key string, limit int64) Result {
	t.Helper()
	res, err := c.Peek(context.Background(), key, limit)
	if err != nil {
		t.Fatalf("Peek(%q, %d): %v", key, limit, err)
	}
	return res
}

func TestCounterExactLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newCounter func(...Option) Counter) {
		c := newCounter()
		awayFromBoundary(t, Window, 5*time.Second)
		const limit = 5
		start := time.Now()
		var reset time.Time
		for i := range limit + 3 {
			res := take(t, c, "k", limit)
			wantAllowed := i < limit
			wantRemaining := max(int64(limit-1-i), 0)
			if res.Allowed != wantAllowed || res.Remaining != wantRemaining || res.Limit != limit {
				t.Fatalf("take %d: got %+v, want allowed=%v remaining=%d limit=%d",
					i+1, res, wantAllowed, wantRemaining, limit)
			}
			if i == 0 {
				reset = res.Reset
			}
			if !res.Reset.Equal(reset) {
				t.Fatalf("take %d: reset %v, first was %v", i+1, res.Reset, reset)
			}
		}
		if !reset.After(start) || reset.Sub(start) > Window {
			t.Errorf("reset %v not within a minute after %v", reset, start)
		}
		if reset.Nanosecond() != 0 || reset.Unix()%60 != 0 {
			t.Errorf("reset %v is not on a whole minute", reset)
		}
	})
}

func TestCounterConcurrentTakes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newCounter func(...Option) Counter) {
		awayFromBoundary(t, Window, 5*time.Second)
		const limit, callers = 20, 60
		counters := []Counter{newCounter(), newCounter()} // two replicas
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				res, err := counters[i%2].Take(context.Background(), "k", limit)
				if err != nil {
					t.Error(err)
				}
				if res.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if got := allowed.Load(); got != limit {
			t.Errorf("allowed %d of %d, want %d", got, callers, limit)
		}
		if res := peek(t, counters[0], "k", limit); res.Remaining != 0 || res.Allowed {
			t.Errorf("after the burst: %+v, want remaining 0, not allowed", res)
		}
	})
}

func TestCounterLimitChanges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newCounter func(...Option) Counter) {
		c := newCounter()
		awayFromBoundary(t, Window, 5*time.Second)
		for range 3 {
			take(t, c, "k", 3)
		}
		for range 5 { // rejected: must not be counted
			if res := take(t, c, "k", 3); res.Allowed {
				t.Fatalf("over the limit: %+v", res)
			}
		}
		// The tier was raised: exactly 2 more under limit 5.
		if res := take(t, c, "k", 5); !res.Allowed || res.Remaining != 1 || res.Limit != 5 {
			t.Fatalf("after raising to 5: %+v, want allowed, remaining 1", res)
		}
		take(t, c, "k", 5)
		if res := take(t, c, "k", 5); res.Allowed {
			t.Fatalf("6th under limit 5 allowed: %+v", res)
		}
		// Lowered below the count: rejected, Remaining not negative.
		if res := take(t, c, "k", 2); res.Allowed || res.Remaining != 0 || res.Limit != 2 {
			t.Fatalf("after lowering to 2: %+v", res)
		}
	})
}

func TestCounterKeysAreIndependent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newCounter func(...Option) Counter) {
		c := newCounter()
		awayFromBoundary(t, Window, 5*time.Second)
		take(t, c, "a", 1)
		if res := take(t, c, "b", 1); !res.Allowed {
			t.Errorf("key b limited by key a: %+v", res)
		}
	})
}

func TestCounterPeek(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newCounter func(...Option) Counter) {
		c := newCounter()
		awayFromBoundary(t, Window, 5*time.Second)
		if res := peek(t, c, "k", 2); !res.Allowed || res.Remaining != 2 || res.Limit != 2 {
			t.Fatalf("peek of an unused key: %+v", res)
		}
		took := take(t, c, "k", 2)
		res := peek(t, c, "k", 2)
		if !res.Allowed || res.Remaining != 1 || !res.Reset.Equal(took.Reset) {
			t.Fatalf("peek after one take: %+v (take %+v)", res, took)
		}
		take(t, c, "k", 2)
		if res := peek(t, c, "k", 2); res.Allowed || res.Remaining != 0 {
			t.Fatalf("peek when exhausted: %+v", res)
		}
	})
}

func TestCounterZeroLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newCounter func(...Option) Counter) {
		c := newCounter()
		for _, limit := range []int64{0, -1} {
			if res := take(t, c, "k", limit); res.Allowed || res.Remaining != 0 || !res.Reset.After(time.Now()) {
				t.Errorf("limit %d: %+v, want rejected", limit, res)
			}
		}
	})
}

func TestCounterNewWindow(t *testing.T) {
	const window = 400 * time.Millisecond
	forEachBackend(t, func(t *testing.T, newCounter func(...Option) Counter) {
		c := newCounter(WithWindow(window))
		freshWindow(t, window)
		first := take(t, c, "k", 2)
		take(t, c, "k", 2)
		if res := take(t, c, "k", 2); res.Allowed {
			t.Fatalf("3rd of 2 allowed: %+v", res)
		}
		if left := time.Until(first.Reset); left <= 0 || left > window {
			t.Fatalf("reset in %v, want within (0, %v]", left, window)
		}
		time.Sleep(time.Until(first.Reset) + time.Millisecond)
		res := take(t, c, "k", 2)
		if !res.Allowed || res.Remaining != 1 || !res.Reset.Equal(first.Reset.Add(window)) {
			t.Fatalf("first take of the next window: %+v, want allowed, remaining 1, reset %v",
				res, first.Reset.Add(window))
		}
	})
}

func TestRedisCounterKeysExpire(t *testing.T) {
	client := newRedisClient(t)
	prefix := testPrefix(t, client)
	const window = time.Second
	c := NewRedisCounter(client, prefix, WithWindow(window))
	take(t, c, "k", 5)
	keys, err := client.Keys(context.Background(), prefix+"*").Result()
	if err != nil || len(keys) != 1 || !strings.HasPrefix(keys[0], prefix+"rate:k:") {
		t.Fatalf("keys %v, %v; want one %srate:k:<window>", keys, err, prefix)
	}
	ttl, err := client.PTTL(context.Background(), keys[0]).Result()
	if err != nil || ttl <= window || ttl > 2*window {
		t.Errorf("ttl %v, %v; want within (%v, %v]", ttl, err, window, 2*window)
	}
}

func TestMemoryCounterSweepsExpiredWindows(t *testing.T) {
	const window = 50 * time.Millisecond
	c := NewMemoryCounter(WithWindow(window)).(*storeCounter)
	st, _ := c.store(context.Background())
	cache := st.(*memoryStore).cache
	for i := range 100 {
		take(t, c, string(rune('a'+i%26))+"-key", 1)
	}
	time.Sleep(3 * window) // past every window plus its grace
	take(t, c, "last", 1)
	n := 0
	cache.Range(func(string, *memory.Counter) { n++ })
	if n != 1 {
		t.Errorf("%d keys left after the sweep, want 1", n)
	}
}
