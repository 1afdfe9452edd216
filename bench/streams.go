package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// streamOptions are the knobs of the open streams scenario: streams
// clients at once, each streaming a reply of tokens tokens, one every
// gap, from a slow provider.
type streamOptions struct {
	streams int
	tokens  int
	gap     time.Duration
	ramp    time.Duration // the streams start evenly over ramp
}

// streamsHeading starts the scenario's section of the report.
const streamsHeading = "## Open streams"

// streamRun is what the scenario measured.
type streamRun struct {
	o                    streamOptions
	completed, failed    int
	tokens               int
	delays               []time.Duration // provider → client, of every token
	idleKB, fullKB, hwKB int             // agentd's RSS before, at full load, peak
	goroutines           int             // agentd's at full load
	firstError           string
}

// runStreamsOnly is -only streams: the scenario alone, its section printed
// and put in place of the one in -out.
func runStreamsOnly(ctx context.Context, o options) error {
	if err := raiseFileLimit(o.streams.streams + 1024); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "agentd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r, err := benchStreams(ctx, dir, o)
	if err != nil {
		return err
	}
	sec := streamsSection(r) + fmt.Sprintf("\nMeasured %s with `go run ./bench -only streams`.\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Print(sec)
	if o.out == "" {
		return nil
	}
	old, err := os.ReadFile(o.out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(o.out, []byte(spliceSection(string(old), streamsHeading, sec)), 0o644)
}

// raiseFileLimit lifts the open files limit to at least n (children
// inherit it): every stream holds a connection to the provider in each
// process (agentd's, and the provider's end here); the clients' streams
// share HTTP/2 connections to agentd, 250 to a connection. Past the hard
// limit it needs CAP_SYS_RESOURCE.
func raiseFileLimit(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= uint64(n) {
		return nil
	}
	lim.Cur = uint64(n)
	lim.Max = max(lim.Max, lim.Cur)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("streams: %d open files needed: %w", n, err)
	}
	return nil
}

// benchStreams seeds one agent per 10 streams (an agent answers 10 at
// once), starts agentd on SQLite with the slow provider and runs the
// clients.
func benchStreams(ctx context.Context, dir string, o options) (streamRun, error) {
	so := o.streams
	r := streamRun{o: so}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	serveOn(pctx, pl, slowProvider{tokens: so.tokens, gap: so.gap})
	seed := options{agents: (so.streams + 9) / 10}
	dsn := filepath.Join(dir, "agentd.db")
	fx, err := seedAgentd(ctx, dsn, seed)
	if err != nil {
		return r, fmt.Errorf("seed agentd: %w", err)
	}
	agentd, err := start(ctx, []string{"OPENAI_API_KEY=sk-bench", "OPENAI_BASE_URL=http://" + pl.Addr().String() + "/v1",
		"AGENTD_LOG_LEVEL=error"}, o.agentd, "serve", "--addr", "127.0.0.1:0", "--db", dsn)
	if err != nil {
		return r, err
	}
	defer agentd.stop()
	if r.idleKB, _, err = agentd.rssKB(); err != nil {
		return r, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	// HTTP/2 without TLS, as agentd serves it: the streams share a
	// connection per 250, so 10,000 of them fit the machine's open files.
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: protocols, DisableCompression: true}}
	began := time.Now()
	for i := range so.streams {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * so.ramp / time.Duration(so.streams))
			delays, err := streamOnce(ctx, client, agentd.base, fx.key, fx.ids[i/10])
			mu.Lock()
			defer mu.Unlock()
			r.delays = append(r.delays, delays...)
			r.tokens += len(delays)
			if err != nil {
				r.failed++
				if r.firstError == "" {
					r.firstError = err.Error()
				}
				return
			}
			r.completed++
		})
	}
	// Every stream is open from the end of the ramp until the first ends.
	full := time.NewTimer(so.ramp + time.Duration(so.tokens)*so.gap/2 - time.Since(began))
	select {
	case <-full.C:
		if r.fullKB, _, err = agentd.rssKB(); err != nil {
			return r, err
		}
		r.goroutines, _ = metricSum(ctx, agentd.base, "go_goroutines")
	case <-ctx.Done():
	}
	wg.Wait()
	_, r.hwKB, err = agentd.rssKB()
	return r, err
}

