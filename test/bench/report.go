package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// printReport writes the Markdown table of one bench run, each figure
// with its target from issue 9 and whether it is met.
func printReport(w io.Writer, o options, r report) {
	fmt.Fprintf(w, "## make bench, %s\n\n", machine())
	fmt.Fprintf(w, "Program: `print('hello')` through `POST /v1/code`, the service in free mode with its default "+
		"configuration (runc, pool_size 4, pool_max 16, max_concurrency 8). Ceiling: create+start+wait+remove "+
		"of the service's own container spec, %d at once, %v. Saturation: %d callers, closed loop, %v. "+
		"Poisson: open loop, %v each. Sparse: one call every %v; baseline `docker run --rm %s python3 -c 'print(1)'` "+
		"at the same pace.\n\n", o.conc, o.ceiling, o.conc, o.window, o.poisson, o.gap, o.image)
	row := newTable(w)
	ab := r.ceiling / r.ceilingNet
	row("engine ceiling (NetworkDisabled, as the service)", fmt.Sprintf("%.1f cycles/s", r.ceiling), "", true)
	row("engine ceiling, NetworkDisabled off", fmt.Sprintf("%.1f cycles/s (A/B: %.2f×)", r.ceilingNet, ab), "ceiling ≥ 1.8× this", ab >= 1.8)
	sat := r.saturation.perSec / r.ceiling
	row(fmt.Sprintf("saturation, %d callers", o.conc), fmt.Sprintf("%.1f answers/s = %.2f× ceiling, %d failed%s, idle warm container found %.0f %%",
		r.saturation.perSec, sat, r.saturation.failures(), failures(r.saturation.failed), 100*r.saturation.hitRatio()),
		"≥ 0.9× ceiling, 0 failed", sat >= 0.9 && r.saturation.failures() == 0)
	poissonRow(row, "40", r.poisson40, r.ceiling*0.4, 10, 100)
	poissonRow(row, "70", r.poisson70, r.ceiling*0.7, 15, 250)
	base, seq := r.dockerRun.pct(50), r.sparse.latency.pct(50)
	row("`docker run --rm`, sparse", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d runs)", ms(base), ms(r.dockerRun.pct(99)), len(r.dockerRun)), "", true)
	row("service, sparse sequential", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, %d failed (%d calls); %.0f× faster than `docker run --rm`",
		ms(seq), ms(r.sparse.latency.pct(99)), r.sparse.failures(), r.sparse.ok+r.sparse.failures(), float64(base)/float64(max(seq, 1))),
		"p50 ≤ 6 ms, ≥ 40× `docker run --rm`", seq > 0 && seq <= 6*time.Millisecond && float64(base) >= 40*float64(seq) && r.sparse.failures() == 0)
	fmt.Fprintln(w)
	cpuTable(w, r.cpu, r.saturation.ok)
	killsTable(w, o, r.kills)
	dataTable(w, o, r.data)
	sessionsTable(w, o, r.sessions)
}

// poissonRow writes the row of one Poisson run against its targets.
func poissonRow(row func(what, figure, target string, ok bool), pct string, p phase, rate, p50, p99 float64) {
	row(fmt.Sprintf("Poisson at %s %% of the ceiling (%.1f/s)", pct, rate),
		fmt.Sprintf("p50 %.1f ms, p95 %.1f ms, p99 %.1f ms; %d answers, %d failed%s; idle warm container found %.0f %% (%d waited for one starting, %d started their own); at most %d in flight",
			ms(p.latency.pct(50)), ms(p.latency.pct(95)), ms(p.latency.pct(99)), p.ok, p.failures(), failures(p.failed),
			100*p.hitRatio(), p.waits, p.misses, p.inFlight),
		fmt.Sprintf("p50 ≤ %.0f ms, p99 ≤ %.0f ms", p50, p99),
		p.ok > 0 && ms(p.latency.pct(50)) <= p50 && ms(p.latency.pct(99)) <= p99 && p.failures() == 0)
}

// cpuTable writes the host's CPU per answer at saturation, by process.
func cpuTable(w io.Writer, c cpuSplit, answers int64) {
	if answers == 0 {
		return
	}
	per := func(d time.Duration) float64 { return ms(d) / float64(answers) }
	fmt.Fprintf(w, "Host CPU at saturation: %.1f ms of CPU per answer (%.1f CPU-s over %d answers, /proc/stat).",
		per(c.host), c.host.Seconds(), answers)
	if !c.exitedOK {
		fmt.Fprint(w, " Process accounting was unavailable (not root?): processes that ended in the window are in `other`.")
	}
	fmt.Fprint(w, "\n\n| process | CPU ms per answer | share | processes ended per answer |\n|---|---|---|---|\n")
	for _, g := range cpuGroups {
		fmt.Fprintf(w, "| %s | %.1f | %.0f %% | %.1f |\n", g, per(c.groups[g]), 100*c.groups[g].Seconds()/max(c.host.Seconds(), 1e-9),
			float64(c.ended[g])/float64(answers))
	}
	fmt.Fprintln(w, "\nProcesses are grouped by command name over the whole host, so other tenants' processes count too. "+
		"`other` is the host's total less the named groups: kernel threads, other tenants, and what process accounting "+
		"misses (it truncates each ended process's CPU to 10 ms ticks, so short ones such as runc's count low). "+
		"`perf record -a -g` at saturation gives the exact attribution.")
}

// failures lists the kinds of failed calls, if any.
func failures(status map[string]int64) string {
	if len(status) == 0 {
		return ""
	}
	var parts []string
	for k, v := range status {
		parts = append(parts, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(parts)
	return " (" + strings.Join(parts, ", ") + ")"
}

// newTable writes the head of a table of measures against targets and
// returns its row writer: PASS or MISS by ok, nothing without a target.
func newTable(w io.Writer) func(what, figure, target string, ok bool) {
	fmt.Fprintln(w, "| measure | figure | target | |")
	fmt.Fprintln(w, "|---|---|---|---|")
	return func(what, figure, target string, ok bool) {
		verdict := map[bool]string{true: "PASS", false: "MISS"}[ok]
		if target == "" {
			verdict = ""
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", what, figure, target, verdict)
	}
}
