package connect

import (
	"context"
	"sync"
	"time"
)

// Indicate shows a platform's indicator (the bot typing) while a turn
// works: show is called at once, so the indicator shows even when the
// answer is quick, then every every, since the platforms clear it after a
// few seconds (Telegram 5, Discord 10), until the returned stop is called.
// stop returns once show is no longer running, so no indicator follows
// the reply. show's failure only loses the indicator: it reports none.
func Indicate(ctx context.Context, every time.Duration, show func(context.Context)) (stop func()) {
	show(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				show(ctx)
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}
