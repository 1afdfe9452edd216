package limit

import (
	"context"
	"strconv"
	"testing"
)

const benchLimit = 1 << 40

func benchmarkTake(b *testing.B, c Counter) {
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "bench-" + strconv.Itoa(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := c.Take(ctx, keys[i%len(keys)], benchLimit); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func BenchmarkMemoryTake(b *testing.B) {
	benchmarkTake(b, NewMemoryCounter())
}

func BenchmarkRedisTake(b *testing.B) {
	client := newRedisClient(b)
	benchmarkTake(b, NewRedisCounter(client, testPrefix(b, client)))
}
