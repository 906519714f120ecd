package hostile

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// answer is what a case accepts from one OCI runtime. Fields left zero are
// not checked; the flags are checked against the status in every case.
type answer struct {
	// status lists the accepted statuses.
	status []sandboxd.Status
	// exit lists the accepted exit codes; nil accepts any.
	exit []int
	// stdout lists the accepted outputs, exactly; nil checks nothing.
	stdout []string
	// stderrHas is a substring stderr must hold.
	stderrHas string
	// outLen, when positive, is the exact length stdout must have.
	outLen int
	// within, when positive, is the product's promise for this answer: the
	// most that may pass from the program's start to its answer under runc
	// (twice that under runsc). See timedRun.
	within time.Duration
	// fromMark counts within from the program's last mark() (markDef)
	// instead of its start: for a program whose own work before it meets
	// a limit is not the service's to answer for.
	fromMark bool
	// check lists anything else wrong with the result.
	check func(res sandboxd.Result) []string
}

// hostileCase is one hostile program and the answers it must get.
type hostileCase struct {
	name string
	// language is the language of code; empty is python.
	language string
	code     string
	// imports, when set, runs before code and before the program's start
	// is stamped (see timedRun): the imports a warm data container has
	// made already, which the timing promises do not count.
	imports string
	// files are handed to the program as the job's files in.
	files []sandboxd.File
	// killed marks a program that must be killed at the deadline: it gets
	// the short timeout, but where the environment preloads. The others
	// get their environment's.
	killed bool
	// slow marks a program whose answer comes only after much work of its
	// own (CPU time, or megabytes sent): it gets slowTimeout, since on a
	// loaded host its wall-clock time runs far ahead of that work.
	slow bool
	// want is the answer under every runtime not named in per.
	want answer
	// per lists the answers a runtime that legitimately differs may give,
	// any one of them.
	per map[string][]answer
}

// path names the case's subtest: its name, under its language's but for
// python's (the names are shared where the idea is the same).
func (c hostileCase) path() string {
	if c.language == "" {
		return c.name
	}
	return c.language + "/" + c.name
}

// timeout is the wall-clock limit the case runs with in the environment.
func (c hostileCase) timeout(e environment) time.Duration {
	switch {
	case c.killed && e.preloads:
		return e.timeout
	case c.killed:
		return shortTimeout
	case c.slow:
		return slowTimeout
	}
	return e.timeout
}

// answersFor lists the answers the case accepts from the OCI runtime.
func (c hostileCase) answersFor(oci string) []answer {
	if as, ok := c.per[oci]; ok {
		return as
	}
	return []answer{c.want}
}

// statuses is a shorthand for a list of accepted statuses.
func statuses(s ...sandboxd.Status) []sandboxd.Status { return s }

// The timing promises, from the program's start to its
// answer, which the suite asserts on a loaded host: a run killed at the
// deadline is answered within killAnswer of it; a run killed at the output
// cap within capAnswer of its start, a memory bomb within oomAnswer. Under
// runsc every bound is runscFactor times as long. Nothing here bounds the
// time it takes to get a container: that is the host's cost, not a promise.
const (
	killAnswer  = 500 * time.Millisecond
	capAnswer   = time.Second
	oomAnswer   = 2 * time.Second
	runscFactor = 2
)

// promise scales a timing promise for the OCI runtime: gVisor's kills and
// its start of a program take longer, and the promise allows it twice the time.
func promise(oci string, d time.Duration) time.Duration {
	if oci == "runsc" {
		return runscFactor * d
	}
	return d
}

// assertAnswer fails the test unless the result, under the variant, is one
// of the accepted answers; it reports how it differs from each of them.
// r holds the time from the program's start (or its last mark) to its
// answer (see timedRun).
func assertAnswer(tb testing.TB, res sandboxd.Result, r runTimes, v variant, timeout time.Duration, accepted []answer) {
	tb.Helper()
	var all []string
	for i, w := range accepted {
		diffs := mismatch(tb, res, r, v, timeout, w)
		if len(diffs) == 0 {
			if i > 0 {
				tb.Logf("accepted alternative answer %d of %d: status %q exit %d", i+1, len(accepted), res.Status, res.ExitCode)
			}
			return
		}
		if len(accepted) > 1 {
			all = append(all, fmt.Sprintf("answer %d of %d:", i+1, len(accepted)))
		}
		all = append(all, diffs...)
	}
	tb.Error(strings.Join(all, "\n"))
}

