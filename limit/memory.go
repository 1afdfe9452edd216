package limit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/common"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// NewMemoryCounter returns a [Counter] kept in this process, built on the
// cache of ulule's memory store. It starts no goroutine and needs no Close:
// expired windows are swept by a Take at most once per window. Options:
// [WithWindow].
func NewMemoryCounter(opts ...Option) Counter {
	o := buildOptions(opts)
	st := &memoryStore{cache: memory.NewCache(0), every: o.window}
	return &storeCounter{
		window: o.window,
		store:  func(context.Context) (limiter.Store, error) { return st, nil },
	}
}

// memoryStore is a limiter.Store over ulule's memory cache. ulule's own
// memory.Store cleans expired keys in a goroutine that only the garbage
// collector stops, so this one sweeps inline instead.
type memoryStore struct {
	cache     *memory.CacheWrapper
	every     time.Duration
	nextSweep atomic.Int64 // Unix nanoseconds
}

var _ limiter.Store = (*memoryStore)(nil)

// Get counts one request.
func (m *memoryStore) Get(ctx context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	return m.Increment(ctx, key, 1, rate)
}

// Increment adds count (possibly negative) to key.
func (m *memoryStore) Increment(_ context.Context, key string, count int64, rate limiter.Rate) (limiter.Context, error) {
	m.sweep()
	n, exp := m.cache.Increment(key, count, rate.Period)
	return common.GetContextFromState(time.Now(), rate, exp, n), nil
}

// Peek returns the state of key without counting.
func (m *memoryStore) Peek(_ context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	n, exp := m.cache.Get(key, rate.Period)
	return common.GetContextFromState(time.Now(), rate, exp, n), nil
}

// Reset forgets key.
func (m *memoryStore) Reset(_ context.Context, key string, rate limiter.Rate) (limiter.Context, error) {
	n, exp := m.cache.Reset(key, rate.Period)
	return common.GetContextFromState(time.Now(), rate, exp, n), nil
}

// sweep deletes expired keys if the last sweep is a window old; one caller
// wins the race, the others go on.
func (m *memoryStore) sweep() {
	now := time.Now().UnixNano()
	next := m.nextSweep.Load()
	if now < next || !m.nextSweep.CompareAndSwap(next, now+int64(m.every)) {
		return
	}
	m.cache.Clean()
}

// NewMemorySemaphore returns a [Semaphore] kept in this process. Keys are
// forgotten when their last holder releases, so memory does not grow with
// the number of keys ever used.
func NewMemorySemaphore() Semaphore {
	return &memorySemaphore{held: make(map[string]int)}
}

// memorySemaphore counts holders per key under one mutex.
type memorySemaphore struct {
	mu   sync.Mutex
	held map[string]int
}

// TryAcquire implements [Semaphore]; it never fails.
func (m *memorySemaphore) TryAcquire(_ context.Context, key string, size int) (func(), bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[key] >= size {
		return noop, false, nil
	}
	m.held[key]++
	var once sync.Once
	return func() { once.Do(func() { m.release(key) }) }, true, nil
}

// noop is the release returned when nothing was acquired.
func noop() {}

// release gives back one slot of key.
func (m *memorySemaphore) release(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[key]--; m.held[key] <= 0 {
		delete(m.held, key)
	}
}
