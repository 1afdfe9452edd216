// Command bench is `make bench`: it measures agentd against the limits of
// its stack in one run. It starts agentd on a fresh SQLite (or, with -db
// postgres, PostgreSQL) database seeded with an enterprise account whose
// limits never bind, a bare Echo server answering same-sized JSON (the HTTP
// stack's limit), a bare Echo + GORM server on a database of the same kind
// doing one primary-key read or one insert per request (the storage stack's
// limit) and an instant OpenAI wire-format provider, then
// loads them at each concurrency in turn, alternating the systems so drift
// cancels out, and prints a Markdown report (also written to -out).
//
// The same binary serves the baseline and the floor in child processes
// (-serve baseline|floor), so every server has its own runtime and RSS.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the knobs of a run; the defaults keep a full run on a
// 2-core machine within a few minutes.
type options struct {
	agentd   string        // the agentd binary
	out      string        // the report file; "" = stdout only
	dur      time.Duration // measured time of each point
	warmup   time.Duration // unmeasured time before each point
	conns    []int
	agents   int // agents of the main account (Get, List, PATCH, messages)
	big      int // agents of the account Create is measured on at scale
	small    int // agents of the accounts Create is measured on small
	messages int // stored messages before the message workloads
	dir      string
	// db is the database agentd and the floor run on: "sqlite" or "postgres"
	// (a fresh database each on the server of recallPG).
	db string
	// handler is the URL of the action handler the tool agents call.
	handler string
	// recallPG is the PostgreSQL server the recall and leases benches, and
	// the whole bench with db "postgres", make their databases on ("" for
	// SQLite only).
	recallPG string
	// leases is the connection leases scenario.
	leases leaseOptions
	// only runs one scenario ("leases") instead of the whole bench.
	only string
	// streams is the open streams scenario.
	streams streamOptions
	// withLeases adds the connection leases scenario to the whole bench;
	// without it the report keeps the section of the last measurement.
	withLeases bool
	// profile, when set, is the directory agentd's CPU profile of each
	// workload goes to, taken at the middle concurrency.
	profile string
}

