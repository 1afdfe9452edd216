package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
)

// normalCap is the hard bound on each answer to the normal client while a
// hostile load goes on. The figure the issue asks for, 100 ms at p99, is
// measured and logged, not asserted: on a loaded CI machine it would flake.
const normalCap = 2 * time.Second

// unreadReplyTimeout is the provider timeout of the hostile test's agentd.
const unreadReplyTimeout = 15 * time.Second

// TestHostileClients runs agentd as a process and, while each hostile load
// goes on, has a normal client list agents for AGENTD_HOSTILE_DURATION (3s):
// every answer must come, within normalCap, and the p99 is logged. After
// each load, the server's own timeouts must end the hostile connections.
func TestHostileClients(t *testing.T) {
	needReliability(t)
	measure := budgetDuration(t, "AGENTD_HOSTILE_DURATION", 3*time.Second)
	raiseFileLimit(t, 4096) // 1,000 idle connections, inherited by the server
	db := tempDB(t)
	key := loadAccount(t, db)
	openai := llmtest.NewOpenAI(t)
	// A stream's reply no longer ends with its client: the provider
	// timeout ends the replies that never would.
	p := spawn(t, db, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+openai.URL, "AGENTD_PROVIDER_TIMEOUT="+unreadReplyTimeout.String())
	addr := strings.TrimPrefix(p.base, "http://")
	normal := func(t *testing.T, load string) {
		t.Helper()
		lat := normalLoad(t, p.base, key, measure)
		t.Logf("%s: normal client p99 %v, p50 %v over %d requests (GET /v1/agents)", load, percentile(lat, 0.99), percentile(lat, 0.5), len(lat))
	}
	normal(t, "no hostile load")

	t.Run("slowloris headers", func(t *testing.T) {
		h := holdConns(t, addr, 200, true, 0, func(_ int, c net.Conn) error {
			if _, err := io.WriteString(c, "GET /v1/agents HTTP/1.1\r\nHost: agentd\r\nX-Slow: "); err != nil {
				return err
			}
			return trickle(c, 100*time.Millisecond)
		})
		normal(t, "200 slowloris connections")
		h.closedBy(t, "ReadHeaderTimeout", readHeaderTimeout)
	})

	t.Run("body trickled byte by byte", func(t *testing.T) {
		h := holdConns(t, addr, 100, true, 0, func(_ int, c net.Conn) error {
			head := "POST /v1/agents HTTP/1.1\r\nHost: agentd\r\nAuthorization: Bearer " + key +
				"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"name\":\""
			if _, err := io.WriteString(c, head); err != nil {
				return err
			}
			return trickle(c, 100*time.Millisecond)
		})
		normal(t, "100 bodies trickled byte by byte")
		h.closedBy(t, "ReadTimeout", readTimeout)
	})

	t.Run("1,000 idle connections", func(t *testing.T) {
		h := holdConns(t, addr, 1000, true, 0, nil)
		normal(t, "1,000 idle connections")
		h.closedBy(t, "ReadHeaderTimeout", readHeaderTimeout)
	})

	t.Run("200 streams never read", func(t *testing.T) {
		unreadStreams(t, p.base, addr, key, openai, func() { normal(t, "200 streams never read") })
	})
}

