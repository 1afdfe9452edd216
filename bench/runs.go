package main

import (
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
	"strings"
	"sync"
	"time"
)

// runsHeading starts the runs scenario's section of the report.
const runsHeading = "## Runs"

// The runs scenario's sizes: background runs sent one at a time for the
// pickup, and a backlog of drainRuns over drainConversations sent at once.
const (
	pickupRuns         = 200
	drainConversations = 100
	drainRuns          = 1000
	drainSenders       = 16
)

// runsRun is what the runs scenario measured.
type runsRun struct {
	db         string
	pickup     []time.Duration // run created → started, of each background run
	drain      time.Duration   // first send → last run finished
	drained    int             // runs completed of the backlog
	orderKept  bool            // every conversation's history in send order
	budget     budgetRun       // Send Message with and without budgets
	firstError string
}

// runRecord is what the scenario reads of a run.
type runRecord struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	CreatedAt  string  `json:"createdAt"`
	StartedAt  *string `json:"startedAt"`
	FinishedAt *string `json:"finishedAt"`
}

// runRunsOnly is -only runs: the scenario alone, its section printed and
// put in place of the one in -out.
func runRunsOnly(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "agentd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r, err := benchRuns(ctx, dir, o)
	if err != nil {
		return err
	}
	sec := runsSection(r) + fmt.Sprintf("\nMeasured %s with `go run ./bench -only runs -db %s`.\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), o.db)
	fmt.Print(sec)
	if o.out == "" {
		return nil
	}
	old, err := os.ReadFile(o.out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(o.out, []byte(spliceSection(string(old), runsHeading, sec)), 0o644)
}

// benchRuns starts agentd with the instant provider on a fresh database
// and measures background runs: how soon one starts, and how fast a
// backlog across many conversations drains, in order.
func benchRuns(ctx context.Context, dir string, o options) (runsRun, error) {
	r := runsRun{db: o.db}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	serveOn(pctx, pl, newProvider())
	dsn := filepath.Join(dir, "agentd.db")
	if o.db == "postgres" {
		name, drop, err := freshDatabase(ctx, o.recallPG)
		if err != nil {
			return r, err
		}
		defer drop()
		dsn = name
	}
	fx, err := seedAgentd(ctx, dsn, options{agents: 1})
	if err != nil {
		return r, fmt.Errorf("seed agentd: %w", err)
	}
	heldKey, heldID, err := seedBudgeted(ctx, dsn)
	if err != nil {
		return r, fmt.Errorf("seed a budgeted agent: %w", err)
	}
	agentd, err := start(ctx, []string{"OPENAI_API_KEY=sk-bench", "OPENAI_BASE_URL=http://" + pl.Addr().String() + "/v1",
		"AGENTD_LOG_LEVEL=error"}, o.agentd, "serve", "--addr", "127.0.0.1:0", "--db", dsn)
	if err != nil {
		return r, err
	}
	defer agentd.stop()
	c := runsClient{http: newClient(drainSenders), base: agentd.base + "/v1/agents/" + fx.ids[0], key: fx.key}
	held := runsClient{http: c.http, base: agentd.base + "/v1/agents/" + heldID, key: heldKey}
	if r.budget, err = measureBudget(ctx, c, held); err != nil {
		return r, fmt.Errorf("budget check: %w", err)
	}
	if r.pickup, err = c.pickup(ctx); err != nil {
		return r, fmt.Errorf("pickup: %w", err)
	}
	r.drain, r.drained, r.orderKept, err = c.drainBacklog(ctx)
	if err != nil {
		r.firstError = err.Error()
	}
	return r, nil
}

// runsClient sends to one agent of agentd.
type runsClient struct {
	http      *http.Client
	base, key string // base is the agent's URL
}

// call sends a request and decodes the envelope's data into out.
func (c runsClient) call(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	return json.Unmarshal(env.Data, out)
}

// background sends text from user in the background and returns its run.
func (c runsClient) background(ctx context.Context, user, text string) (runRecord, error) {
	var run runRecord
	err := c.call(ctx, "POST", "/messages", map[string]any{"text": text, "userId": user, "background": true}, http.StatusAccepted, &run)
	return run, err
}

// ended waits for run id to end and returns it.
func (c runsClient) ended(ctx context.Context, id string) (runRecord, error) {
	for {
		var run runRecord
		if err := c.call(ctx, "GET", "/runs/"+id+"?wait=30", nil, http.StatusOK, &run); err != nil {
			return run, err
		}
		if run.FinishedAt != nil {
			return run, nil
		}
	}
}

// pickup sends pickupRuns background runs one at a time, each in a
// conversation of its own, and returns the time from each run's creation
// to its start, as the runs record them.
func (c runsClient) pickup(ctx context.Context) ([]time.Duration, error) {
	ids := make([]string, 0, pickupRuns)
	for i := range pickupRuns {
		run, err := c.background(ctx, fmt.Sprint("pickup-", i), "hello")
		if err != nil {
			return nil, err
		}
		ids = append(ids, run.ID)
	}
	out := make([]time.Duration, 0, len(ids))
	for _, id := range ids {
		run, err := c.ended(ctx, id)
		if err != nil {
			return nil, err
		}
		if run.StartedAt == nil {
			return nil, fmt.Errorf("run %s ended %s without starting", id, run.Status)
		}
		created, err1 := time.Parse(time.RFC3339Nano, run.CreatedAt)
		started, err2 := time.Parse(time.RFC3339Nano, *run.StartedAt)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		out = append(out, started.Sub(created))
	}
	return out, nil
}

// drainBacklog sends drainRuns background runs over drainConversations
// conversations from drainSenders senders (each conversation's messages
// in order, the conversations interleaved), waits for every run to end,
// and checks that each conversation's history is its messages in the
// order sent, each followed by its reply.
func (c runsClient) drainBacklog(ctx context.Context) (time.Duration, int, bool, error) {
	per := drainRuns / drainConversations
	var mu sync.Mutex
	var ids []string
	var firstErr error
	began := time.Now()
	var wg sync.WaitGroup
	for s := range drainSenders {
		wg.Go(func() {
			for n := range per {
				for conv := s; conv < drainConversations; conv += drainSenders {
					run, err := c.background(ctx, fmt.Sprint("drain-", conv), fmt.Sprint("message ", n))
					mu.Lock()
					ids = append(ids, run.ID)
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, false, firstErr
	}
	var last time.Time
	completed := 0
	for _, id := range ids {
		run, err := c.ended(ctx, id)
		if err != nil {
			return 0, completed, false, err
		}
		if run.Status == "completed" {
			completed++
		}
		if t, err := time.Parse(time.RFC3339Nano, *run.FinishedAt); err == nil && t.After(last) {
			last = t
		}
	}
	kept, err := c.historiesInOrder(ctx, per)
	return last.Sub(began), completed, kept, err
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// historiesInOrder reports whether every drained conversation holds its
// per messages in the order sent, each followed by a reply.
func (c runsClient) historiesInOrder(ctx context.Context, per int) (bool, error) {
	for conv := range drainConversations {
		var convs struct {
			Items []struct{ ID string } `json:"items"`
		}
		if err := c.call(ctx, "GET", fmt.Sprint("/conversations?userId=drain-", conv), nil, http.StatusOK, &convs); err != nil {
			return false, err
		}
		if len(convs.Items) != 1 {
			return false, fmt.Errorf("user drain-%d has %d conversations", conv, len(convs.Items))
		}
		var msgs struct {
			Items []struct{ Role, Text string } `json:"items"`
		}
		if err := c.call(ctx, "GET", "/conversations/"+convs.Items[0].ID+"/messages?limit=100", nil, http.StatusOK, &msgs); err != nil {
			return false, err
		}
		if len(msgs.Items) != 2*per {
			return false, nil
		}
		for i, m := range msgs.Items {
			if i%2 == 0 && m.Text != fmt.Sprint("message ", i/2) || i%2 == 1 && m.Role == "user" {
				return false, nil
			}
		}
	}
	return true, nil
}

// runsSection is the scenario's part of the report.
func runsSection(r runsRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", runsHeading)
	fmt.Fprintf(&b, "agentd on %s with the instant provider, one agent. **Pickup**: %d background sends, one at a time, "+
		"each in a conversation of its own; the time from a run's creation to its start, as the run records them "+
		"(millisecond timestamps). **Backlog**: %d background runs over %d conversations (%d each, sent in order per "+
		"conversation by %d senders at once), drained by the agent's 10 runs at a time; the time from the first send to "+
		"the last run's end, and whether every conversation's history is its messages in the order sent.\n\n",
		r.db, pickupRuns, drainRuns, drainConversations, drainRuns/drainConversations, drainSenders)
	slices.Sort(r.pickup)
	q := func(p float64) string {
		if len(r.pickup) == 0 {
			return "-"
		}
		return ms(r.pickup[min(len(r.pickup)-1, int(p*float64(len(r.pickup))))])
	}
	rate := "-"
	if r.drain > 0 {
		rate = fmt.Sprintf("%.0f", float64(r.drained)/r.drain.Seconds())
	}
	b.WriteString("| pickup p50 | pickup p99 | backlog runs completed | drained in | runs/s | order kept |\n|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %s | %s | %d of %d | %s | %s | %t |\n", q(0.5), q(0.99), r.drained, drainRuns,
		r.drain.Round(time.Millisecond), rate, r.orderKept)
	if r.firstError != "" {
		fmt.Fprintf(&b, "\nFirst failure: `%s`.\n", r.firstError)
	}
	b.WriteString(budgetSection(r.budget))
	return b.String()
}
