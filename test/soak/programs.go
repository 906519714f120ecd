package main

import (
	"fmt"
	"strings"

	"sandboxd/internal/servicetest"
)

// answer is the JSON of a delivered run (and of an error, in Error).
type answer = servicetest.Answer

// maxOutput is config.yaml's runtime.max_output_bytes.
const maxOutput = 65536

// program is one kind of request in the mix.
type program struct {
	name string
	// weight is its share of the requests, out of the weights' sum.
	weight int
	// code returns the program for a nonce, which it prints first, so an
	// answer meant for another request shows.
	code func(nonce string) string
	// check returns what is wrong with a delivered answer, or "".
	check func(nonce string, a answer) string
	// alt, when set, checks an answer that is also right for the program
	// though not the one meant (see oom), counted apart.
	alt func(nonce string, a answer) string
}

// programs is the mix: mostly hello worlds, and every kind of abuse the
// runner must cut short. The timeout-bound ones use the soak's short
// run timeout, so the run stays bounded.
var programs = []program{
	{
		name: "hello", weight: 50,
		code: func(n string) string { return fmt.Sprintf("print('hello %s')\n", n) },
		check: func(n string, a answer) string {
			return expect(a, "ok", 0, false, false, false, func(out string) bool { return out == "hello "+n+"\n" })
		},
	},
	{
		name: "timeout", weight: 15,
		code: func(n string) string { return fmt.Sprintf("print('%s', flush=True)\nwhile True:\n    pass\n", n) },
		check: func(n string, a answer) string {
			return expect(a, "timeout", 137, true, false, false, func(out string) bool { return out == n+"\n" })
		},
	},
	{
		name: "oom", weight: 10,
		code: func(n string) string { return fmt.Sprintf("print('%s', flush=True)\nb = b'x' * (1 << 30)\n", n) },
		// The data limit (runtime/spec.go) refuses the allocation at once:
		// Python's own MemoryError.
		check: func(n string, a answer) string {
			d := expect(a, "error", 1, false, false, false, func(out string) bool { return out == n+"\n" })
			if d == "" && !strings.Contains(a.Stderr, "MemoryError") {
				d = "no MemoryError on stderr"
			}
			return d
		},
		// Under runsc, which does not enforce the data limit, the cgroup's
		// OOM killer ends it. Right, if not the point under runc.
		alt: func(n string, a answer) string {
			return expect(a, "oom", 137, false, true, false, func(out string) bool { return out == n+"\n" })
		},
	},
	{
		name: "flood", weight: 15,
		code: func(n string) string { return fmt.Sprintf("print('%s')\nwhile True:\n    print('x' * 99)\n", n) },
		check: func(n string, a answer) string {
			return expect(a, "output_limit", 137, false, false, true, func(out string) bool {
				return len(out) == maxOutput && floodOf(n, out)
			})
		},
		// Starved of CPU (and dockerd with it), a flood may not reach the
		// cap before the deadline: what it wrote is kept, under the cap.
		alt: func(n string, a answer) string {
			return expect(a, "timeout", 137, true, false, false, func(out string) bool {
				return len(out) < maxOutput && floodOf(n, out)
			})
		},
	},
	{
		name: "forkbomb", weight: 10,
		code: func(n string) string {
			return fmt.Sprintf("import os\nprint('%s', flush=True)\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", n)
		},
		check: func(n string, a answer) string {
			return expect(a, "timeout", 137, true, false, false, func(out string) bool { return out == n+"\n" })
		},
	},
}

// floodOf reports whether out is the flood program's output: its nonce
// line, then nothing but x's and newlines.
func floodOf(nonce, out string) bool {
	return strings.HasPrefix(out, nonce+"\n") && strings.Trim(out[len(nonce)+1:], "x\n") == ""
}

// expect compares an answer with the expected status, exit code and flags,
// and its stdout with the predicate; it returns what differs, or "".
func expect(a answer, status string, exit int, timedOut, oom, truncated bool, stdoutOK func(string) bool) string {
	var diffs []string
	if a.Status != status || a.ExitCode != exit {
		diffs = append(diffs, fmt.Sprintf("status %q exit %d, want %q %d", a.Status, a.ExitCode, status, exit))
	}
	if a.TimedOut != timedOut || a.OOMKilled != oom || a.Truncated != truncated {
		diffs = append(diffs, fmt.Sprintf("flags timed_out=%v oom_killed=%v truncated=%v, want %v %v %v",
			a.TimedOut, a.OOMKilled, a.Truncated, timedOut, oom, truncated))
	}
	if !stdoutOK(a.Stdout) {
		out := a.Stdout
		if len(out) > 80 {
			out = out[:80] + "…"
		}
		diffs = append(diffs, fmt.Sprintf("stdout %q (%d bytes)", out, len(a.Stdout)))
	}
	return strings.Join(diffs, "; ")
}

// outcome names an answer's status and its flags, for the breakdown.
func outcome(a answer) string {
	s := a.Status
	for _, f := range []struct {
		on   bool
		name string
	}{{a.TimedOut, "timed_out"}, {a.OOMKilled, "oom_killed"}, {a.Truncated, "truncated"}} {
		if f.on {
			s += "+" + f.name
		}
	}
	return fmt.Sprintf("%s (%d)", s, a.ExitCode)
}

// pick returns the program of the i-th request: the mix, spread evenly.
func pick(i int) program {
	total := 0
	for _, p := range programs {
		total += p.weight
	}
	slot := (i * 37) % total // 37 is prime to 100: every slot, well shuffled
	for _, p := range programs {
		if slot < p.weight {
			return p
		}
		slot -= p.weight
	}
	return programs[0]
}