func main() {
	serve := flag.String("serve", "", "internal: serve `baseline`, `floor` or `telegram` on -addr")
	addr := flag.String("addr", "127.0.0.1:0", "internal: listen address of -serve")
	docBytes := flag.Int("doc-bytes", 1024, "internal: size of the baseline's document")
	floorDB := flag.String("floor-db", "", "internal: database of the floor server")
	bots := flag.Int("bots", 0, "internal: bots of the telegram server")
	var o options
	var conns string
	flag.StringVar(&o.agentd, "agentd", "bin/agentd", "agentd `binary` to measure")
	flag.StringVar(&o.out, "out", "bench/results/latest.md", "report `file` (besides stdout); empty for none")
	flag.DurationVar(&o.dur, "dur", 2*time.Second, "measured `duration` of each point")
	flag.DurationVar(&o.warmup, "warmup", 300*time.Millisecond, "unmeasured `duration` before each point")
	flag.StringVar(&conns, "conns", "1,16,64", "comma-separated `connections` of each workload")
	flag.IntVar(&o.agents, "agents", 10_000, "agents of the main account")
	flag.IntVar(&o.big, "big", 100_000, "agents of the account Create is measured on at scale")
	flag.IntVar(&o.small, "small", 1_000, "agents of the accounts Create is measured on small")
	flag.IntVar(&o.messages, "messages", 100_000, "messages stored before the message workloads")
	flag.StringVar(&o.recallPG, "recall-pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"PostgreSQL `DSN` whose server the recall and leases benches (and -db postgres) make fresh databases on; empty for SQLite only")
	db := os.Getenv("BENCH_DB")
	if db == "" {
		db = "sqlite"
	}
	flag.StringVar(&o.db, "db", db,
		"`database` of agentd and the floor: sqlite or postgres (on the -recall-pg server); defaults to $BENCH_DB")
	flag.IntVar(&o.leases.agents, "leases", 10_000, "agents (each with its own Telegram bot) of the connection leases scenario; 0 skips it")
	flag.DurationVar(&o.leases.window, "leases-window", time.Minute, "steady-state `duration` measured once every connection is connected")
	flag.DurationVar(&o.leases.pollTimeout, "leases-poll", 30*time.Second, "Telegram long-poll `timeout` of the leases scenario")
	flag.DurationVar(&o.leases.startLimit, "leases-start-limit", 5*time.Minute, "longest `wait` for every connection to be connected")
	flag.IntVar(&o.leases.pgPool, "leases-pg-pool", 10, "PostgreSQL connections of each replica's pool (3 replicas share the server)")
	var leaseBackends string
	flag.StringVar(&leaseBackends, "leases-backends", "sqlite,postgres", "comma-separated `backends` of the leases scenario")
	flag.StringVar(&o.only, "only", "", "run only `scenario` (leases, streams, runs) and replace its section of -out")
	flag.IntVar(&o.streams.streams, "streams", 10_000, "concurrent clients of the open streams scenario")
	flag.IntVar(&o.streams.tokens, "stream-tokens", 100, "tokens of each reply of the open streams scenario")
	flag.DurationVar(&o.streams.gap, "stream-gap", 100*time.Millisecond, "`gap` between two tokens of the open streams scenario")
	flag.DurationVar(&o.streams.ramp, "stream-ramp", 5*time.Second, "the open streams start evenly over this `duration`")
	flag.BoolVar(&o.withLeases, "with-leases", false, "add the connection leases scenario (5 to 15 minutes) to the whole bench; "+
		"without it the report keeps the section -out has")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of agentd for each workload (at the middle of -conns) into `dir`")
	childLogFile := flag.String("child-log", "", "append the stderr of agentd and the servers the bench starts to `file`")
	flag.Parse()
	if *childLogFile != "" {
		f, err := os.OpenFile(*childLogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer f.Close()
		childLog = log.New(f, "", 0)
	}
	o.leases.replicas, o.leases.stopLimit, o.leases.progressEvery = 3, 3*time.Minute, 5*time.Second
	o.leases.backends = strings.Split(leaseBackends, ",")
	outSet := false
	flag.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	// The PostgreSQL table has its own default report, beside SQLite's.
	if o.db == "postgres" && o.only == "" && !outSet {
		o.out = "bench/results/latest-postgres.md"
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch *serve {
	case "":
		switch o.only {
		case "":
			if o.db != "sqlite" && o.db != "postgres" {
				err = fmt.Errorf("-db (BENCH_DB) is %q, not sqlite or postgres", o.db)
			} else if o.db == "postgres" && o.recallPG == "" {
				err = errors.New("-db postgres needs the server of -recall-pg")
			} else if o.conns, err = parseConns(conns); err == nil {
				err = run(ctx, o)
			}
		case "leases":
			err = runLeasesOnly(ctx, o)
		case "streams":
			err = runStreamsOnly(ctx, o)
		case "runs":
			err = runRunsOnly(ctx, o)
		default:
			err = fmt.Errorf("unknown -only %q", o.only)
		}
	case "telegram":
		err = serveTelegram(ctx, *addr, *bots)
	case "baseline", "floor":
		err = serveChild(ctx, *serve, *addr, *docBytes, *floorDB)
	default:
		err = fmt.Errorf("unknown -serve %q", *serve)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseConns(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-conns: %q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// serveChild is a child process: it serves the baseline or the floor,
// announcing its address on stderr as agentd does, until ctx is done.
func serveChild(ctx context.Context, kind, addr string, docBytes int, floorDB string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := baselineHandler(docBytes)
	if kind == "floor" {
		f, err := openFloor(floorDB)
		if err != nil {
			return err
		}
		h = f.handler()
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s\n", l.Addr())
	serveOn(ctx, l, h)
	<-ctx.Done()
	return nil
}

// child is a server process of the run.
type child struct {
	cmd  *exec.Cmd
	base string // http://ADDR
}

// childLog, when set (-child-log), gets the stderr of every process the
// bench starts: agentd's errors, which the report does not show. A Logger
// writes each line whole, whichever child's reader calls it.
var childLog *log.Logger

var listeningRE = regexp.MustCompile(`listening on (http://\S+)`)

// start runs name with args and env and waits until it announces its address.
func start(ctx context.Context, env []string, name string, args ...string) (*child, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if childLog != nil {
				childLog.Println(sc.Text())
			}
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		close(found)
	}()
	select {
	case base, ok := <-found:
		if !ok {
			_ = cmd.Wait()
			return nil, fmt.Errorf("%s exited before listening", name)
		}
		return &child{cmd: cmd, base: base}, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not listen within 30s", name)
	}
}

// stop ends the child and waits for it.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.cmd.Wait()
}

// rssKB returns the child's current and peak resident set size in KiB.
func (c *child) rssKB() (cur, peak int, err error) { return rssOf(c.cmd.Process.Pid) }

// rssOf returns the current and peak resident set size of process pid in KiB.
func rssOf(pid int) (cur, peak int, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			cur, _ = strconv.Atoi(f[1])
		case "VmHWM:":
			peak, _ = strconv.Atoi(f[1])
		}
	}
	if peak == 0 {
		return 0, 0, errors.New("no VmHWM in /proc status")
	}
	return cur, peak, nil
}
