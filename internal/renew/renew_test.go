package renew

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestEvery: renewals come every third of the lease, each bounded by the
// next one's time, until the lease is lost or the context ends.
func TestEvery(t *testing.T) {
	var calls atomic.Int32
	start := time.Now()
	Every(context.Background(), 30*time.Millisecond, func(ctx context.Context) bool {
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > 10*time.Millisecond {
			t.Errorf("a renewal may run until %v", d)
		}
		return calls.Add(1) < 3
	})
	if n := calls.Load(); n != 3 {
		t.Errorf("%d renewals before the lease was lost; want 3", n)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("three renewals in %v: sooner than every third of the lease", took)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Every(ctx, time.Hour, func(context.Context) bool {
		t.Error("a renewal ran after the context ended")
		return true
	})
}
