package main

import (
	"strings"
	"testing"
	"time"
)

// TestCPUTableSetsTheCeilingBeside gives saturation 10 answers and the
// ceiling two runs of 5 and 15 cycles: each process's row has its CPU per
// answer, and its CPU and ended processes per cycle over both runs
// together.
func TestCPUTableSetsTheCeilingBeside(t *testing.T) {
	sat := cpuSplit{host: 3 * time.Second, exitedOK: true, ended: map[string]int{},
		groups: map[string]time.Duration{"dockerd": time.Second, "shim": 500 * time.Millisecond, "steal": 300 * time.Millisecond}}
	runs := []ceilingRun{
		{cycles: 5, cpu: cpuSplit{host: time.Second, groups: map[string]time.Duration{"dockerd": 200 * time.Millisecond},
			ended: map[string]int{"runc": 20}}},
		{cycles: 15, cpu: cpuSplit{host: 3 * time.Second, groups: map[string]time.Duration{"dockerd": 600 * time.Millisecond},
			ended: map[string]int{"runc": 70}}},
	}
	var b strings.Builder
	cpuTable(&b, sat, 10, runs)
	out := b.String()
	for _, want := range []string{
		"300.0 ms of CPU per answer", "200.0 ms per cycle (20 cycles)",
		"| dockerd | 100.0 | 33 % | 0.0 | 40.0 | 0.0 |", "| shim | 50.0 | 17 % | 0.0 | 0.0 | 0.0 |",
		"| runc | 0.0 | 0 % | 0.0 | 0.0 | 4.5 |", "| steal | 30.0 | 10 % | 0.0 | 0.0 | 0.0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	cpuTable(&b, sat, 10, nil)
	if !strings.Contains(b.String(), "| dockerd | 100.0 | 33 % | 0.0 | – | – |") {
		t.Errorf("without a ceiling's run the column should be empty:\n%s", b.String())
	}
}

// TestGroupCountsAnyBuildOfTheService counts the service under the name
// of the -binary it was started as, and the bench apart from it.
func TestGroupCountsAnyBuildOfTheService(t *testing.T) {
	for comm, want := range map[string]string{"sandboxd": "sandboxd", "sandboxd-main": "sandboxd",
		"runc:[2:INIT]": "runc", "containerd-shim": "shim", "python3": "program", "kworker/0:1": "other"} {
		if got := group(comm, 2, 1); got != want {
			t.Errorf("group(%q) = %q, want %q", comm, got, want)
		}
	}
	if got := group("bench", 1, 1); got != "bench client" {
		t.Errorf("the bench itself is %q, want bench client", got)
	}
}

// TestBusyOfCountsSteal reads a /proc/stat line of this machine: busy is
// user+nice+system+irq+softirq+steal, and steal is its own too.
func TestBusyOfCountsSteal(t *testing.T) {
	busy, steal := busyOf("cpu  3345637 33594 1971510 8719322 31075 0 36229 85123 0 0")
	if want := int64(3345637 + 33594 + 1971510 + 36229 + 85123); busy != want || steal != 85123 {
		t.Errorf("busyOf = %d, %d; want %d, 85123", busy, steal, want)
	}
	if busy, steal := busyOf(""); busy != 0 || steal != 0 {
		t.Errorf("an empty line gave %d, %d", busy, steal)
	}
}
