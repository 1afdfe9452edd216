package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// freeAddr returns a loopback address nothing listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// profiler takes CPU profiles of agentd through its pprof listener while
// a workload runs, one file per workload in dir.
type profiler struct {
	dir, addr string
}

// during takes a CPU profile of agentd for d, in the background, into
// dir/<name>.pprof; the returned func waits for it.
func (p *profiler) during(ctx context.Context, name string, d time.Duration) func() {
	if p == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		secs := max(1, int(d.Round(time.Second)/time.Second))
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.addr, secs)
		file := filepath.Join(p.dir, strings.ReplaceAll(strings.ToLower(name), " ", "-")+".pprof")
		if err := fetchTo(ctx, url, file); err != nil {
			logf("profile %s: %v", name, err)
		}
	}()
	return func() { <-done }
}

// heap writes agentd's heap profile into dir/heap.pprof.
func (p *profiler) heap(ctx context.Context) {
	if p == nil {
		return
	}
	if err := fetchTo(ctx, "http://"+p.addr+"/debug/pprof/heap", filepath.Join(p.dir, "heap.pprof")); err != nil {
		logf("heap profile: %v", err)
	}
}

// fetchTo writes the body of GET url to file.
func fetchTo(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("%s: %s", url, res.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// awaitConnections waits until agentd's /metrics counts want platform
// connections in all: the connection supervisor's first sync over the
// seeded agents is done, and measuring before it would measure the sync.
// It returns how long that took.
func awaitConnections(ctx context.Context, base string, want int, limit time.Duration) (time.Duration, error) {
	began := time.Now()
	for {
		n, err := metricSum(ctx, base, "agentd_connections")
		if err != nil {
			return 0, err
		}
		if n >= want {
			return time.Since(began), nil
		}
		if time.Since(began) > limit {
			return 0, fmt.Errorf("after %s agentd counts %d platform connections of %d", limit, n, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// metricSum sums the samples of metric name (every label set) on agentd's
// /metrics page; 0 when it has none (a gauge with no label set yet).
func metricSum(ctx context.Context, base, name string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		sum += v
	}
	return int(sum), sc.Err()
}
