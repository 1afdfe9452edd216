package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// leaseWriteLimit is the bound on lease writes, all replicas
// together, in the steady state.
const leaseWriteLimit = 100

// leaseStartLimit is the longest start-up the report calls met.
const leaseStartLimit = time.Minute

// leasesHeading starts the section of the connection leases scenario.
const leasesHeading = "## Connection leases"

// leaseTargets are the scenario's goals and where each run stands.
func leaseTargets(runs []leaseRun) []target {
	var ts []target
	for _, r := range runs {
		calls, _ := r.steady.writes.total()
		rate := r.steady.rate(calls)
		ts = append(ts, target{fmt.Sprintf("lease writes < %d/s in all, steady state (%s)", leaseWriteLimit, r.backend),
			fmt.Sprintf("%.1f/s (%s calls in %s)", rate, thousands(calls), r.steady.took.Round(time.Second)), rate < leaseWriteLimit, r.steady.took > 0})
		ts = append(ts, target{fmt.Sprintf("all %s connected within %s (%s)", thousands(int64(r.o.agents)), leaseStartLimit, r.backend),
			r.startText(), r.allConnected && r.connectedAfter <= leaseStartLimit, true})
		worst, owner := 0, ""
		for _, o := range r.o.owners() {
			if n := max(r.maxHeld[o], r.heldAtStart[o]); n > worst {
				worst, owner = n, o
			}
		}
		ts = append(ts, target{fmt.Sprintf("no replica over its share of %s (%s)", thousands(int64(r.share())), r.backend),
			fmt.Sprintf("most held: %s by %s", thousands(int64(worst)), owner), worst <= r.share(), worst > 0})
	}
	return ts
}

// startText says how long the connections took to be connected.
func (r leaseRun) startText() string {
	if !r.allConnected {
		return fmt.Sprintf("only %s of %s after %s", thousands(int64(r.bestConnected)), thousands(int64(r.o.agents)), r.connectedAfter.Round(time.Second))
	}
	return r.connectedAfter.Round(100 * time.Millisecond).String()
}

// heldText lists the leases each replica holds.
func (r leaseRun) heldText(held map[string]int) string {
	var parts []string
	for _, o := range r.o.owners() {
		parts = append(parts, fmt.Sprintf("%s %s", o, thousands(int64(held[o]))))
	}
	return strings.Join(parts, ", ")
}

