package main

import (
	"fmt"
	"io"
)

// The languages' aims: a warm one-shot in another language within this factor
// of Python's p50 in the same run, and a session call's p50 within
// sessionCallTarget.
const languageOneShotFactor = 2.0

// languagesTable writes the languages phase against its aims.
func languagesTable(w io.Writer, o options, r languagesReport) {
	py := r.figures["python"]
	if py == nil || len(py.sparse) == 0 {
		return
	}
	fmt.Fprintf(w, "\nLanguages, over HTTP to one service (free mode, its default configuration: python's pool_size 4, "+
		"node's 2). Sparse: a hello world of each language in turns, one at a time, %v before each. Under load: each language's "+
		"hello world alone, arriving (Poisson) at 40 %% of the engine ceiling (%.1f cycles/s, so %.1f/s), %d arrivals. Session: "+
		"a step of state (`x += 1; x`, Bash `x=$((x+1)); echo $x`) in a warm session of each language, in turns, %v before each, "+
		"once the %d containers the load left were removed (%.1f s).\n\n",
		o.gap, r.ceiling, r.loadRate, o.arrivals/2, o.gap, r.removals.left, r.removals.took.Seconds())
	table := newTable(w)
	pp := func(l latencies) string {
		return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d calls)", ms(l.pct(50)), ms(l.pct(99)), len(l))
	}
	base := py.sparse.pct(50)
	for _, l := range benchLanguages {
		f := r.figures[l.name]
		if f == nil || len(f.sparse) == 0 {
			continue
		}
		ratio := float64(f.sparse.pct(50)) / float64(max(base, 1))
		target, ok := "", true
		if l.name != "python" {
			target, ok = fmt.Sprintf("p50 ≤ %.0f× python's", languageOneShotFactor), ratio <= languageOneShotFactor
		}
		table(l.name+" hello world, sparse", fmt.Sprintf("%s; %.2f× python's", pp(f.sparse), ratio), target, ok)
		table(l.name+" hello world at 40 % load", fmt.Sprintf("%s, %d failed%s, at most %d in flight; load %s",
			pp(f.loaded.latency), f.loaded.failures(), failures(f.loaded.failed), f.loaded.inFlight, f.loaded.load), "", true)
		call := f.session.pct(50)
		table(l.name+" session call", pp(f.session), fmt.Sprintf("p50 ≤ %.0f ms", ms(sessionCallTarget)),
			call > 0 && call <= sessionCallTarget)
	}
	fmt.Fprintln(w)
}
