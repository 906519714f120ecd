package hostile

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/runtime"
)

// stampPrefix starts the line startStamp writes.
const stampPrefix = "@hostile-start "

// startStamp, put before a program, makes its first act to write the time
// on stderr: the host's clock, which a container shares (and gVisor's
// kernel follows), when the program starts.
const startStamp = "import sys as _s, time as _t; _s.stderr.write('" + stampPrefix +
	"%.6f\\n' % _t.time()); _s.stderr.flush(); del _s, _t\n"

// startStamps are startStamp in each language, keyed by hostileCase's
// language ("" is python). JavaScript's stderr is synchronous on a pipe
// (the stub's own writer), as Bash's printf is.
var startStamps = map[string]string{
	"":                          startStamp,
	sandboxd.LanguagePython:     startStamp,
	sandboxd.LanguageJavaScript: jsStartStamp,
	sandboxd.LanguageTypeScript: jsStartStamp,
	sandboxd.LanguageBash:       "printf '" + stampPrefix + "%s\\n' \"$EPOCHREALTIME\" >&2\n",
}

// jsStartStamp is startStamp in JavaScript (and TypeScript).
const jsStartStamp = "process.stderr.write('" + stampPrefix + "' + (Date.now() / 1000).toFixed(6) + '\\n');\n"

// markPrefix starts the lines markDef's mark() writes.
const markPrefix = "@hostile-mark "

// markDef defines mark(), which writes the time on stderr as the start
// stamp does: a bomb calls it after each allocation that succeeded, so its
// answer can be timed from the moment it met the limit (see
// answer.fromMark).
const markDef = "def mark():\n    import sys, time\n    sys.stderr.write('" + markPrefix +
	"%.6f\\n' % time.time())\n    sys.stderr.flush()\n"

// runTimes is how long a run took, seen from the test.
type runTimes struct {
	// latency is the time from the program's start to its answer: what
	// the promises bound.
	latency time.Duration
	// sinceMark is the time from the program's last mark() to its answer;
	// latency when it wrote none.
	sinceMark time.Duration
	// elapsed is the whole call of Run, getting a container included.
	elapsed time.Duration
}

// timedRun runs the case's imports and code and measures its answer's latency from the program's
// start, as the timing promises count it: "on a slow machine, getting
// a container costs what it costs", and so, on a loaded one, does the
// runner's waking up to read the program. With stamp, the program writes
// its start time first (startStamp), and the latency is from then to Run's
// return; the stamp is taken off stderr before the answer is checked. The
// case's imports run before the stamp: a warm data container has made them.
// Without it (or when the program died before it wrote), the latency is
// Result.Duration: from the hand-over of the code to the complete answer,
// which holds the runner's waking up too, so it errs on the strict side.
// Neither holds the time spent getting a container, which is the host's
// cost and the same for a hello world. The lines of mark() are taken off
// stderr too, the last one timing sinceMark.
func timedRun(tb testing.TB, d *runtime.Docker, jobID string, c hostileCase, code string, stamp bool) (sandboxd.Result, runTimes) {
	tb.Helper()
	if stamp {
		code = startStamps[c.language] + code
	}
	res, elapsed := mustRun(tb, d, sandboxd.Job{ID: jobID, Language: c.language, Code: c.imports + code, Files: c.files})
	answered := time.Now()
	r := runTimes{latency: res.Duration, elapsed: elapsed}
	var kept []string
	var started, marked time.Time
	for _, line := range strings.SplitAfter(res.Stderr, "\n") {
		switch t, prefix := stampTime(line); prefix {
		case stampPrefix:
			if stamp && started.IsZero() {
				started = t
				continue
			}
		case markPrefix:
			marked = t
			continue
		}
		kept = append(kept, line)
	}
	res.Stderr = strings.Join(kept, "")
	if !started.IsZero() {
		r.latency = min(answered.Sub(started), res.Duration)
	}
	r.sinceMark = r.latency
	if !marked.IsZero() {
		r.sinceMark = min(answered.Sub(marked), r.latency)
	}
	return res, r
}

// stampTime reads a line of startStamp or mark(): its time and prefix, or
// "" for any other line.
func stampTime(line string) (time.Time, string) {
	for _, prefix := range []string{stampPrefix, markPrefix} {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			secs, err := strconv.ParseFloat(strings.TrimSuffix(rest, "\n"), 64)
			if err == nil {
				return time.Unix(0, int64(secs*1e9)), prefix
			}
		}
	}
	return time.Time{}, ""
}
