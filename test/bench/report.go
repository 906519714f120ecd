package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// printReport writes the Markdown table of one bench run, each figure
// with its target (or the tail's) and whether it is met.
func printReport(w io.Writer, o options, r report) {
	fmt.Fprintf(w, "## make bench, %s\n\n", machine())
	tailTable(w, o, r)
	row := newTable(w)
	ab := r.ceilingBefore / r.ceilingNet
	row("engine ceiling, NetworkDisabled off", fmt.Sprintf("%.1f cycles/s (A/B: %.2f×)", r.ceilingNet, ab), "ceiling ≥ 1.8× this", ab >= 1.8)
	base, seq := r.dockerRun.pct(50), r.sparse.latency.pct(50)
	row("service, sparse sequential", fmt.Sprintf("p50 %.1f ms, %.0f× faster than `docker run --rm`", ms(seq), float64(base)/float64(max(seq, 1))),
		"p50 ≤ 6 ms, ≥ 40× `docker run --rm`", seq > 0 && seq <= 6*time.Millisecond && float64(base) >= 40*float64(seq) && r.sparse.failures() == 0)
	fmt.Fprintln(w)
	cpuTable(w, r.cpu, r.saturation.ok, r.ceilingRuns)
	killsTable(w, o, r.kills)
	dataTable(w, o, r.data)
	sessionsTable(w, o, r.sessions)
	languagesTable(w, o, r.languages)
	channelsTable(w, o, r.channels)
}

// tailTable writes the tail's figures against its targets, the
// exact command, and where the slowest 1 % of each Poisson phase spent
// their time.
func tailTable(w io.Writer, o options, r report) {
	fmt.Fprintf(w, "Command: `%s`. Program: `print('hello')` through `POST /v1/code`, the service in free mode with its default "+
		"configuration (runc, pool_size 4, pool_max 16, max_concurrency 8). Ceiling: create+start+wait+remove "+
		"of the service's own container spec, %d at once, %v, before and after saturation (the mean is the reference). Saturation: %d callers, closed loop, %v. "+
		"Poisson: open loop, %d arrivals each, counted after the load's first %v from an idle service (reported apart); the pool's counts include them. Sparse: one call every %v; baseline `docker run --rm %s python3 -c 'print(1)'` "+
		"at the same pace. Load is the host's 1-minute load average at the end of each phase.\n\n",
		command(), o.conc, o.ceiling, o.conc, o.window, o.arrivals, o.stepWindow, o.gap, o.image)
	row := newTable(w)
	row("engine ceiling (NetworkDisabled, as the service)", fmt.Sprintf("%.1f cycles/s, the mean of %.1f before saturation and %.1f right after",
		r.ceiling, r.ceilingBefore, r.ceilingAfter), "", true)
	sat := r.saturation.perSec / r.ceiling
	row(fmt.Sprintf("saturation, %d callers", o.conc), fmt.Sprintf("%.1f answers/s = %.2f× ceiling, %d failed%s, idle warm container found %.0f %%; load %s",
		r.saturation.perSec, sat, r.saturation.failures(), failures(r.saturation.failed), 100*r.saturation.hitRatio(), r.saturation.load),
		"≥ 0.9× ceiling, 0 failed", sat >= 0.9 && r.saturation.failures() == 0)
	if iv := r.interleaved; len(iv.service) > 0 {
		row(fmt.Sprintf("saturation interleaved with the ceiling, %d rounds of %v each", len(iv.service), o.interleaveSlice),
			fmt.Sprintf("%.2f×, not counting the %d answers that took containers started before their slice (answers/s : cycles/s by round: %s), %d failed",
				iv.ratio(), iv.drawnTotal(), iv.rounds(), iv.failures()),
			"≥ 0.9× ceiling, 0 failed", iv.ratio() >= 0.9 && iv.failures() == 0)
	}
	sparse := r.sparse.latency.pct(50)
	for i, share := range tailShares {
		for j, p := range r.poisson[i] {
			poissonRow(row, share.pct, p, r.ceiling*share.pct, share.p50, share.p99, sparse, binaryName(o, j))
			if p.step != nil {
				stepRow(row, *p.step, o.stepWindow, binaryName(o, j))
			}
		}
	}
	base := r.dockerRun.pct(50)
	row("`docker run --rm`, sparse", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d runs)", ms(base), ms(r.dockerRun.pct(99)), len(r.dockerRun)), "", true)
	row("service, sparse sequential", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, %d failed (%d calls); %.0f× faster than `docker run --rm`",
		ms(sparse), ms(r.sparse.latency.pct(99)), r.sparse.failures(), r.sparse.ok+r.sparse.failures(), float64(base)/float64(max(sparse, 1))),
		"≥ 20× `docker run --rm`", sparse > 0 && float64(base) >= 20*float64(sparse) && r.sparse.failures() == 0)
	fmt.Fprintln(w)
	for i, share := range tailShares {
		for j, p := range r.poisson[i] {
			slowTable(w, fmt.Sprintf("Poisson at %.0f %%%s", 100*share.pct, binaryName(o, j)), p)
		}
	}
}

