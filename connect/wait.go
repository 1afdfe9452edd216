package connect

import (
	"context"
	"math/rand/v2"
	"time"
)

// Jitter spreads d by ±20%, so replicas and connections do not act in step.
func Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Sleep waits d and reports true, or false as soon as ctx ends.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