// leasesSection renders the section of the connection leases scenario.
func leasesSection(runs []leaseRun) string {
	var b bytes.Buffer
	o := runs[0].o
	fmt.Fprintf(&b, "%s (%s bots, %d replicas)\n\n", leasesHeading, thousands(int64(o.agents)), o.replicas)
	fmt.Fprintf(&b, "%s agents, each with clients [\"telegram\"] and its own bot token, on one fresh database shared by %d "+
		"in-process replicas (%d connect.Supervisors, each on its own store handle, owners %s; default LeaseTTL 15s and "+
		"RenewEvery 3s), against one Telegram wire-format test server (connect/telegram/telegramtest, in a child process) "+
		"holding every bot, long polls of %s. Each supervisor's connect.Connections is wrapped in a counter of the calls that "+
		"write (%s; PendingPlatformMessages is a read under the lease, counted with them). The replicas start together; "+
		"start-up runs until every connection is stored connected under a live lease (read from the database every 0.5 s), "+
		"the steady state is the %s after it, the stop is the replicas shutting down (each releases its leases). "+
		"PostgreSQL pools: %d connections per replica (the server is shared with other work).\n\n",
		thousands(int64(o.agents)), o.replicas, o.replicas, strings.Join(o.owners(), ", "), o.pollTimeout,
		strings.Join(writeMethodNames[:firstDetail], ", "), o.window, o.pgPool)
	b.WriteString("Start-up, from the replicas' start until every connection is stored connected:\n\n" +
		"| backend | seeding | all connected after | every bot polling after | leases held then | lease writes | per second | " +
		"writes that found their lease lost | longest gap between a replica's renewals | Bot API calls |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		calls, _ := r.startup.writes.total()
		wire := "not seen"
		if r.wireAfter > 0 {
			wire = r.wireAfter.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %.1f | %s | %s | %s |\n", r.backend, r.seeded.Round(time.Second), r.startText(), wire,
			r.heldText(r.heldAtStart), thousands(calls), r.startup.rate(calls), thousands(r.startup.writes.lost),
			r.startup.writes.maxGap.Round(100*time.Millisecond), callsText(r.startup.api))
	}
	fmt.Fprintf(&b, "\nSteady state, the %s after every connection was connected (RSS, heap and goroutines of the process running the "+
		"replicas, at the end of the window; warnings logged by the replicas over the whole run):\n\n", o.window)
	b.WriteString("| backend | lease writes/s in all | leases held at the end | most held | fewest connected | writes that found their lease lost | " +
		"longest gap between renewals | Bot API calls/s | RSS (peak) | Go heap | goroutines | warnings |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		calls, _ := r.steady.writes.total()
		var api int64
		for _, n := range r.steady.api {
			api += n
		}
		fmt.Fprintf(&b, "| %s | **%.1f** | %s | %s | %s | %s | %s | %.1f | %.0f MB (%.0f MB) | %.0f MB | %s | %s |\n",
			r.backend, r.steady.rate(calls), r.heldText(r.heldAtEnd), r.heldText(r.maxHeld), thousands(int64(r.minConnected)),
			thousands(r.steady.writes.lost), r.steady.writes.maxGap.Round(100*time.Millisecond), r.steady.rate(api),
			float64(r.rssKB)/1024, float64(r.hwmKB)/1024, r.heapMB, thousands(int64(r.goroutines)), thousands(int64(r.warnings)))
	}
	b.WriteString("\nWrites by method (calls, and calls per second over the phase; failed calls in brackets):\n\n")
	b.WriteString("| backend | method | start-up | /s | steady | /s | stop | /s |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		row := func(m writeMethod, name string) {
			if r.startup.writes.calls[m]+r.steady.writes.calls[m]+r.stop.writes.calls[m] > 0 {
				fmt.Fprintf(&b, "| %s | %s |%s|%s|%s|\n", r.backend, name, cell(r.startup, m), cell(r.steady, m), cell(r.stop, m))
			}
		}
		for m := range firstDetail {
			row(m, m.String())
		}
		fmt.Fprintf(&b, "| %s | **all** |%s|%s|%s|\n", r.backend, totalCell(r.startup), totalCell(r.steady), totalCell(r.stop))
		for m := firstDetail; m < nWriteMethods; m++ {
			row(m, "↳ "+m.String())
		}
	}
	b.WriteString("\nPer replica, all methods (start-up / steady / stop):\n\n| backend | replica | start-up | steady | stop |\n|---|---|---|---|---|\n")
	for _, r := range runs {
		for i, owner := range r.o.owners() {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.backend, owner, replicaCalls(r.startup, i), replicaCalls(r.steady, i), replicaCalls(r.stop, i))
		}
	}
	b.WriteString("\n")
	for _, r := range runs {
		var rates []string
		for _, v := range r.slices {
			rates = append(rates, fmt.Sprintf("%.1f", v))
		}
		fmt.Fprintf(&b, "- %s: lease writes/s in each %s of the window: %s. Share %s leases per replica; at the end of the window %s bots had a poll in flight. "+
			"Bot API calls in the window: %s. The stop took %s%s.",
			r.backend, windowSlice, strings.Join(rates, ", "), thousands(int64(r.share())), thousands(int64(r.polling)), callsText(r.steady.api),
			r.stop.took.Round(100*time.Millisecond), map[bool]string{true: "", false: " (it did not finish: cut off)"}[r.stopped])
		if len(r.firstWarnings) > 0 {
			fmt.Fprintf(&b, " First warnings: %s.", strings.Join(quoted(r.firstWarnings), "; "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| target | measured | status |\n|---|---|---|\n")
	for _, t := range leaseTargets(runs) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.name, t.measured, status(t))
	}
	return b.String()
}

// cell is one method's calls in phase p: count (failures) | rate.
func cell(p leasePhase, m writeMethod) string {
	n, e := p.writes.calls[m], p.writes.errs[m]
	failed := ""
	if e > 0 {
		failed = fmt.Sprintf(" (%s)", thousands(e))
	}
	return fmt.Sprintf(" %s%s | %.2f ", thousands(n), failed, p.rate(n))
}

// totalCell is every method's calls in phase p.
func totalCell(p leasePhase) string {
	n, e := p.writes.total()
	failed := ""
	if e > 0 {
		failed = fmt.Sprintf(" (%s)", thousands(e))
	}
	return fmt.Sprintf(" **%s**%s | **%.2f** ", thousands(n), failed, p.rate(n))
}

// replicaCalls is replica i's calls in phase p.
func replicaCalls(p leasePhase, i int) string {
	if i >= len(p.perReplica) {
		return ""
	}
	n, _ := p.perReplica[i].total()
	return thousands(n)
}

// callsText lists Bot API calls by method.
func callsText(calls map[string]int64) string {
	if len(calls) == 0 {
		return "none"
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s %s", m, thousands(calls[m])))
	}
	return strings.Join(parts, ", ")
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "`" + strings.ReplaceAll(s, "`", "'") + "`"
	}
	return out
}