// binaryName names the j-th binary of a Poisson phase in a row's title:
// nothing without -compare.
func binaryName(o options, j int) string {
	switch {
	case o.compare == "":
		return ""
	case j == 0:
		return ", " + o.binary
	default:
		return ", " + o.compare
	}
}

// poissonRow writes the row of one Poisson run against its targets (0: none).
func poissonRow(row func(what, figure, target string, ok bool), share float64, p phase, rate, p50, p99 float64, sparse time.Duration, bin string) {
	l := p.latency
	over := overMs(l, 100)
	var targets []string
	ok := p.ok > 0 && p.failures() == 0
	if p50 > 0 {
		targets = append(targets, fmt.Sprintf("p50 ≤ %.0f ms", p50))
		ok = ok && ms(l.pct(50)) <= p50
	}
	targets = append(targets, fmt.Sprintf("p99 ≤ %.0f ms", p99))
	ok = ok && ms(l.pct(99)) <= p99
	row(fmt.Sprintf("Poisson at %.0f %% of the ceiling (%.1f/s)%s", 100*share, rate, bin),
		fmt.Sprintf("p50 %.1f ms, p90 %.1f ms, p99 %.1f ms (%.0f× the sparse p50), max %.1f ms; %d over 100 ms; %d answers, %d failed%s; "+
			"idle warm container found %.0f %% (%d waited for one starting, %d started their own); the pool started %d containers "+
			"for %d runs and retired %d unused (the service's whole life); at most %d in flight; load %s",
			ms(l.pct(50)), ms(l.pct(90)), ms(l.pct(99)), float64(l.pct(99))/float64(max(sparse, 1)), ms(l.pct(100)), over,
			p.ok, p.failures(), failures(p.failed), 100*p.hitRatio(), p.waits, p.misses, p.started, p.hits+p.waits+p.misses,
			p.retired, p.inFlight, p.load),
		strings.Join(targets, ", "), ok)
}

// stepRow writes the row of a Poisson phase's first seconds, from an idle
// service to the load: no target, as they are not the steady tail.
func stepRow(row func(what, figure, target string, ok bool), p phase, step time.Duration, bin string) {
	l := p.latency
	row(fmt.Sprintf("… its first %v from an idle service, before the arrivals above%s", step, bin),
		fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d over 100 ms; %d answers, %d failed%s",
			ms(l.pct(50)), ms(l.pct(99)), ms(l.pct(100)), overMs(l, 100), p.ok, p.failures(), failures(p.failed)),
		"(not counted)", p.failures() == 0)
}

// overMs counts the latencies over n ms.
func overMs(l latencies, n int) int {
	var over int
	for _, d := range l {
		if d > time.Duration(n)*time.Millisecond {
			over++
		}
	}
	return over
}

