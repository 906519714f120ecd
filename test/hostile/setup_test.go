package hostile

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
	"sandboxd/internal/units"
	"sandboxd/runtime"
)

// ociRuntimes are the OCI runtimes every case runs under: runc always, and
// gVisor, which the service offers as the stronger boundary.
var ociRuntimes = []string{"runc", "runsc"}

// environment is one of the service's environments as the suite runs it:
// its image and config.yaml's limits for it.
type environment struct {
	// name is the environment's name in a request (sandboxd.Environment).
	name string
	// image is the image it runs: SANDBOXD_TEST_IMAGE or
	// SANDBOXD_TEST_DATA_IMAGE override `make image`'s and `make image-data`'s.
	image string
	// memory and tmpfs are its runtime.memory and runtime.tmpfs.
	memory, tmpfs int64
	// timeout is its runtime.timeout: the deadline of the programs that
	// must end by themselves.
	timeout time.Duration
	// preloads says that its runner imports modules before it reads its
	// program (numpy, pandas and matplotlib in data). The runtime waits
	// for a container still preloading up to the program's limit plus 10
	// s, then counts the limit from the runner's late ack; past that wait
	// the run is the service's failure. gVisor's preload outlasted 12 s
	// on this busy host (BENCHMARKS.md), so the programs that
	// must be killed get the environment's own timeout here, not
	// shortTimeout, and a pooled runner's first container is used by a
	// hello world before the case (see runCase).
	preloads bool
	// languages are the languages it runs (config.yaml's languages), its
	// default first; none is python alone.
	languages []string
}

// The two environments: python is the seed's, data is the pandas one (512 MiB,
// 10 s, 64 MiB of /tmp). Both keep pids 64 and one CPU.
var (
	pythonEnv = environment{name: sandboxd.DefaultEnvironment, image: testenv.Image(),
		memory: 128 << 20, tmpfs: 16 << 20, timeout: 5 * time.Second}
	dataEnv = environment{name: sandboxd.DataEnvironment, image: testenv.DataImage(),
		memory: 512 << 20, tmpfs: 64 << 20, timeout: 10 * time.Second, preloads: true}
	// nodeEnv runs JavaScript, TypeScript and Bash in the node
	// image, 256 MiB, 5 s, 16 MiB of /tmp.
	nodeEnv = environment{name: nodeEnvironment, image: testenv.NodeImage(),
		memory: 256 << 20, tmpfs: 16 << 20, timeout: 5 * time.Second,
		languages: []string{sandboxd.LanguageJavaScript, sandboxd.LanguageTypeScript, sandboxd.LanguageBash}}
)

// nodeEnvironment is the name of config.yaml's environment for JavaScript,
// TypeScript and Bash.
const nodeEnvironment = "node"

// language is the environment's default language: the one its hello world
// and warm-up are written in.
func (e environment) language() string {
	if len(e.languages) == 0 {
		return sandboxd.LanguagePython
	}
	return e.languages[0]
}

// helloWorld is a program in each language that prints "hello, world".
var helloWorld = map[string]string{
	sandboxd.LanguagePython:     "print('hello, world')\n",
	sandboxd.LanguageJavaScript: "console.log('hello, world')\n",
	sandboxd.LanguageTypeScript: "console.log('hello, world')\n",
	sandboxd.LanguageBash:       "echo 'hello, world'\n",
}

// The wall-clock limits besides an environment's own timeout: a shorter
// one for programs that must be killed, so the suite stays fast, and a long
// one for programs that must spend some CPU time on a host that gives them
// little of it.
const (
	shortTimeout = 2 * time.Second
	slowTimeout  = 30 * time.Second
)

// variant is one way the service may run its programs: in an environment,
// under an OCI runtime, with a warm pool of some size or none.
type variant struct {
	env  environment
	oci  string
	pool int
	// suite names the test in the variant's instance label.
	suite string
	// timed says whether the timing promises are asserted (see
	// timedRun), besides the answers, and the program writes its start time first.
	timed bool
	// cases, when set, is the variant's table in place of the matrix's
	// (see variants).
	cases func(environment) []hostileCase
}

// variants are, in python, every OCI runtime with the pool off and on; in
// data and node, every OCI runtime with the pool on (the service's
// default), which keeps the suite within minutes on two cores. The pool's
// path is the same for every language, which python's variants prove
// (docs/design/runtimes.md, section 11). A fresh data container runs
// the same code as a fresh python one, which python's fresh variants prove
// under both runtimes; what data adds to it, the preload before the
// program, is runtime's TestDeadlineLeavesOutThePreload. Without the pool,
// every data case would preload numpy, pandas and matplotlib on its run's
// clock.
//
// In data under runsc the table is limitCases: the cases whose answer
// depends on both the environment and the OCI runtime. The others attack
// the kernel's boundary, the process tree or limits set alike in both
// environments, as the runtime's flags set them (python-runsc runs them),
// or the image (data-runc runs them). Each data case under gVisor starts five warm
// containers, each preloading for seconds of CPU: the whole table took 9
// of the suite's 23 minutes on a slow host of this kind (2026-12-04).
func variants() []variant {
	var vs []variant
	for _, oci := range ociRuntimes {
		vs = append(vs, variant{env: pythonEnv, oci: oci, suite: "hostile", timed: true},
			variant{env: pythonEnv, oci: oci, pool: 2, suite: "hostile", timed: true})
	}
	vs = append(vs, variant{env: dataEnv, oci: "runc", pool: 2, suite: "hostile", timed: true},
		variant{env: dataEnv, oci: "runsc", pool: 2, suite: "hostile", timed: true, cases: limitCases})
	for _, oci := range ociRuntimes {
		vs = append(vs, variant{env: nodeEnv, oci: oci, pool: 2, suite: "hostile", timed: true})
	}
	return vs
}