// normalLoad lists agents from two clients for d and returns the
// latencies; every request must succeed within normalCap.
func normalLoad(t *testing.T, base, key string, d time.Duration) []time.Duration {
	t.Helper()
	var (
		mu       sync.Mutex
		lat      []time.Duration
		failures []string
		wg       sync.WaitGroup
	)
	end := time.Now().Add(d)
	for range 2 {
		wg.Go(func() {
			transport := &http.Transport{}
			defer transport.CloseIdleConnections()
			hc := &http.Client{Transport: transport, Timeout: normalCap}
			for time.Now().Before(end) {
				start := time.Now()
				status, _, err := sendJSON(hc, "GET", base+"/v1/agents", key, nil)
				took := time.Since(start)
				mu.Lock()
				lat = append(lat, took)
				if err != nil || status != http.StatusOK {
					failures = append(failures, fmt.Sprintf("%d %v after %v", status, err, took))
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("%d of %d normal requests failed or took over %v, e.g. %s", len(failures), len(lat), normalCap, failures[0])
	}
	return lat
}

// trickle writes one byte every gap until the write fails.
func trickle(c net.Conn, gap time.Duration) error {
	for {
		time.Sleep(gap)
		if _, err := c.Write([]byte("a")); err != nil {
			return err
		}
	}
}

// hostileConns are raw connections a hostile client holds open.
type hostileConns struct {
	start  time.Time
	conns  []net.Conn
	closed sync.WaitGroup // one per watched connection, done when the server closes it
	open   atomic.Int64
}

// holdConns opens n connections to addr, the i-th running act(i, conn)
// (nil sends nothing). When watch is set each is read, and counted closed
// when the server ends it; otherwise nothing is ever read. rcvbuf, when
// not 0, is the receive buffer set before connecting.
func holdConns(t *testing.T, addr string, n int, watch bool, rcvbuf int, act func(int, net.Conn) error) *hostileConns {
	t.Helper()
	h := &hostileConns{start: time.Now()}
	d := net.Dialer{Timeout: 5 * time.Second}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var sockErr error
			err := rc.Control(func(fd uintptr) {
				sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			if err != nil {
				return err
			}
			return sockErr
		}
	}
	t.Cleanup(h.close)
	for i := range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d of %d: %v", len(h.conns)+1, n, err)
		}
		h.conns = append(h.conns, c)
		if act != nil {
			go func() { _ = act(i, c) }()
		}
		if watch {
			h.open.Add(1)
			h.closed.Add(1)
			go func() {
				defer h.closed.Done()
				_, _ = io.Copy(io.Discard, c)
				h.open.Add(-1)
			}()
		}
	}
	return h
}

// close closes every connection.
func (h *hostileConns) close() {
	for _, c := range h.conns {
		_ = c.Close()
	}
}

// closedBy checks that the server closes every watched connection once
// its timeout has passed (with a margin for a loaded machine).
func (h *hostileConns) closedBy(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { h.closed.Wait(); close(done) }()
	limit := timeout + 15*time.Second
	select {
	case <-done:
		t.Logf("the server closed all %d connections %v after they opened (%s %v)", len(h.conns), time.Since(h.start).Round(100*time.Millisecond), name, timeout)
	case <-time.After(time.Until(h.start.Add(limit))):
		t.Errorf("%d of %d connections still open %v after they opened: %s (%v) did not end them", h.open.Load(), len(h.conns), limit, name, timeout)
	}
}

// unreadStreams opens 200 streams (10 on each of 20 agents, the
// per-agent cap) whose client never reads, with a provider that streams
// slowly without end, and runs during while they are held. Then it checks
// that the server's stream write timeout ends streams a client stopped
// reading once their buffers are full, freeing their concurrency slots,
// and that closing the 200 frees theirs.
func unreadStreams(t *testing.T, base, addr, key string, openai *llmtest.Server, during func()) {
	t.Helper()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 20 * time.Second}
	var ids []string
	for i := range 21 {
		status, doc, err := sendJSON(hc, "POST", base+"/v1/agents", key, map[string]any{"name": fmt.Sprintf("streamer-%d", i)})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create agent: %d %v", status, err)
		}
		ids = append(ids, doc["id"].(string))
	}
	probe := func(agent string) int {
		status, _, err := sendJSON(hc, "POST", base+"/v1/agents/"+agent+"/messages", key, map[string]any{"text": "anyone there?"})
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		return status
	}
	// open opens n unread streams on the agents ids[first:], 10 each, and
	// waits until all of them are at the provider, which answers each
	// with reply.
	open := func(n, first int, reply llmtest.Reply) *hostileConns {
		t.Helper()
		openai.Respond(reply)
		before := openai.Count()
		// A small receive buffer, set before connecting, fills soon.
		const body = `{"text":"never read"}`
		h := holdConns(t, addr, n, false, 4096, func(i int, c net.Conn) error {
			_, err := fmt.Fprintf(c, "POST /v1/agents/%s/messages/stream HTTP/1.1\r\nHost: agentd\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", ids[first+i/10], key, len(body), body)
			return err
		})
		testutil.Eventually(t, fmt.Sprintf("%d streams at the provider", n), func() error {
			if got := openai.Count() - before; got < n {
				return fmt.Errorf("%d streams", got)
			}
			return nil
		})
		if status := probe(ids[first]); status != http.StatusTooManyRequests {
			t.Fatalf("a message to an agent with 10 streams open: %d, want 429 (the streams do not hold their slots)", status)
		}
		openai.Respond(llmtest.Reply{Text: "slots are back"})
		return h
	}
	// freed polls a message to agent until it is answered, within limit
	// of since.
	freed := func(agent, what string, since time.Time, limit time.Duration) {
		t.Helper()
		for status := probe(agent); status != http.StatusOK; status = probe(agent) {
			if time.Since(since) > limit {
				t.Fatalf("%s: the slots are still held %v later (last answer %d)", what, limit, status)
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("%s: slots freed %v later", what, time.Since(since).Round(100*time.Millisecond))
	}

	slow := open(200, 0, llmtest.Reply{Fragments: endless(2048), FragmentDelay: 100 * time.Millisecond})
	during()
	// A reply runs on whether or not its client reads. Ten more at full
	// speed reach the bound of a stream's size (4 MiB) in a moment and are
	// cut there, which frees their slots; the limit leaves a margin for a
	// loaded machine.
	fast := open(10, 20, llmtest.Reply{Fragments: endless(16 << 10)})
	freed(ids[20], "10 unread streams at full speed, cut at the bound of a stream's size", fast.start, 40*time.Second)
	slow.close()
	// The 200 slow replies go on after their clients stopped following
	// (each write timed out), for the provider timeout, and are cut then.
	freed(ids[0], "200 slow replies whose clients closed, ended by the provider timeout", slow.start, unreadReplyTimeout+20*time.Second)
}

// endless returns a stream's fragments of size bytes each, more than any
// test waits for.
func endless(size int) []string {
	frags := make([]string, 1_000_000)
	frag := strings.Repeat("x", size)
	for i := range frags {
		frags[i] = frag
	}
	return frags
}