// slowTable writes where the slowest 1 % of a phase's answers spent their
// time, phase by phase, beside the median answer's: the mean time in each,
// and how many of them had it. "outside" is the wall time at the caller
// less the phases the service listed: the HTTP exchange and the encoding.
func slowTable(w io.Writer, title string, p phase) {
	if len(p.samples) == 0 {
		return
	}
	byWall := append([]sample(nil), p.samples...)
	sort.Slice(byWall, func(i, j int) bool { return byWall[i].wall < byWall[j].wall })
	k := max(1, (len(byWall)+99)/100)
	slow := byWall[len(byWall)-k:]
	mid := byWall[len(byWall)/2]
	fmt.Fprintf(w, "%s: the slowest 1 %% (%d answers, %.1f to %.1f ms) against the median answer (%.1f ms), by phase (Server-Timing):\n\n",
		title, k, ms(slow[0].wall), ms(slow[k-1].wall), ms(mid.wall))
	fmt.Fprintln(w, "| phase | slowest 1 %: mean ms | of them, had it | median answer: ms |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, ph := range append(phaseOrder, "outside") {
		var sum time.Duration
		had := 0
		for _, sm := range slow {
			if d, ok := phaseOf(sm, ph); ok {
				sum += d
				had++
			}
		}
		md, _ := phaseOf(mid, ph)
		if had == 0 && md == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %.1f | %d | %.1f |\n", ph, ms(sum)/float64(k), had, ms(md))
	}
	var ats []string
	for _, sm := range p.samples {
		if sm.wall > 100*time.Millisecond {
			ats = append(ats, fmt.Sprintf("%.1f", sm.at.Seconds()))
		}
	}
	fmt.Fprintf(w, "\nThe answers over 100 ms arrived at (s into the phase, which began at %s UTC): %s.\n\n",
		p.began.UTC().Format("15:04:05.000"), strings.Join(ats, ", "))
}

// phaseOrder is the order of the service's phases (sandboxd.Phase) in the
// slow table.
var phaseOrder = []string{"read", "payment", "admit", "reserve", "take", "take_wait", "start", "handover", "program", "demux", "settle"}

// phaseOf is the time sm spent in ph ("outside": the wall time less every
// phase listed), and whether it had that phase.
func phaseOf(sm sample, ph string) (time.Duration, bool) {
	if ph != "outside" {
		d, ok := sm.phases[ph]
		return d, ok
	}
	in := time.Duration(0)
	for _, d := range sm.phases {
		in += d
	}
	return sm.wall - in, true
}

// cpuTable writes the host's CPU per answer at saturation, by process,
// beside the engine's own per cycle over the ceiling's runs (when given):
// what an answer costs beyond a bare create+start+wait+remove.
func cpuTable(w io.Writer, c cpuSplit, answers int64, ceiling []ceilingRun) {
	if answers == 0 {
		return
	}
	per := func(d time.Duration) float64 { return ms(d) / float64(answers) }
	var cycles int64
	eng := cpuSplit{groups: map[string]time.Duration{}, ended: map[string]int{}}
	for _, cr := range ceiling {
		cycles += cr.cycles
		eng.host += cr.cpu.host
		for g, d := range cr.cpu.groups {
			eng.groups[g] += d
		}
		for g, n := range cr.cpu.ended {
			eng.ended[g] += n
		}
	}
	perCycle := func(d time.Duration) string {
		if cycles == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", ms(d)/float64(cycles))
	}
	endedPerCycle := func(n int) string {
		if cycles == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", float64(n)/float64(cycles))
	}
	fmt.Fprintf(w, "Host CPU at saturation: %.1f ms of CPU per answer (%.1f CPU-s over %d answers, /proc/stat); "+
		"the engine ceiling's runs: %s ms per cycle (%d cycles).",
		per(c.host), c.host.Seconds(), answers, perCycle(eng.host), cycles)
	if !c.exitedOK {
		fmt.Fprint(w, " Process accounting was unavailable (not root?): processes that ended in the window are in `other`.")
	}
	fmt.Fprint(w, "\n\n| process | CPU ms per answer | share | processes ended per answer | ceiling: CPU ms per cycle | ceiling: ended per cycle |\n|---|---|---|---|---|---|\n")
	for _, g := range cpuGroups {
		fmt.Fprintf(w, "| %s | %.1f | %.0f %% | %.1f | %s | %s |\n", g, per(c.groups[g]), 100*c.groups[g].Seconds()/max(c.host.Seconds(), 1e-9),
			float64(c.ended[g])/float64(answers), perCycle(eng.groups[g]), endedPerCycle(eng.ended[g]))
	}
	fmt.Fprintln(w, "\nProcesses are grouped by command name over the whole host, so other tenants' processes count too. "+
		"`other` is the host's total less the named groups: kernel threads, other tenants, and what process accounting "+
		"misses (it truncates each ended process's CPU to 10 ms ticks, so short ones such as runc's count low). "+
		"`steal` is time the VM's hypervisor gave to something else while this host had work: it counts in the host's "+
		"total, so a run with much of it has every figure per answer inflated. "+
		"The ceiling's cycle has no attach, no program and no service (its `bench client` is the cycling itself). "+
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
