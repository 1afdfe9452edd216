package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// riverSQLiteHeading starts the section on River's SQLite driver, which
// BenchmarkRiverOnSQLite (package jobs) measured and the bench keeps.
const riverSQLiteHeading = "## River on SQLite: measured before building on it"

// report collects the points of a run and renders them.
type report struct {
	o                          options
	docBytes                   int
	database                   string // agentd's and the floor's, e.g. "PostgreSQL 15.4 (127.0.0.1)"
	points                     []point
	rssKB, rssPeakKB, rssEndKB int
	syncTook                   time.Duration // the connection supervisor's first sync
	recall                     []recallPoint
	leases                     []leaseRun
}

func (r *report) add(p point) { r.points = append(r.points, p) }

// find returns the point of workload on system at conns.
func (r *report) find(workload, system string, conns int) (result, bool) {
	for _, p := range r.points {
		if p.workload == workload && p.system == system && p.conns == conns {
			return p.res, true
		}
	}
	return result{}, false
}

// at16 is the concurrency the throughput targets are read at: 16 when
// measured, else the highest.
func (r *report) at16() int {
	best := 0
	for _, c := range r.o.conns {
		if c == 16 {
			return 16
		}
		best = max(best, c)
	}
	return best
}

// target is one goal of the issue and where this run stands.
type target struct {
	name, measured string
	met, known     bool
}

func (r *report) targets() []target {
	c, one := r.at16(), r.o.conns[0]
	rate := func(w, s string, conns int) (float64, bool) {
		res, ok := r.find(w, s, conns)
		return res.rate(), ok && res.n > 0
	}
	var ts []target
	atLeast := func(name, w string, goal float64) {
		v, ok := rate(w, "agentd", c)
		ts = append(ts, target{name, fmt.Sprintf("%.0f/s at %d conns", v, c), v >= goal, ok})
	}
	ratio := func(name, wa, sa, wb, sb string, goal float64, most bool) {
		a, okA := rate(wa, sa, c)
		b, okB := rate(wb, sb, c)
		v := a / b
		met := v >= goal
		if most {
			met = v <= goal
		}
		ts = append(ts, target{name, fmt.Sprintf("%.2f× (%.0f / %.0f) at %d conns", v, a, b, c), met, okA && okB})
	}
	ratio("Get ≥ 0.7× the floor's read", "Get", "agentd", "Get", "floor", 0.7, false)
	atLeast("Create ≥ 3,000/s", "Create", 3000)
	ratio("Create on 100k within 1.2× of on 1k (1k / 100k ≤ 1.2)", "Create", "agentd", "Create", "agentd-big", 1.2, true)
	atLeast("List page 1 ≥ 5,000/s", "List page 1", 5000)
	atLeast("List limit 100 ≥ 2,000/s", "List limit 100", 2000)
	ratio(fmt.Sprintf("%s within 1.3× of page 1 (page 1 / page N ≤ 1.3)", r.lastPage()), "List page 1", "agentd", r.lastPage(), "agentd", 1.3, true)
	atLeast("PATCH ≥ 4,000/s", "PATCH", 4000)
	// Round 4's: the write paths and lists against the floor itself.
	ratio("Create ≥ 0.5× the floor's Create", "Create", "agentd", "Create", "floor", 0.5, false)
	ratio("PATCH ≥ 0.5× the floor's Create", "PATCH", "agentd", "Create", "floor", 0.5, false)
	ratio("List page 1 ≥ 0.5× the floor's Get", "List page 1", "agentd", "Get", "floor", 0.5, false)
	ratio(fmt.Sprintf("%s within 1.2× of page 1 (page 1 / page N ≤ 1.2)", r.lastPage()), "List page 1", "agentd", r.lastPage(), "agentd", 1.2, true)
	added, ok := r.added(one)
	ts = append(ts, target{"Send Message adds ≤ 0.8 ms p50", fmt.Sprintf("%s at %d conn", ms(added), one), added <= 800*time.Microsecond, ok})
	ts = append(ts, target{"Send Message adds ≤ 1.0 ms p50 with runs in place", fmt.Sprintf("%s at %d conn", ms(added), one),
		added <= time.Millisecond, ok})
	atLeast("Send Message ≥ 1,800 msg/s", "Send Message", 1800)
	for _, conns := range []int{one, c} {
		step, ok := r.toolStep(conns)
		ts = append(ts, target{fmt.Sprintf("a tool step adds ≤ 1 ms p50 (%d conns)", conns), ms(step), step <= time.Millisecond, ok})
	}
	for _, p := range r.recall {
		if p.what == "memories" && p.items == 10_000 {
			ts = append(ts, target{fmt.Sprintf("recall of 10,000 memories ≤ 10 ms p95 (%s, %s)", p.backend, p.ranking),
				ms(p.p95), p.p95 <= 10*time.Millisecond, p.p95 > 0})
			if p.backend == "postgres" && p.ranking == "full text" {
				ts = append(ts, target{"recall of 10,000 memories ≤ 15 ms p95 (postgres, full text; round 4)",
					ms(p.p95), p.p95 <= 15*time.Millisecond, p.p95 > 0})
			}
		}
	}
	first, okF := r.find("Stream first token", "agentd", one)
	ts = append(ts, target{"first token ≤ 1 ms after the provider sent it", fmt.Sprintf("p50 %s at %d conn", ms(first.quantile(0.5)), one),
		first.quantile(0.5) <= time.Millisecond, okF && first.n > 0})
	ts = append(ts, leaseTargets(r.leases)...)
	peak := fmt.Sprintf("%.1f MB", float64(r.rssPeakKB)/1024)
	ts = append(ts, target{"peak RSS < 100 MB", peak, r.rssPeakKB < 100*1024, r.rssPeakKB > 0})
	ts = append(ts, target{"peak RSS ≤ 60 MB", peak, r.rssPeakKB <= 60*1024, r.rssPeakKB > 0})
	return ts
}

