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
	// within bounds Run's whole wall-clock time, when positive.
	within time.Duration
	// check lists anything else wrong with the result.
	check func(res sandboxd.Result) []string
}

// hostileCase is one hostile program and the answers it must get.
type hostileCase struct {
	name string
	code string
	// killed marks a program that must be killed at the deadline: it gets
	// the short timeout. The others get config.yaml's.
	killed bool
	// want is the answer under every runtime not named in per.
	want answer
	// per lists the answers a runtime that legitimately differs may give,
	// any one of them.
	per map[string][]answer
}

// timeout is the wall-clock limit the case runs with.
func (c hostileCase) timeout() time.Duration {
	if c.killed {
		return shortTimeout
	}
	return fullTimeout
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

// assertAnswer fails the test unless the result is one of the accepted
// answers; it reports how the result differs from each of them.
func assertAnswer(tb testing.TB, res sandboxd.Result, elapsed, timeout time.Duration, accepted []answer) {
	tb.Helper()
	var all []string
	for i, w := range accepted {
		diffs := mismatch(tb, res, elapsed, timeout, w)
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
// flags, exit code and duration that disagree with its status.
func mismatch(tb testing.TB, res sandboxd.Result, elapsed, timeout time.Duration, w answer) []string {
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
	if w.within > 0 && elapsed > w.within {
		d = append(d, fmt.Sprintf("the answer took %s, want at most %s", elapsed, w.within))
	}
	if w.check != nil {
		d = append(d, w.check(res)...)
	}
	return append(d, flagMismatch(res, timeout)...)
}

// flagMismatch lists where the flags, the exit code and the duration
// disagree with the status, as the API documents them.
func flagMismatch(res sandboxd.Result, timeout time.Duration) []string {
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
		if res.ExitCode != 137 || res.OOMKilled {
			d = append(d, fmt.Sprintf("timeout with exit %d oom_killed %v, want 137 and false", res.ExitCode, res.OOMKilled))
		}
		// Killed at the limit, answered within a few seconds of it even
		// on a loaded two-core host.
		if res.Duration < timeout || res.Duration > timeout+3*time.Second {
			d = append(d, fmt.Sprintf("timeout after %s, want within [%s, %s]", res.Duration, timeout, timeout+3*time.Second))
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
