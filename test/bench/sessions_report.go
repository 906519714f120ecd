package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// The aims for sessions.
const (
	sessionCallTarget       = 5 * time.Millisecond
	sessionCallLoadedTarget = 10 * time.Millisecond
	sessionOpenTarget       = 50 * time.Millisecond
)

// sessionsTable writes the sessions phase against its aims.
func sessionsTable(w io.Writer, o options, r sessionsReport) {
	if len(r.sparseCall) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSessions, over HTTP to one service (free mode, its default configuration, both environments). "+
		"Sparse: `%s` in a warm python session and a one-shot `%s`, interleaved, one at a time, %v before each. "+
		"Under load: `%s` in a session every 100 ms while one-shot calls arrive (Poisson) at 40 %% of the engine ceiling "+
		"(%.1f cycles/s, so %.1f/s), %v. Open: POST /v1/sessions once the warm pools are full, %v after. "+
		"Analysis: %d pandas steps (load 1 MiB of CSV, clean, group, fit, plot) as %d calls in one data session, the first sending the CSV, "+
		"against %d one-shot data calls that each send the CSV and redo the steps before; %d rounds, each way's total and steps by their median.\n\n",
		sessionStep, hello, o.gap, sessionStep, r.ceiling, r.loadRate, o.poisson, o.gap,
		len(analysisSteps), len(analysisSteps), len(analysisSteps), len(r.pandas))
	table := newTable(w)
	row := func(what, figure string, target, got time.Duration) {
		t := ""
		if target > 0 {
			t = fmt.Sprintf("p50 ≤ %.0f ms", ms(target))
		}
		table(what, figure, t, got > 0 && got <= target)
	}
	pp := func(l latencies) string {
		return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d calls)", ms(l.pct(50)), ms(l.pct(99)), len(l))
	}
	row("session call `"+sessionStep+"`, sparse", pp(r.sparseCall), sessionCallTarget, r.sparseCall.pct(50))
	row("one-shot `"+hello+"`, sparse, the same run", pp(r.sparseOneShot), 0, 0)
	row("session call at 40 % load", pp(r.loadedCall), sessionCallLoadedTarget, r.loadedCall.pct(50))
	row("one-shot calls at 40 % load", fmt.Sprintf("%s, %d failed%s, at most %d in flight", pp(r.loaded.latency),
		r.loaded.failures(), failures(r.loaded.failed), r.loaded.inFlight), 0, 0)
	row("open, a warm container idle", pp(r.open), sessionOpenTarget, r.open.pct(50))
	if len(r.pandas) > 0 {
		sess, shot := analysisTotals(r.pandas)
		row("pandas analysis, 5 calls in a session", fmt.Sprintf("%.0f ms in all (steps %s)", ms(sess), stepMedians(r.pandas, true)), 0, 0)
		row("pandas analysis, 5 one-shot calls reloading", fmt.Sprintf("%.0f ms in all (steps %s); the session takes %.0f %% of it",
			ms(shot), stepMedians(r.pandas, false), 100*float64(sess)/float64(max(shot, 1))), 0, 0)
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(w, "\nFailed session calls and opens: %s.\n", failures(r.failed))
	}
	fmt.Fprintln(w)
}

// analysisTotals are the medians over the rounds of each way's total.
func analysisTotals(rounds []pandasRound) (session, oneShot time.Duration) {
	var s, o latencies
	for _, r := range rounds {
		s, o = append(s, sum(r.session)), append(o, sum(r.oneShot))
	}
	return s.pct(50), o.pct(50)
}

// stepMedians lists each step's median over the rounds, in ms.
func stepMedians(rounds []pandasRound, session bool) string {
	var out []string
	for i := range analysisSteps {
		var l latencies
		for _, r := range rounds {
			d := r.oneShot
			if session {
				d = r.session
			}
			l = append(l, d[i])
		}
		out = append(out, fmt.Sprintf("%.0f", ms(l.pct(50))))
	}
	return strings.Join(out, " / ") + " ms"
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}
