package hostile

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/runtime"
)

// parallelRuns is how many hostile programs run at once, over every
// runtime: enough to finish in minutes on two cores, few enough that one
// case's bomb does not starve another's deadline.
const parallelRuns = 4

// markerPlaceholder in a case's code is replaced by a string unique to the
// run, which the program puts in its children's command lines so the host
// can be searched for survivors.
const markerPlaceholder = "@MARKER@"

// allCases is the whole table of an environment: every case in both
// Python environments, in data the cases that attack what it adds, and in
// node the tables of the languages it runs.
func allCases(e environment) []hostileCase {
	if e.name == nodeEnvironment {
		return nodeCases(e)
	}
	all := slices.Concat(resourceCases(e), processCases(e), kernelCases(), procCases())
	if e.name == sandboxd.DataEnvironment {
		all = append(all, dataCases(e)...)
	}
	return all
}

// limitsApart names the resource cases of limitCases.
var limitsApart = []string{"fork-bomb", "memory-bomb-at-once", "memory-bomb-growing", "fill-tmp", "deep-recursion-unlimited", "usage-counted"}

// limitCases is the part of allCases whose answer depends on the
// environment's limits and additions as the OCI runtime enforces them: the
// resource cases that meet a limit the environment sets apart (the memory,
// /tmp, the processes, the CPU its usage counts) and, in data, its own.
// The floods, the recursion error and the deadlines meet limits set alike
// in every environment, which python's variants prove under each runtime.
func limitCases(e environment) []hostileCase {
	cases := slices.DeleteFunc(resourceCases(e), func(c hostileCase) bool { return !slices.Contains(limitsApart, c.name) })
	if e.name == sandboxd.DataEnvironment {
		cases = append(cases, dataCases(e)...)
	}
	return cases
}

// TestLimitCasesAreFound fails when a case limitCases names is gone from
// the resource cases (renamed, say), which would drop it from data under
// runsc unseen.
func TestLimitCasesAreFound(t *testing.T) {
	for _, e := range []environment{pythonEnv, dataEnv} {
		var found []string
		for _, c := range limitCases(e) {
			found = append(found, c.name)
		}
		for _, name := range limitsApart {
			if !slices.Contains(found, name) {
				t.Errorf("%s: limitCases lacks %q: no resource case has that name", e.name, name)
			}
		}
	}
}

// TestHostile runs every hostile program in both environments, under every
// OCI runtime, with the warm pool and without (in data, with the pool only,
// and under runsc limitCases only; see variants), at most parallelRuns at
// once, then checks that each instance left nothing behind.
func TestHostile(t *testing.T) {
	runMatrix(t, variants(), allCases)
}

// runMatrix runs the variants of one environment after those of another,
// in the order they come: a data container's preload spends about 0.6 s of
// CPU, which on 2 cores would delay python's kills past their promise, a
// promise made for python's own load (docs/performance.md, "Kills under load").
func runMatrix(t *testing.T, vs []variant, cases func(environment) []hostileCase) {
	var names []string
	for _, v := range vs {
		if !slices.Contains(names, v.env.name) {
			names = append(names, v.env.name)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			runVariants(t, slices.DeleteFunc(slices.Clone(vs), func(v variant) bool { return v.env.name != name }), cases)
		})
	}
}

// runVariants runs the cases of each variant's environment under the
// variant, the variants side by side and at most parallelRuns cases at
// once over all of them, then checks that each variant's instance left no
// container.
func runVariants(t *testing.T, vs []variant, cases func(environment) []hostileCase) {
	sem := make(chan struct{}, parallelRuns)
	for _, v := range vs {
		t.Run(v.name(), func(t *testing.T) {
			t.Parallel()
			rs := newRunners(t, v) // skips or fails without Docker
			var wg sync.WaitGroup
			table := cases
			if v.cases != nil {
				table = v.cases
			}
			for _, c := range table(v.env) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					t.Run(c.path(), func(t *testing.T) { runCase(t, rs, c) })
				}()
			}
			wg.Wait()
			rs.close(t)
			assertNoContainer(t, runtime.LabelInstance, v.instance())
		})
	}
}

// runCase runs one case on its variant's runner for the case's timeout and
// checks the answer, that the run's container is gone, that nothing it
// started survives on the host, and that a plain program still answers.
func runCase(t *testing.T, rs *runners, c hostileCase) {
	v := rs.v
	d := rs.get(t, c.timeout(v.env))
	marker := fmt.Sprintf("%s-%s", v.instance(), strings.ReplaceAll(c.path(), "/", "-"))
	if v.env.preloads && v.pool > 0 {
		// A warm container may still be preloading (a new runner's, or
		// a refill's): a hello world takes one first, so the case meets
		// a pool that has had that long to preload (see
		// environment.preloads). Its
		// answer is not the case's: only a service error fails the test
		// (mustRun).
		res, _ := mustRun(t, d, sandboxd.Job{ID: marker + "-warm-up", Code: "print('hello, world')\n"})
		t.Logf("warm-up: status %q in %s", res.Status, res.Duration.Round(time.Millisecond))
	}
	code := strings.ReplaceAll(c.code, markerPlaceholder, marker)
	res, r := timedRun(t, d, marker, c, code, v.timed)
	assertAnswer(t, res, r, v, c.timeout(v.env), c.answersFor(v.oci))
	t.Logf("answer: status %q exit %d timed_out %v oom %v truncated %v in %s (from the program's start %s, its last mark %s, run %s)",
		res.Status, res.ExitCode, res.TimedOut, res.OOMKilled, res.Truncated, res.Duration.Round(time.Millisecond),
		r.latency.Round(time.Millisecond), r.sinceMark.Round(time.Millisecond), r.elapsed.Round(time.Millisecond))
	if t.Failed() {
		t.Logf("stdout %q\nstderr %q", clip(res.Stdout), clip(res.Stderr))
	}
	settle(t, d)
	assertNoContainer(t, runtime.LabelJob, marker)
	assertNoSurvivor(t, marker)
	assertHelloWorld(t, d, marker+"-hello", v.env.language())
	settle(t, d)
	assertNoContainer(t, runtime.LabelJob, marker+"-hello")
	assertNoContainer(t, runtime.LabelJob, marker+"-warm-up")
}

// assertNoSurvivor fails the test when a host process's command line holds
// the marker: a child of the run outlived its container. (Under gVisor the
// sandbox's processes are not host processes; the check then holds
// trivially, and the removed sandbox is what proves it.)
func assertNoSurvivor(tb testing.TB, marker string) {
	tb.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatalf("reading /proc: %v", err)
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		if strings.Contains(string(cmdline), marker) {
			tb.Errorf("host process %s survived the run: %q", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
}
