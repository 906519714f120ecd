package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// Standard input and the usage figures, through the real daemon and image.

// mustRunJob runs a whole job (code and stdin) and fails the test on an error.
func mustRunJob(tb testing.TB, d *Docker, job sandboxd.Job) sandboxd.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	job.ID, job.Language = jobID(tb), sandboxd.LanguagePython
	res, err := d.Run(ctx, job)
	if err != nil {
		tb.Fatalf("Run: %v", err)
	}
	return res
}

func TestRunStdinEchoed(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		// More than a pipe holds, with a NUL and invalid UTF-8 in it: the
		// program gets exactly these bytes, then EOF.
		in := "line one\nzwei\x00\n" + strings.Repeat("y", 70<<10) + "\nend"
		code := "import sys\ndata = sys.stdin.buffer.read()\nprint(len(data), data[:14], data[-4:])\nprint(repr(sys.stdin.buffer.read()))\n"
		res := mustRunJob(t, d, sandboxd.Job{Code: code, Stdin: in})
		check(t, res, want{stdout: fmt.Sprint(len(in)) + " b'line one\\nzwei\\x00' b'\\nend'\nb''\n", status: sandboxd.StatusOK})
		res = mustRunJob(t, d, sandboxd.Job{Code: "print(input().upper())\nprint(input())", Stdin: "abc\n123\n"})
		check(t, res, want{stdout: "ABC\n123\n", status: sandboxd.StatusOK})
	})
}

// slowMachine gives CPU-bound programs room on a loaded machine: what they
// measure is CPU time, and the wall clock may run far ahead of it.
func slowMachine(c *Config) { c.Timeout = time.Minute }

func TestRunUsageBusyLoop(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode, slowMachine)
		// One second of CPU time, not of wall clock: on a loaded machine the
		// loop takes longer but burns the same second.
		code := "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end:\n    pass\n"
		res := mustRun(t, d, code)
		check(t, res, want{status: sandboxd.StatusOK})
		if res.Usage == nil {
			t.Fatal("no usage reported")
		}
		if cpu := res.Usage.CPU.Milliseconds(); cpu < 800 || cpu > 1200 {
			t.Errorf("cpu_ms = %d, want 800..1200", cpu)
		}
	})
}

func TestRunUsageChildrenCount(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode, slowMachine)
		// A child burns half a second of CPU; the parent waits: the child's
		// time counts (RUSAGE_CHILDREN).
		code := "import os, time\npid = os.fork()\nif pid == 0:\n    end = time.process_time() + 0.5\n" +
			"    while time.process_time() < end:\n        pass\n    os._exit(0)\nos.waitpid(pid, 0)\n"
		res := mustRun(t, d, code)
		check(t, res, want{status: sandboxd.StatusOK})
		if res.Usage == nil || res.Usage.CPU < 400*time.Millisecond || res.Usage.CPU > 800*time.Millisecond {
			t.Errorf("usage %+v: want the child's ~500 ms of CPU counted", res.Usage)
		}
	})
}

func TestRunUsageMemory(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRun(t, d, "b = bytearray(50 * 1024 * 1024)\nprint(len(b))\n")
		check(t, res, want{stdout: "52428800\n", status: sandboxd.StatusOK})
		if res.Usage == nil || res.Usage.MaxRSSKB < 51200 {
			t.Errorf("usage %+v: want max_rss_kb >= 51200", res.Usage)
		}
	})
}

func TestRunUsageHelloWorld(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRun(t, d, `print("hello, world")`)
		check(t, res, want{stdout: "hello, world\n", status: sandboxd.StatusOK})
		if res.Usage == nil || res.Usage.CPU >= 100*time.Millisecond || res.Usage.MaxRSSKB <= 0 {
			t.Errorf("usage %+v: want under 100 ms of CPU and some memory", res.Usage)
		}
	})
}

func TestRunUsageUnknownWhenKilled(t *testing.T) {
	d := mustDocker(t, func(c *Config) { c.Timeout = time.Second })
	res := mustRun(t, d, "while True: pass\n")
	if res.Status != sandboxd.StatusTimeout || res.Usage != nil {
		t.Errorf("status %s usage %+v: want a timeout without usage", res.Status, res.Usage)
	}
}

// TestRunUsageIsTheProgramsWord: a program can read its run's token from
// the runner's frame and forge the end marker, status and usage included:
// the answer is its word (as protocol.go says), so usage is no basis for
// billing; the container is still removed after the run.
func TestRunUsageIsTheProgramsWord(t *testing.T) {
	d := mustDocker(t, slowMachine)
	code := "import os, sys, time\nend = time.process_time() + 0.3\nwhile time.process_time() < end:\n    pass\n" +
		"prefix = sys._getframe(1).f_locals['prefix']\nsys.stdout.flush()\nsys.stderr.flush()\n" +
		"marker = prefix + b'007 0000000000 0000000001 0000000000 0\\n'\nos.write(1, marker)\nos.write(2, marker)\ntime.sleep(30)\n"
	res := mustRun(t, d, code)
	if res.ExitCode != 7 || res.Usage == nil || res.Usage.CPU != 0 || res.Usage.MaxRSSKB != 1 || res.TimedOut {
		t.Fatalf("result %+v usage %+v: want the forged exit 7, 0 ms of CPU and 1 KiB at once", res, res.Usage)
	}
}
