package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// printReport writes the Markdown table of one bench run.
func printReport(w io.Writer, o options, r report) {
	fmt.Fprintf(w, "## make bench, %s\n\n", machine())
	fmt.Fprintf(w, "Program: `print('hello')` through `POST /v1/code` (free mode); baseline `docker run --rm %s python3 -c 'print(1)'`. "+
		"Sequential: one call at a time, %v apart; throughput: closed loop, no pause.\n\n", o.image, o.gap)
	fmt.Fprintln(w, "| what | p50 ms | p95 ms | p99 ms | other |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	fmt.Fprintf(w, "| `docker run --rm` (%d runs) | %.1f | %.1f | %.1f | |\n", len(r.dockerRun),
		ms(r.dockerRun.pct(50)), ms(r.dockerRun.pct(95)), ms(r.dockerRun.pct(99)))
	best := ceilingRows(w, "plain", r.ceiling)
	bestHardened := ceilingRows(w, "hardened as the service's", r.hardened)
	for _, m := range r.modes {
		fmt.Fprintf(w, "| service %s, sequential (%d calls) | %.1f | %.1f | %.1f | |\n", m.name, len(m.seq),
			ms(m.seq.pct(50)), ms(m.seq.pct(95)), ms(m.seq.pct(99)))
		for _, t := range m.throughput {
			fmt.Fprintf(w, "| service %s, concurrency %d, %v | %.1f | %.1f | %.1f | %.1f answers/s, %d ok, %d failed%s |\n",
				m.name, t.conc, o.window, ms(t.latency.pct(50)), ms(t.latency.pct(95)), ms(t.latency.pct(99)),
				t.perSec, t.ok, t.errors, failures(t.status))
		}
		fmt.Fprintf(w, "| service %s, own CPU time and peak RSS over the throughput runs | | | | %.1f s CPU, %.1f MiB |\n",
			m.name, m.cpu.Seconds(), float64(m.peakRSSKiB)/1024)
	}
	fmt.Fprintln(w)
	base := r.dockerRun.pct(50)
	for _, m := range r.modes {
		bestTP := 0.0
		for _, t := range m.throughput {
			bestTP = max(bestTP, t.perSec)
		}
		fmt.Fprintf(w, "- %s: p50 %.1f ms = %.2f x `docker run --rm` p50 (%.1fx faster); best throughput %.1f/s = %.0f %% of the engine ceiling (%.1f/s plain), %.0f %% of the hardened one (%.1f/s)\n",
			m.name, ms(m.seq.pct(50)), float64(m.seq.pct(50))/float64(base), float64(base)/float64(m.seq.pct(50)),
			bestTP, 100*bestTP/best, best, 100*bestTP/bestHardened, bestHardened)
	}
}

// ceilingRows writes one row per concurrency and returns the best rate.
func ceilingRows(w io.Writer, kind string, ceiling map[int]float64) float64 {
	concs := make([]int, 0, len(ceiling))
	for c := range ceiling {
		concs = append(concs, c)
	}
	sort.Ints(concs)
	best := 0.0
	for _, c := range concs {
		fmt.Fprintf(w, "| engine ceiling, %s container, create+start+wait+remove, concurrency %d | | | | %.1f cycles/s |\n", kind, c, ceiling[c])
		best = max(best, ceiling[c])
	}
	return best
}

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
