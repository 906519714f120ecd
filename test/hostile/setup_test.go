package hostile

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/servicetest"
	"sandboxd/internal/testenv"
	"sandboxd/runtime"
)

// ociRuntimes are the OCI runtimes every case runs under: runc always, and
// gVisor, which the service offers as the stronger boundary.
var ociRuntimes = []string{"runc", "runsc"}

// image is the sandbox image `make image` builds (SANDBOXD_TEST_IMAGE
// overrides it).
var image = testenv.Image()

// The wall-clock limits: config.yaml's, for programs that must end by
// themselves, a shorter one for programs that must be killed, so the suite
// stays fast, and a long one for programs that must spend some CPU time on
// a host that gives them little of it. Every other limit is config.yaml's
// default.
const (
	fullTimeout  = 5 * time.Second
	shortTimeout = 2 * time.Second
	slowTimeout  = 30 * time.Second
)

// variant is one way the service may run its programs: under an OCI
// runtime, with a warm pool of some size or none.
type variant struct {
	oci  string
	pool int
	// suite names the test in the variant's instance label.
	suite string
	// timed says whether the timing promises are asserted (see
	// timedRun), besides the answers, and the program writes its start time first.
	timed bool
}

// variants are every OCI runtime, each with the pool off and on.
func variants() []variant {
	var vs []variant
	for _, oci := range ociRuntimes {
		vs = append(vs, variant{oci, 0, "hostile", true}, variant{oci, 2, "hostile", true})
	}
	return vs
}

// name names the variant's subtest.
func (v variant) name() string {
	if v.pool == 0 {
		return v.oci + "-fresh"
	}
	return v.oci + "-pooled"
}

// instance is the instance label of this test binary's runs in the
// variant: unique, so no other test or service reaps or counts them.
func (v variant) instance() string {
	return fmt.Sprintf("%s-%d-%s", v.suite, os.Getpid(), v.name())
}

// baseConfig is config.yaml's runtime section for one variant, with the timeout.
func baseConfig(v variant, timeout time.Duration) runtime.Config {
	return runtime.Config{
		Image:          image,
		OCIRuntime:     v.oci,
		PoolSize:       v.pool,
		Timeout:        timeout,
		MemoryBytes:    128 << 20,
		NanoCPUs:       1e9,
		PidsLimit:      64,
		TmpfsBytes:     16 << 20,
		MaxOutputBytes: 64 << 10,
		Instance:       v.instance(),
	}
}

// mustRunner returns a runner for the OCI runtime with the timeout, closed
// when the test ends. Outside integration runs it skips the test before
// anything reaches Docker; inside them a missing Docker, image or OCI
// runtime fails it.
func mustRunner(tb testing.TB, v variant, timeout time.Duration) *runtime.Docker {
	tb.Helper()
	testenv.RequireIntegration(tb)
	d, err := runtime.New(baseConfig(v, timeout), testenv.Logger())
	if err != nil {
		tb.Fatalf("runtime.New: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Health(ctx); err != nil {
		tb.Fatalf("%s: Docker, the image or the OCI runtime is unavailable: %v", v.oci, err)
	}
	return d
}

// mustRun runs code and fails the test on an error: every hostile program
// must end in a delivered answer, never in a failure of the service.
func mustRun(tb testing.TB, d *runtime.Docker, jobID, code string) (sandboxd.Result, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	res, err := d.Run(ctx, sandboxd.Job{ID: jobID, Language: sandboxd.LanguagePython, Code: code})
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

// assertHelloWorld fails the test unless a plain program still answers.
func assertHelloWorld(tb testing.TB, d *runtime.Docker, jobID string) {
	tb.Helper()
	res, _ := mustRun(tb, d, jobID, "print('hello, world')\n")
	if res.Status != sandboxd.StatusOK || res.Stdout != "hello, world\n" || res.Stderr != "" {
		tb.Errorf("hello world afterwards: status %q exit %d stdout %q stderr %q",
			res.Status, res.ExitCode, res.Stdout, res.Stderr)
	}
}
