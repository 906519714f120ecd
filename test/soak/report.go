package main

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// report is everything a soak run measured.
type report struct {
	opts            options
	instance        string
	before, after   snapshot
	load            loadResult
	leaked          []string
	leakedAfterStop []string
	errorLines      []string
	stopErr         string
}

// problems lists what makes the run a failure: wrong answers, 5xx, requests
// that got no HTTP answer, leaked containers, a stop that went wrong, or a
// load cut short by the deadline.
func (r *report) problems() []string {
	var out []string
	for _, p := range programs {
		t := r.load.byName[p.name]
		if t.wrong > 0 || t.server > 0 || t.other > 0 {
			out = append(out, fmt.Sprintf("%s: %d wrong, %d 5xx, %d other; e.g. %s",
				p.name, t.wrong, t.server, t.other, strings.Join(t.examples, " | ")))
		}
	}
	if len(r.leaked) > r.opts.pool {
		out = append(out, fmt.Sprintf("%d containers of instance %s left after the load (pool %d): %s",
			len(r.leaked), r.instance, r.opts.pool, strings.Join(r.leaked, ", ")))
	}
	if len(r.leakedAfterStop) > 0 {
		out = append(out, fmt.Sprintf("%d containers left after the service stopped: %s",
			len(r.leakedAfterStop), strings.Join(r.leakedAfterStop, ", ")))
	}
	if r.stopErr != "" {
		out = append(out, r.stopErr)
	}
	if r.load.sent < r.opts.requests {
		out = append(out, fmt.Sprintf("only %d of %d requests were sent before the %s deadline",
			r.load.sent, r.opts.requests, r.opts.deadline))
	}
	return out
}

// print writes the report as Markdown.
func (r *report) print(w io.Writer) {
	l := r.load
	fmt.Fprintf(w, "\n## sandboxd soak: %d requests at concurrency %d, run timeout %s\n\n",
		l.sent, r.opts.concurrency, r.opts.runTimeout)
	fmt.Fprintln(w, "| program | sent | correct | right, not meant | wrong | 429 | 5xx | no answer | p50 | p95 | max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var all tally
	for _, p := range programs {
		t := r.load.byName[p.name]
		r.row(w, p.name, t)
		all.sent += t.sent
		all.correct += t.correct
		all.alt += t.alt
		all.wrong += t.wrong
		all.busy += t.busy
		all.server += t.server
		all.other += t.other
		all.latencies = append(all.latencies, t.latencies...)
	}
	r.row(w, "**all**", &all)
	fmt.Fprintln(w, "\n\"right, not meant\": a memory bomb or a flood answered timeout, the deadline having come before (or")
	fmt.Fprintln(w, "with) the kernel's kill or the output cap. Latencies are of the whole request, queueing included, over")
	fmt.Fprintln(w, "the answers delivered (200).")

	fmt.Fprintln(w, "\n| program | delivered answers: status+flags (exit code) × count |")
	fmt.Fprintln(w, "|---|---|")
	for _, p := range programs {
		fmt.Fprintf(w, "| %s | %s |\n", p.name, countList(r.load.byName[p.name].outcomes))
	}

	fmt.Fprintln(w, "\n| figure | value |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintf(w, "| wall time of the load | %s (%.1f requests/s) |\n", l.elapsed.Round(time.Millisecond),
		float64(l.sent)/l.elapsed.Seconds())
	fmt.Fprintf(w, "| HTTP statuses | %s |\n", statusList(l.statuses))
	fmt.Fprintf(w, "| 5xx | %d |\n", all.server)
	fmt.Fprintf(w, "| 429 (all sandboxes busy) | %d |\n", all.busy)
	fmt.Fprintf(w, "| containers of the instance after the load | %d |\n", len(r.leaked))
	fmt.Fprintf(w, "| containers of the instance after the stop | %d |\n", len(r.leakedAfterStop))
	s0, s1 := r.before.service, r.after.service
	fmt.Fprintf(w, "| service RSS before → after (peak) | %s → %s (%s) |\n", mib(s0.rssKiB), mib(s1.rssKiB), mib(s1.hwmKiB))
	fmt.Fprintf(w, "| service OS threads before → after | %d → %d |\n", s0.threads, s1.threads)
	if r.after.dockerdPID > 0 {
		d0, d1 := r.before.dockerd, r.after.dockerd
		fmt.Fprintf(w, "| dockerd RSS before → after (peak) | %s → %s (%s) |\n", mib(d0.rssKiB), mib(d1.rssKiB), mib(d1.hwmKiB))
		fmt.Fprintf(w, "| dockerd OS threads before → after | %d → %d |\n", d0.threads, d1.threads)
	} else {
		fmt.Fprintln(w, "| dockerd | not visible from here |")
	}
	fmt.Fprintf(w, "| service warnings/errors logged | %d |\n", len(r.errorLines))
	if len(r.errorLines) > 0 {
		fmt.Fprintf(w, "\nFirst logged warnings/errors:\n\n```\n%s\n```\n", strings.Join(r.errorLines[:min(5, len(r.errorLines))], "\n"))
	}
}

// row writes one program's line of the table.
func (r *report) row(w io.Writer, name string, t *tally) {
	fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n", name, t.sent, t.correct, t.alt, t.wrong,
		t.busy, t.server, t.other, msec(pct(t.latencies, 50)), msec(pct(t.latencies, 95)), msec(pct(t.latencies, 100)))
}

// statusList formats the HTTP status counts, "0" being no HTTP answer.
func statusList(m map[int]int) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		name := http.StatusText(c)
		if c == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%d %s: %d", c, name, m[c]))
	}
	return strings.Join(parts, ", ")
}

// countList formats counts by key, the largest first.
func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s × %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// mib formats KiB as MiB with one decimal.
func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

// msec formats a duration in whole milliseconds.
func msec(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