func (r *report) lastPage() string {
	for _, p := range r.points {
		if strings.HasPrefix(p.workload, "List page ") && p.workload != "List page 1" {
			return p.workload
		}
	}
	return "List page 500"
}

// added is what agentd adds to a message at conns: its p50 minus the
// provider's own p50.
func (r *report) added(conns int) (time.Duration, bool) {
	a, okA := r.find("Send Message", "agentd", conns)
	p, okP := r.find("Send Message", "provider", conns)
	return a.quantile(0.5) - p.quantile(0.5), okA && okP && a.n > 0 && p.n > 0
}

// toolStep is agentd's own time per tool step at conns: a tool turn's p50
// less a plain message's (the same turn without the step), the provider's
// second call and the handler's own p50.
func (r *report) toolStep(conns int) (time.Duration, bool) {
	tool, okT := r.find("Tool turn", "agentd", conns)
	h, okH := r.find("Tool turn", "handler", conns)
	msg, okM := r.find("Send Message", "agentd", conns)
	p, okP := r.find("Send Message", "provider", conns)
	ok := okT && okH && okM && okP && tool.n > 0 && h.n > 0 && msg.n > 0 && p.n > 0
	return tool.quantile(0.5) - msg.quantile(0.5) - p.quantile(0.5) - h.quantile(0.5), ok
}

