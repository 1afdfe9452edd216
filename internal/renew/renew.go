// Package renew keeps a lease: it runs a renewal every third of the lease
// until told to stop or the lease is found lost.
package renew

import (
	"context"
	"time"
)

// Every runs renew every third of lease until ctx ends or renew reports
// the lease lost (held false). Each renewal gets a context that ends when
// the next is due, so a renewal stuck behind other work is not waited for.
func Every(ctx context.Context, lease time.Duration, renew func(ctx context.Context) (held bool)) {
	every := lease / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !once(ctx, every, renew) {
			return
		}
	}
}

func once(ctx context.Context, within time.Duration, renew func(context.Context) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return renew(ctx)
}
