package limit

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/renew"
	"github.com/redis/go-redis/v9"
)

// minLease is the shortest lease accepted by [NewRedisSemaphore].
const minLease = 10 * time.Millisecond

// releaseTimeout bounds the ZREM of a release, which runs after the caller's
// context may be gone.
const releaseTimeout = 5 * time.Second

// acquireScript admits ARGV[3] to the sorted set KEYS[1] if fewer than
// ARGV[1] unexpired members hold it. A member's score is the Redis time (ms)
// its lease ends; ARGV[2] is the lease in ms.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
	return 0
end
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], string.format('%d', now + lease), ARGV[3])
redis.call('PEXPIRE', KEYS[1], lease)
return 1
`)

// refreshScript extends the lease of ARGV[2] in KEYS[1] by ARGV[1] ms from
// now; it returns 0 if the member is gone (its lease was lost).
var refreshScript = redis.NewScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
	return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], 'XX', string.format('%d', now + lease), ARGV[2])
redis.call('PEXPIRE', KEYS[1], lease)
return 1
`)

// NewRedisSemaphore returns a [Semaphore] shared by every replica using the
// same Redis and prefix. Each key is a sorted set "<prefix>sem:<key>" of
// holders scored by the Redis time their lease ends; acquiring drops expired
// holders and admits if fewer than max remain, in one Lua script. A holder's
// lease is refreshed every lease/3 until release, so long holders keep their
// slot and a crashed replica's slots free themselves within one lease. A
// lease of zero or less means [DefaultLease]; leases are rounded to
// milliseconds, minimum 10 ms. Errors of refreshes and releases, which
// have no caller to return to, are logged at most once a minute. Needs
// Redis 5 or later (scripts calling TIME before writing). Options:
// [WithLogger].
func NewRedisSemaphore(client redis.UniversalClient, prefix string, lease time.Duration, opts ...Option) Semaphore {
	o := buildOptions(opts)
	if lease <= 0 {
		lease = DefaultLease
	}
	return &redisSemaphore{
		client:  client,
		prefix:  prefix + "sem:",
		lease:   max(lease.Round(time.Millisecond), minLease),
		logs:    newThrottledLog(o.logger, time.Minute),
		refresh: o.refresh,
	}
}

// redisSemaphore implements [Semaphore] on Redis sorted sets.
type redisSemaphore struct {
	client  redis.UniversalClient
	prefix  string
	lease   time.Duration
	logs    *throttledLog
	refresh bool
}

// TryAcquire implements [Semaphore].
func (s *redisSemaphore) TryAcquire(ctx context.Context, key string, size int) (func(), bool, error) {
	if size <= 0 {
		return noop, false, nil
	}
	k, id := s.prefix+key, rand.Text()
	n, err := acquireScript.Run(ctx, s.client, []string{k}, size, s.lease.Milliseconds(), id).Int()
	if err != nil {
		return noop, false, fmt.Errorf("limit: acquire %q: %w", key, err)
	}
	if n == 0 {
		return noop, false, nil
	}
	return s.hold(k, id), true, nil
}

// hold starts keeping member id of k alive and returns its release.
func (s *redisSemaphore) hold(k, id string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if s.refresh {
		go s.keepAlive(ctx, k, id, done)
	} else {
		close(done)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			s.release(k, id)
		})
	}
}

// keepAlive refreshes the lease of id every lease/3 until ctx ends or the
// lease is lost, then closes done.
func (s *redisSemaphore) keepAlive(ctx context.Context, k, id string, done chan<- struct{}) {
	defer close(done)
	renew.Every(ctx, s.lease, func(call context.Context) bool {
		n, err := refreshScript.Run(call, s.client, []string{k}, s.lease.Milliseconds(), id).Int()
		switch {
		case ctx.Err() != nil:
			return false
		case err != nil:
			s.logs.warn("limit: semaphore lease refresh failed", "key", k, "error", err)
		case n == 0:
			s.logs.warn("limit: semaphore lease lost before release", "key", k)
			return false
		}
		return true
	})
}

// release removes id from k; on failure the slot frees when its lease ends.
func (s *redisSemaphore) release(k, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := s.client.ZRem(ctx, k, id).Err(); err != nil {
		s.logs.warn("limit: semaphore release failed", "key", k, "error", err)
	}
}
