package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/webhook"
)

// BenchmarkDelivery measures delivery throughput of one instance on
// SQLite, receiver on loopback: b.N events are queued first, then timed
// from the workers' start until the receiver has them all.
func BenchmarkDelivery(b *testing.B) {
	ctx := context.Background()
	st := storetest.Open(b, storetest.SQLiteDSN(b))
	var got atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
	}))
	defer rcv.Close()
	acct := storetest.Account(b, st, "bench")
	w, err := st.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: rcv.URL, Events: []string{"*"}, Enabled: true})
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if err := st.Webhooks().TestWebhook(ctx, acct.ID, w.ID); err != nil {
			b.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	go func() {
		defer close(done)
		webhook.New(st.Webhooks(), webhook.Config{AllowPrivate: true, Poll: 10 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Run(runCtx)
	}()
	for got.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}