// write renders the report to w and, when set, to the -out file.
func (r *report) write(w io.Writer) error {
	var b bytes.Buffer
	product, _, _ := strings.Cut(r.database, " ")
	fmt.Fprintf(&b, "# agentd bench on %s: %s\n\n", product, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Machine: %s. %s. agentd and the floor (Echo + GORM) on %s, a fresh database each; "+
		"× floor is to that floor.\n\n", machine(), goVersion(), r.database)
	fmt.Fprintf(&b, "Each point runs %s after %s of warm-up; systems alternate at each concurrency. "+
		"agentd runs with authentication, validation, rate limits (an enterprise account whose limits never bind), "+
		"logging at error level and the envelope. Its database holds %d agents in the measured account, %d in the Create-at-scale account, "+
		"%d messages. Measuring starts once the connection supervisor's first sync has stored the state of every seeded agent's "+
		"platform connections (it took %s). The load generator shares the machine, so figures are relative: read the ratios, measured in the same run. "+
		"The machine is shared with other work; figures are noisy.\n\n",
		r.o.dur, r.o.warmup, r.o.agents, r.o.big, r.o.messages, r.syncTook.Round(100*time.Millisecond))
	b.WriteString("| workload | system | conns | req/s | p50 | p99 | errors | × baseline | × floor |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range r.points {
		ratio := func(sys string) string {
			if !strings.HasPrefix(p.system, "agentd") {
				return ""
			}
			w := p.workload
			if strings.HasPrefix(w, "List") {
				w = "List limit 100"
				if p.workload != w {
					return ""
				}
			}
			o, ok := r.find(w, sys, p.conns)
			if !ok || o.n == 0 {
				return ""
			}
			return fmt.Sprintf("%.2f", p.res.rate()/o.rate())
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %s | %s | %d | %s | %s |\n", p.workload, p.system, p.conns, p.res.rate(),
			ms(p.res.quantile(0.5)), ms(p.res.quantile(0.99)), p.res.errs, ratio("baseline"), ratio("floor"))
	}
	b.WriteString("\nStream first token: p50 and p99 are how long after the provider wrote the first token the client read it through agentd.\n" +
		"agentd-big is Create on the account holding the Create-at-scale agents; agentd is Create on a fresh account of " +
		fmt.Sprint(r.o.small) + " agents at each concurrency.\n\n")
	b.WriteString("## Time added per message\n\n| conns | agentd p50 − provider p50 |\n|---|---|\n")
	for _, c := range r.o.conns {
		if d, ok := r.added(c); ok {
			fmt.Fprintf(&b, "| %d | %s |\n", c, ms(d))
		}
	}
	b.WriteString("\n## Time per tool step\n\nA tool turn is two provider calls and one action handler call. " +
		"agentd's own time per step is the tool turn's p50 less a plain message's p50, the provider's and the handler's own p50.\n\n" +
		"| conns | tool turn p50 | agentd per step |\n|---|---|---|\n")
	for _, c := range r.o.conns {
		if d, ok := r.toolStep(c); ok {
			tool, _ := r.find("Tool turn", "agentd", c)
			fmt.Fprintf(&b, "| %d | %s | %s |\n", c, ms(tool.quantile(0.5)), ms(d))
		}
	}
	b.WriteString("\n## Recall\n\nOne agent's recall of the 5 best memories (of its user and agent-wide) or knowledge chunks for a message, " +
		"in process, the embedding call excluded (an instant embedder of 1,536 dimensions); " +
		fmt.Sprint(recallRounds) + " recalls a point. On PostgreSQL the tables are analyzed after seeding, as autovacuum would " +
		"within a minute, and auto_explain logs the plan of any statement over 10 ms to the server's log.\n\n| backend | items | held | ranking | p50 | p95 |\n|---|---|---|---|---|---|\n")
	for _, p := range r.recall {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", p.backend, p.what, p.items, p.ranking, ms(p.p50), ms(p.p95))
	}
	fmt.Fprintf(&b, "\n## Memory\n\nagentd peak RSS (VmHWM) after the Get, List, PATCH and message workloads "+
		"(%d agents measured, %d stored messages and more added by the run): **%.1f MB** (current %.1f MB); "+
		"at the end of the run, after the Create workloads: %.1f MB.\n\n",
		r.o.agents, r.o.messages, float64(r.rssPeakKB)/1024, float64(r.rssKB)/1024, float64(r.rssEndKB)/1024)
	// The scenarios this run did not measure (leases without -with-leases,
	// open streams and runs always: -only streams, -only runs; River on
	// SQLite, measured by a Go benchmark of package jobs) keep their last
	// measurement.
	var old []byte
	if r.o.out != "" {
		old, _ = os.ReadFile(r.o.out)
	}
	keep := func(heading string) {
		if sec := section(string(old), heading); sec != "" {
			b.WriteString(sec + "\n")
		}
	}
	if len(r.leases) > 0 {
		b.WriteString(leasesSection(r.leases) + "\n")
	} else {
		keep(leasesHeading)
	}
	keep(streamsHeading)
	keep(runsHeading)
	keep(riverSQLiteHeading)
	b.WriteString("## Targets\n\n| target | measured | status |\n|---|---|---|\n")
	for _, t := range r.targets() {
		status := "**missed**"
		switch {
		case !t.known:
			status = "not measured"
		case t.met:
			status = "met"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.name, t.measured, status)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return err
	}
	if r.o.out == "" {
		return nil
	}
	return os.WriteFile(r.o.out, b.Bytes(), 0o644)
}

// machine describes the machine: CPUs and their model.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%d CPUs (nproc), %s, %s/%s, host %s", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH, host)
}

// goVersion is the toolchain that built agentd (the one on PATH) and this program.
func goVersion() string {
	if out, err := exec.Command("go", "version").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return runtime.Version()
}