// status is how the report shows a target.
func status(t target) string {
	switch {
	case !t.known:
		return "not measured"
	case t.met:
		return "met"
	}
	return "**missed**"
}

// sectionAt returns where the section of report starting with heading
// begins and ends (at the next "## " heading, or the end); ok false when
// report has none.
func sectionAt(report, heading string) (start, end int, ok bool) {
	i := strings.Index(report, "\n"+heading)
	if i < 0 {
		return 0, 0, false
	}
	start, end = i+1, len(report)
	if j := strings.Index(report[start+len(heading):], "\n## "); j >= 0 {
		end = start + len(heading) + j + 1
	}
	return start, end, true
}

// section returns the section of report starting with heading, ending in
// one newline; "" when report has none.
func section(report, heading string) string {
	start, end, ok := sectionAt(report, heading)
	if !ok {
		return ""
	}
	return strings.TrimRight(report[start:end], "\n") + "\n"
}

// spliceSection replaces the section starting with heading in report
// with sec; when report has none, sec goes before "## Targets", or at the
// end.
func spliceSection(report, heading, sec string) string {
	sec = strings.TrimRight(sec, "\n") + "\n"
	if start, end, ok := sectionAt(report, heading); ok {
		if end == len(report) {
			return report[:start] + sec
		}
		return report[:start] + sec + "\n" + report[end:]
	}
	if i := strings.Index(report, "\n## Targets"); i >= 0 {
		return report[:i+1] + sec + "\n" + report[i+1:]
	}
	return strings.TrimRight(report, "\n") + "\n\n" + sec
}

// runLeasesOnly is -only leases: the scenario alone, its section printed
// and put in place of the one in -out (the rest of the file is kept).
func runLeasesOnly(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "agentd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	runs, err := benchLeases(ctx, dir, o.recallPG, o.leases)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return errors.New("leases: nothing was measured")
	}
	section := leasesSection(runs) + fmt.Sprintf("\nMeasured %s with `go run ./bench -only leases`; the rest of this file is from the last full run.\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Print(section)
	if o.out == "" {
		return nil
	}
	old, err := os.ReadFile(o.out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(o.out, []byte(spliceSection(string(old), leasesHeading, section)), 0o644)
}
