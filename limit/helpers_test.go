package limit

import (
	"context"
	"crypto/rand"
	"net"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// redisAddr is the Redis the tests use; .ci/setup (make test) starts it.
const redisAddr = "127.0.0.1:6379"

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newRedisClient returns a client of the test Redis; an unreachable one
// skips the test, or fails it in CI.
func newRedisClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		testutil.Unavailable(t, "Redis at "+redisAddr, err)
	}
	return c
}

// testPrefix returns a key prefix unique to this test and deletes its keys
// when the test ends.
func testPrefix(t testing.TB, c *redis.Client) string {
	t.Helper()
	prefix := "agentd-test-" + rand.Text() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, err := c.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = c.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("cleaning %s*: %v", prefix, err)
		}
	})
	return prefix
}

// deadRedisClient returns a client of a closed local port.
func deadRedisClient(t testing.TB) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// freshWindow waits until a window of length w has just begun, so that a
// short test runs inside one window.
func freshWindow(t testing.TB, w time.Duration) {
	t.Helper()
	now := time.Now()
	end := spanAt(now, w).end
	if end.Sub(now) < w*9/10 {
		time.Sleep(time.Until(end) + time.Millisecond)
	}
}

// awayFromBoundary waits, if less than margin is left of the current
// window of length w, until the next window.
func awayFromBoundary(t testing.TB, w, margin time.Duration) {
	t.Helper()
	if left := time.Until(spanAt(time.Now(), w).end); left < margin {
		time.Sleep(left + time.Millisecond)
	}
}
