package main

import (
	"fmt"
	"io"
	"time"
)

// warmTarget is the aim for the warm pandas import's p50.
const warmTarget = 30 * time.Millisecond

// dataTable writes the data phase against its aims, with the host's CPU by
// process at its saturation.
func dataTable(w io.Writer, o options, r dataReport) {
	if len(r.warm) == 0 {
		return
	}
	fmt.Fprintf(w, "\nData environment: image %s, its limits (512 MiB, 10 s, one CPU, pids 64, 64 MiB /tmp), "+
		"runc, through runtime.Docker with pool_size 1, pool_max 4 (no HTTP). Program `%s` (pandas %s). Sparse: one run "+
		"%v after the pool has an idle container; baseline `docker run --rm %s python3 -c` of the same program, %v apart. "+
		"Chart: a pandas bar chart saved by matplotlib as chart.png in the working directory. Ceiling: create+start+wait+remove "+
		"of the data environment's own container spec (its runner preloads, finds no program, exits; and with SANDBOX_PRELOAD empty), %d at once, %v, "+
		"measured right before saturation. The runtime runs in the bench's process (\"bench client\" below). "+
		"Saturation: %d callers, closed loop, %v.\n\n",
		o.dataImage, pandasVersion, r.version, o.dataGap, o.dataImage, o.gap, o.conc, o.ceiling, o.conc, o.window)
	row := newTable(w)
	base, warm := r.dockerRun.pct(50), r.warm.pct(50)
	row("`docker run --rm`, pandas import", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d runs)", ms(base), ms(r.dockerRun.pct(99)), len(r.dockerRun)), "", true)
	row("data, warm, pandas import", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d runs); %.0f× faster than `docker run --rm`",
		ms(warm), ms(r.warm.pct(99)), len(r.warm), float64(base)/float64(max(warm, 1))),
		fmt.Sprintf("p50 ≤ %.0f ms", ms(warmTarget)), warm > 0 && warm <= warmTarget)
	row("data, warm, chart drawn", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d runs); the PNG %s",
		ms(r.chart.pct(50)), ms(r.chart.pct(99)), len(r.chart), r.chartFiles), "", true)
	row("data engine ceiling, its runner's preload included", fmt.Sprintf("%.1f cycles/s", r.ceiling), "", true)
	row("data engine ceiling, preload off", fmt.Sprintf("%.1f cycles/s", r.ceilingBare), "", true)
	sat := r.saturation.perSec / max(r.ceiling, 1e-9)
	row(fmt.Sprintf("data saturation, %d callers", o.conc), fmt.Sprintf("%.1f answers/s = %.2f× its ceiling (%.2f× without the preload), %d failed%s, warm container found %.0f %% (p50 %.0f ms, p99 %.0f ms)",
		r.saturation.perSec, sat, r.saturation.perSec/max(r.ceilingBare, 1e-9), r.saturation.failures(), failures(r.saturation.failed), 100*r.saturation.hitRatio(),
		ms(r.saturation.latency.pct(50)), ms(r.saturation.latency.pct(99))),
		"≥ 0.9× ceiling, 0 failed (python's target)", sat >= 0.9 && r.saturation.failures() == 0)
	fmt.Fprintln(w)
	cpuTable(w, r.cpu, r.saturation.ok, r.ceilingRuns)
}