// streamOnce streams one reply and returns the delay of each token: the
// provider writes its send time into the token.
func streamOnce(ctx context.Context, client *http.Client, base, key, agentID string) ([]time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/agents/"+agentID+"/messages/stream",
		strings.NewReader(`{"text":"tell me a long story","userId":"bench"}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return nil, fmt.Errorf("status %d: %s", res.StatusCode, b)
	}
	var delays []time.Duration
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		now := time.Now()
		var ev struct{ Type, Content string }
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return delays, err
		}
		switch ev.Type {
		case "token":
			for _, f := range strings.Fields(ev.Content) {
				if ns, err := strconv.ParseInt(strings.TrimPrefix(f, "t"), 10, 64); err == nil {
					delays = append(delays, now.Sub(time.Unix(0, ns)))
				}
			}
		case "done":
			return delays, nil
		case "error":
			return delays, fmt.Errorf("error event: %s", data)
		}
	}
	return delays, fmt.Errorf("stream ended without done: %v", sc.Err())
}

// slowProvider is an OpenAI wire-format provider that streams tokens
// tokens, one every gap, each " t<unix nanoseconds it was sent>".
type slowProvider struct {
	tokens int
	gap    time.Duration
}

func (p slowProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	_, _ = io.WriteString(w, chunk(`{"role":"assistant","content":""}`, "null"))
	_ = rc.Flush()
	tick := time.NewTicker(p.gap)
	defer tick.Stop()
	for range p.tokens {
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, chunk(`{"content":" t`+strconv.FormatInt(time.Now().UnixNano(), 10)+`"}`, "null"))
		if rc.Flush() != nil {
			return
		}
	}
	_, _ = io.WriteString(w, chunk(`{}`, `"stop"`)+"data: [DONE]\n\n")
}

// streamsSection is the scenario's part of the report.
func streamsSection(r streamRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", streamsHeading)
	fmt.Fprintf(&b, "%d clients stream at once from a provider that sends a token every %s (%d per reply, %s a reply); "+
		"they start evenly over %s. agentd runs on SQLite (stream events in the database) with one agent per 10 streams. "+
		"The delay of a token is from the provider writing it to the client reading it, through agentd; the clients and "+
		"the provider share the machine with agentd.\n\n", r.o.streams, r.o.gap, r.o.tokens, time.Duration(r.o.tokens)*r.o.gap, r.o.ramp)
	slices.Sort(r.delays)
	q := func(p float64) string {
		if len(r.delays) == 0 {
			return "-"
		}
		return ms(r.delays[min(len(r.delays)-1, int(p*float64(len(r.delays))))])
	}
	perStream := "-"
	if r.o.streams > 0 && r.fullKB > r.idleKB {
		perStream = fmt.Sprintf("%.1f KiB", float64(r.fullKB-r.idleKB)/float64(r.o.streams))
	}
	b.WriteString("| streams completed | failed | tokens | token delay p50 | p99 | max | RSS idle | RSS at full load | peak RSS | per stream | goroutines at full load |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %s | %s | %s | %.1f MB | %.1f MB | %.1f MB | %s | %d |\n",
		r.completed, r.failed, r.tokens, q(0.5), q(0.99), q(1), mb(r.idleKB), mb(r.fullKB), mb(r.hwKB), perStream, r.goroutines)
	target := "met"
	if len(r.delays) == 0 || r.delays[min(len(r.delays)-1, int(0.99*float64(len(r.delays))))] >= 50*time.Millisecond {
		target = "**missed**"
	}
	fmt.Fprintf(&b, "\nTarget: p99 token delay under 50 ms: %s.\n", target)
	if r.firstError != "" {
		fmt.Fprintf(&b, "\nFirst failure: `%s`.\n", r.firstError)
	}
	return b.String()
}

func mb(kb int) float64 { return float64(kb) / 1024 }