// name names the variant's subtest: environment, OCI runtime, pool.
func (v variant) name() string {
	if v.pool == 0 {
		return v.env.name + "-" + v.oci + "-fresh"
	}
	return v.env.name + "-" + v.oci + "-pooled"
}

// instance is the instance label of this test binary's runs in the
// variant: unique, so no other test or service reaps or counts them.
func (v variant) instance() string {
	return fmt.Sprintf("%s-%d-%s", v.suite, os.Getpid(), v.name())
}

// baseConfig is config.yaml's runtime section for one variant's
// environment, with the timeout.
func baseConfig(v variant, timeout time.Duration) runtime.Config {
	return runtime.Config{
		Image:          v.env.image,
		OCIRuntime:     v.oci,
		PoolSize:       v.pool,
		Timeout:        timeout,
		MemoryBytes:    units.Bytes(v.env.memory),
		NanoCPUs:       1e9,
		PidsLimit:      64,
		TmpfsBytes:     units.Bytes(v.env.tmpfs),
		MaxOutputBytes: 64 << 10,
		MaxFiles:       maxFiles,
		MaxFilesBytes:  maxFilesBytes,
		Instance:       v.instance(),
		Languages:      v.env.languages,
	}
}

// mustRunner returns a runner for the OCI runtime with the timeout, closed
// when the test ends. Outside integration runs it skips the test before
// anything reaches Docker; inside them a missing Docker, image or OCI
// runtime fails it.
func mustRunner(tb testing.TB, v variant, timeout time.Duration) *runtime.Docker {
	tb.Helper()
	d := newRunner(tb, v, timeout)
	tb.Cleanup(func() { closeRunner(tb, d) })
	return d
}

// newRunner is mustRunner's runner, which the caller closes (closeRunner).
func newRunner(tb testing.TB, v variant, timeout time.Duration) *runtime.Docker {
	tb.Helper()
	testenv.RequireIntegration(tb)
	d, err := runtime.New(baseConfig(v, timeout), testenv.Logger())
	if err != nil {
		tb.Fatalf("runtime.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Health(ctx); err != nil {
		closeRunner(tb, d)
		tb.Fatalf("%s: Docker, the image or the OCI runtime is unavailable: %v", v.oci, err)
	}
	return d
}

// closeRunner closes the runner: its warm containers and the containers of
// its runs removed, or the test fails.
func closeRunner(tb testing.TB, d *runtime.Docker) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		tb.Errorf("Close: %v", err)
	}
}

// runners are a variant's runners, one for each timeout its cases run with
// (hostileCase.timeout), shared by its cases as the service shares its
// runner between requests. A runner of its own for each case started its
// warm pool for that case alone: two more starts a case, each a preload of
// seconds in data under gVisor.
type runners struct {
	v  variant
	mu sync.Mutex
	by map[time.Duration]*runtime.Docker
}

// newRunners starts the variant's runner for its environment's timeout at
// once, so a missing Docker, image or OCI runtime fails (or, outside
// integration runs, skips) the test before any case; tb's cleanup closes
// them all.
func newRunners(tb testing.TB, v variant) *runners {
	tb.Helper()
	r := &runners{v: v, by: map[time.Duration]*runtime.Docker{}}
	tb.Cleanup(func() { r.close(tb) })
	r.get(tb, v.env.timeout)
	return r
}

// get returns the runner with the timeout, started on its first use.
func (r *runners) get(tb testing.TB, timeout time.Duration) *runtime.Docker {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.by[timeout]; ok {
		return d
	}
	d := newRunner(tb, r.v, timeout)
	r.by[timeout] = d
	return d
}

// close closes every runner started so far; those closed are forgotten,
// so a second close does nothing.
func (r *runners) close(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for timeout, d := range r.by {
		closeRunner(tb, d)
		delete(r.by, timeout)
	}
}

// mustRun runs the job's code (in Python unless the job names a language)
// and fails the test on an error: every hostile program must end in a
// delivered answer, never in a failure of the service.
func mustRun(tb testing.TB, d *runtime.Docker, job sandboxd.Job) (sandboxd.Result, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if job.Language == "" {
		job.Language = sandboxd.LanguagePython
	}
	res, err := d.Run(ctx, job)
	elapsed := time.Since(start)
	if err != nil {
		tb.Fatalf("Run: a service error instead of an answer (%s after %s): %v", sandboxd.ErrorCode(err), elapsed, err)
	}
	return res, elapsed
}

// settle waits until the runner has removed the containers of the runs that
// returned: it answers first and removes them in the background.
func settle(tb testing.TB, d *runtime.Docker) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.WaitRemovals(ctx); err != nil {
		tb.Errorf("containers not removed within 30 s of the answer: %v", err)
	}
}

// assertNoContainer fails the test when a container with the label is left.
func assertNoContainer(tb testing.TB, key, value string) {
	tb.Helper()
	left, err := servicetest.Labelled(context.Background(), key, value)
	if err != nil {
		tb.Fatal(err)
	}
	if len(left) > 0 {
		tb.Errorf("containers left with %s=%s: %s", key, value, strings.Join(left, ", "))
	}
}

// assertHelloWorld fails the test unless a plain program in the language
// still answers.
func assertHelloWorld(tb testing.TB, d *runtime.Docker, jobID, language string) {
	tb.Helper()
	res, _ := mustRun(tb, d, sandboxd.Job{ID: jobID, Language: language, Code: helloWorld[language]})
	if res.Status != sandboxd.StatusOK || res.Stdout != "hello, world\n" || res.Stderr != "" {
		tb.Errorf("hello world afterwards: status %q exit %d stdout %q stderr %q",
			res.Status, res.ExitCode, res.Stdout, res.Stderr)
	}
}
