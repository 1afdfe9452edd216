package testutil

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisAddr is the Redis the tests use; .ci/run starts it.
const RedisAddr = "127.0.0.1:6379"

// Redis returns a client of the test Redis and a key prefix of the test's
// own, whose keys are deleted when the test ends. Redis not answering is
// Unavailable.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: RedisAddr})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		Unavailable(t, "Redis at "+RedisAddr, err)
	}
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
		_ = c.Close()
	})
	return c, prefix
}
