package limit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// NewRedisCounter returns a [Counter] shared by every replica using the same
// Redis and prefix, built on ulule's Redis store (one atomic Lua script per
// request). Its keys are "<prefix>rate:<key>:<window index>" and expire one
// window after their window ends. Windows come from the local clock (aligned
// to Unix time), so replicas need synchronised clocks, as usual.
//
// Redis is not contacted until the first request: if it is down then, that
// request fails and the next one tries again. Options: [WithWindow].
func NewRedisCounter(client redis.UniversalClient, prefix string, opts ...Option) Counter {
	o := buildOptions(opts)
	lazy := &lazyRedisStore{client: client, prefix: prefix + "rate"}
	return &storeCounter{window: o.window, store: lazy.get}
}

// lazyRedisStore creates ulule's Redis store (which loads its scripts, so
// needs Redis) on first use.
type lazyRedisStore struct {
	client redis.UniversalClient
	prefix string
	mu     sync.Mutex
	store  atomic.Pointer[limiter.Store]
}

// get returns the store, creating it if needed.
func (l *lazyRedisStore) get(context.Context) (limiter.Store, error) {
	if st := l.store.Load(); st != nil {
		return *st, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.store.Load(); st != nil {
		return *st, nil
	}
	st, err := ulredis.NewStoreWithOptions(l.client, limiter.StoreOptions{Prefix: l.prefix})
	if err != nil {
		return nil, fmt.Errorf("limit: redis store: %w", err)
	}
	l.store.Store(&st)
	return st, nil
}