// mismatch lists how a delivered result differs from an answer, including
// flags, exit code and duration that disagree with its status, and, when
// the variant is timed, the timing promises it breaks.
func mismatch(tb testing.TB, res sandboxd.Result, r runTimes, v variant, timeout time.Duration, w answer) []string {
	tb.Helper()
	var d []string
	if !slices.Contains(w.status, res.Status) {
		d = append(d, fmt.Sprintf("status %q, want one of %q", res.Status, w.status))
	}
	if w.exit != nil && !slices.Contains(w.exit, res.ExitCode) {
		d = append(d, fmt.Sprintf("exit code %d, want one of %v", res.ExitCode, w.exit))
	}
	if w.stdout != nil && !slices.Contains(w.stdout, res.Stdout) {
		d = append(d, fmt.Sprintf("stdout %q, want one of %q", clip(res.Stdout), w.stdout))
	}
	if w.stderrHas != "" && !strings.Contains(res.Stderr, w.stderrHas) {
		d = append(d, fmt.Sprintf("stderr %q does not hold %q", clip(res.Stderr), w.stderrHas))
	}
	if w.outLen > 0 && len(res.Stdout) != w.outLen {
		d = append(d, fmt.Sprintf("stdout is %d bytes, want exactly %d", len(res.Stdout), w.outLen))
	}
	latency, from := r.latency, "start"
	if w.fromMark {
		latency, from = r.sinceMark, "last mark"
	}
	if bound := promise(v.oci, w.within); v.timed && w.within > 0 && latency > bound {
		d = append(d, fmt.Sprintf("answered %s after the program's %s, the promise is at most %s", latency, from, bound))
	}
	if w.check != nil {
		d = append(d, w.check(res)...)
	}
	return append(d, flagMismatch(res, r.latency, v, timeout, w.exit != nil)...)
}

// flagMismatch lists where the flags, the exit code and the duration
// disagree with the status, as the API documents them. A run killed at the
// deadline is killed no sooner than the deadline after the hand-over
// (Duration), and, when the variant is timed, answered within the promise
// (killAnswer) of the deadline after the program's start (latency). Its exit
// code is 137 unless exitListed: the answer names the exit codes it accepts.
func flagMismatch(res sandboxd.Result, latency time.Duration, v variant, timeout time.Duration, exitListed bool) []string {
	var d []string
	again := res
	again.Classify()
	if again.Status != res.Status {
		d = append(d, fmt.Sprintf("status %q disagrees with its flags (%q)", res.Status, again.Status))
	}
	switch res.Status {
	case sandboxd.StatusOK:
		if res.ExitCode != 0 {
			d = append(d, fmt.Sprintf("status ok with exit code %d", res.ExitCode))
		}
	case sandboxd.StatusTimeout:
		if (res.ExitCode != 137 && !exitListed) || res.OOMKilled {
			d = append(d, fmt.Sprintf("timeout with exit %d oom_killed %v, want 137 and false", res.ExitCode, res.OOMKilled))
		}
		if res.Duration < timeout {
			d = append(d, fmt.Sprintf("timeout after %s, before the %s deadline", res.Duration, timeout))
		}
		if late := timeout + promise(v.oci, killAnswer); v.timed && latency > late {
			d = append(d, fmt.Sprintf("timeout answered %s after the program's start, the promise is at most %s", latency, late))
		}
	case sandboxd.StatusOOM:
		if res.ExitCode != 137 {
			d = append(d, fmt.Sprintf("oom with exit code %d, want 137", res.ExitCode))
		}
	case sandboxd.StatusOutputLimit:
		if len(res.Stdout) > capBytes || len(res.Stderr) > capBytes {
			d = append(d, fmt.Sprintf("output over the cap: stdout %d, stderr %d bytes", len(res.Stdout), len(res.Stderr)))
		}
	}
	return d
}

// clip shortens long output for a failure message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
