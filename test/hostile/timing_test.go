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

// runTimes is how long a run took, seen from the test.
type runTimes struct {
	// latency is the time from the program's start to its answer: what
	// the promises bound.
	latency time.Duration
	// elapsed is the whole call of Run, getting a container included.
	elapsed time.Duration
}

// timedRun runs code and measures its answer's latency from the program's
// start, as the promises of issue 16 count it: "on a slow machine, getting
// a container costs what it costs", and so, on a loaded one, does the
// runner's waking up to read the program. With stamp, the program writes
// its start time first (startStamp), and the latency is from then to Run's
// return; the stamp is taken off stderr before the answer is checked.
// Without it (or when the program died before it wrote), the latency is
// Result.Duration: from the hand-over of the code to the complete answer,
// which holds the runner's waking up too, so it errs on the strict side.
// Neither holds the time spent getting a container, which is the host's
// cost and the same for a hello world.
func timedRun(tb testing.TB, d *runtime.Docker, jobID, code string, stamp bool) (sandboxd.Result, runTimes) {
	tb.Helper()
	if stamp {
		code = startStamp + code
	}
	res, elapsed := mustRun(tb, d, jobID, code)
	answered := time.Now()
	r := runTimes{latency: res.Duration, elapsed: elapsed}
	line, rest, ok := strings.Cut(res.Stderr, "\n")
	if !stamp || !ok || !strings.HasPrefix(line, stampPrefix) {
		return res, r
	}
	res.Stderr = rest
	if secs, err := strconv.ParseFloat(strings.TrimPrefix(line, stampPrefix), 64); err == nil {
		started := time.Unix(0, int64(secs*1e9))
		r.latency = min(answered.Sub(started), res.Duration)
	}
	return res, r
}
