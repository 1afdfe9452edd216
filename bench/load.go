package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// call makes request number i of a worker and reports the latency to count
// (from sending to the moment the workload considers answered) or an error.
type call func(ctx context.Context, c *http.Client, i int64) (time.Duration, error)

// result is one measured point: a workload on one system at one concurrency.
type result struct {
	n        int // requests completed
	errs     int // requests that failed
	firstErr error
	elapsed  time.Duration
	lat      []time.Duration // sorted
}

func (r result) rate() float64 { return float64(r.n) / r.elapsed.Seconds() }

// quantile returns the q-quantile latency (0 when nothing was measured).
func (r result) quantile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))]
}

// newClient returns a client keeping up to conns connections to one host.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: time.Minute, DisableCompression: true,
	}, Timeout: 30 * time.Second}
}

// load runs fn on conns workers in a closed loop (each sends its next
// request when the last is answered) for warmup, unmeasured, then for d.
func load(ctx context.Context, conns int, warmup, d time.Duration, fn call) result {
	client := newClient(conns)
	defer client.CloseIdleConnections()
	var seq atomic.Int64
	run := func(d time.Duration, keep bool) result {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		var mu sync.Mutex
		var res result
		var wg sync.WaitGroup
		start := time.Now()
		for range conns {
			wg.Go(func() {
				var lat []time.Duration
				var errs int
				var firstErr error
				for ctx.Err() == nil {
					l, err := fn(context.WithoutCancel(ctx), client, seq.Add(1))
					if err != nil {
						errs++
						firstErr = cmp(firstErr, err)
						continue
					}
					lat = append(lat, l)
				}
				mu.Lock()
				res.lat = append(res.lat, lat...)
				res.errs += errs
				res.firstErr = cmp(res.firstErr, firstErr)
				mu.Unlock()
			})
		}
		wg.Wait()
		res.elapsed = time.Since(start)
		if !keep {
			return result{}
		}
		slices.Sort(res.lat)
		res.n = len(res.lat)
		return res
	}
	if warmup > 0 {
		run(warmup, false)
	}
	return run(d, true)
}

// cmp returns the first non-nil error.
func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// request describes one HTTP request of a workload.
type request struct {
	method, url, key string
	body             []byte
	want             int
}

// do sends r and reads the whole answer, timing both.
func do(ctx context.Context, c *http.Client, r request) (time.Duration, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body) // sent with its Content-Length
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return 0, err
	}
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != r.want {
		return 0, fmt.Errorf("%s %s: status %d, want %d", r.method, r.url, res.StatusCode, r.want)
	}
	return elapsed, nil
}
