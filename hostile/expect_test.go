package hostile

import (
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
	// check asserts anything else about the result.
	check func(tb testing.TB, res sandboxd.Result)
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
	// per holds the answer of a runtime that legitimately differs.
	per map[string]answer
	// after checks the host once the answer is in (the job's marker).
	after func(tb testing.TB, marker string)
}

// timeout is the wall-clock limit the case runs with.
func (c hostileCase) timeout() time.Duration {
	if c.killed {
		return shortTimeout
	}
	return fullTimeout
}

// answerFor is the answer the case wants from the OCI runtime.
func (c hostileCase) answerFor(oci string) answer {
	if a, ok := c.per[oci]; ok {
		return a
	}
	return c.want
}

// statuses is a shorthand for a list of accepted statuses.
func statuses(s ...sandboxd.Status) []sandboxd.Status { return s }

// assertAnswer checks a delivered result against the accepted answer.
func assertAnswer(tb testing.TB, res sandboxd.Result, elapsed, timeout time.Duration, w answer) {
	tb.Helper()
	if !slices.Contains(w.status, res.Status) {
		tb.Errorf("status %q, want one of %q", res.Status, w.status)
	}
	if w.exit != nil && !slices.Contains(w.exit, res.ExitCode) {
		tb.Errorf("exit code %d, want one of %v", res.ExitCode, w.exit)
	}
	if w.stdout != nil && !slices.Contains(w.stdout, res.Stdout) {
		tb.Errorf("stdout %q, want one of %q", clip(res.Stdout), w.stdout)
	}
	if w.stderrHas != "" && !strings.Contains(res.Stderr, w.stderrHas) {
		tb.Errorf("stderr %q does not hold %q", clip(res.Stderr), w.stderrHas)
	}
	if w.outLen > 0 && len(res.Stdout) != w.outLen {
		tb.Errorf("stdout is %d bytes, want exactly %d", len(res.Stdout), w.outLen)
	}
	if w.within > 0 && elapsed > w.within {
		tb.Errorf("the answer took %s, want at most %s", elapsed, w.within)
	}
	if w.check != nil {
		w.check(tb, res)
	}
	assertFlags(tb, res, timeout)
}

// assertFlags checks that the flags, the exit code and the duration agree
// with the status, as the API documents them.
func assertFlags(tb testing.TB, res sandboxd.Result, timeout time.Duration) {
	tb.Helper()
	again := res
	again.Classify()
	if again.Status != res.Status {
		tb.Errorf("status %q disagrees with its flags (%q)", res.Status, again.Status)
	}
	switch res.Status {
	case sandboxd.StatusOK:
		if res.ExitCode != 0 {
			tb.Errorf("status ok with exit code %d", res.ExitCode)
		}
	case sandboxd.StatusTimeout:
		if res.ExitCode != 137 || res.OOMKilled {
			tb.Errorf("timeout with exit %d oom_killed %v, want 137 and false", res.ExitCode, res.OOMKilled)
		}
		// Killed at the limit, answered within a couple of seconds of it
		// even on a loaded two-core host.
		if res.Duration < timeout || res.Duration > timeout+3*time.Second {
			tb.Errorf("timeout after %s, want within [%s, %s]", res.Duration, timeout, timeout+3*time.Second)
		}
	case sandboxd.StatusOOM:
		if res.ExitCode != 137 {
			tb.Errorf("oom with exit code %d, want 137", res.ExitCode)
		}
	case sandboxd.StatusOutputLimit:
		if len(res.Stdout) > 64<<10 || len(res.Stderr) > 64<<10 {
			tb.Errorf("output over the cap: stdout %d, stderr %d bytes", len(res.Stdout), len(res.Stderr))
		}
	}
}

// clip shortens long output for a failure message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
