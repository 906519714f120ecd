package runtime

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"sandboxd"
	"sandboxd/internal/testenv"
)

// testInstance is this test binary's instance label: test binaries sharing
// a daemon never reap each other's containers.
var testInstance = fmt.Sprintf("test-%d", os.Getpid())

// testImage is the image the integration tests run (SANDBOXD_TEST_IMAGE
// overrides it).
var testImage = testenv.Image()

// TestMain runs the tests, then, in integration runs (the only ones that
// reach Docker), checks that none of them left a container.
func TestMain(m *testing.M) {
	code := m.Run()
	if !testenv.Integration() {
		os.Exit(code)
	}
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: containers left behind by the tests: %s\n", strings.Join(left, ", "))
		code = 1
	}
	os.Exit(code)
}

// leftovers lists (and removes) containers of this binary's instances, or
// nothing when Docker cannot be reached (the tests then skipped or failed).
func leftovers() []string {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelManaged+"=true")),
	})
	if err != nil {
		return nil
	}
	var left []string
	for _, c := range list {
		inst := c.Labels[LabelInstance]
		if inst != testInstance && !strings.HasPrefix(inst, testInstance+"-") {
			continue
		}
		left = append(left, fmt.Sprintf("%s (instance %s, job %s, %s)", shortID(c.ID), inst, c.Labels[LabelJob], c.State))
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	}
	return left
}

// testConfig is the configuration of the integration tests: the service's
// defaults, with this binary's instance.
func testConfig() Config {
	return Config{
		Image:          testImage,
		Timeout:        5 * time.Second,
		MemoryBytes:    128 << 20,
		NanoCPUs:       1e9,
		PidsLimit:      64,
		TmpfsBytes:     16 << 20,
		MaxOutputBytes: 64 << 10,
		MaxFiles:       testMaxFiles,
		MaxFilesBytes:  testMaxFilesBytes,
		Instance:       testInstance,
	}
}

// mustDocker returns a healthy runner with the test configuration, changed
// by mods, closed when the test ends. Outside integration runs it skips the
// test before anything reaches Docker; inside them a missing Docker or image
// fails it.
func mustDocker(tb testing.TB, mods ...func(*Config)) *Docker {
	tb.Helper()
	testenv.RequireIntegration(tb)
	cfg := testConfig()
	for _, mod := range mods {
		mod(&cfg)
	}
	d, err := New(cfg, testenv.Logger())
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Health(ctx); err != nil {
		_ = d.Close(ctx)
		tb.Fatalf("Docker or the image is unavailable: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return d
}

// mustRun runs code as a job named after the test and fails the test on an
// error: every program here must produce an answer.
func mustRun(tb testing.TB, d *Docker, code string) sandboxd.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := d.Run(ctx, sandboxd.Job{ID: jobID(tb), Language: sandboxd.LanguagePython, Code: code})
	if err != nil {
		tb.Fatalf("Run: %v", err)
	}
	return res
}

// jobID names a job after the test that runs it.
func jobID(tb testing.TB) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name())
}

// containersOf lists the containers (any state) carrying a job's label.
func containersOf(tb testing.TB, d *Docker, job string) []container.Summary {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := d.cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelJob+"="+job)),
	})
	if err != nil {
		tb.Fatalf("ContainerList: %v", err)
	}
	return list
}

// assertGone fails the test when, once the runner's removals are done and
// its pool is full again, a container of the job is left, or any container
// of the runner's instance but the pool's idle ones.
func assertGone(tb testing.TB, d *Docker, job string) {
	tb.Helper()
	idle := settle(tb, d)
	if list := containersOf(tb, d, job); len(list) > 0 {
		tb.Errorf("job %s left %d container(s), first %s in state %s", job, len(list), shortID(list[0].ID), list[0].State)
	}
	for _, c := range instanceContainers(tb, d) {
		if !idle[c.ID] {
			tb.Errorf("container %s (job %s, %s) is left, and it is no idle pool container", shortID(c.ID), c.Labels[LabelJob], c.State)
		}
	}
}

// settle waits until the runner's background removals are done and its pool
// (if any, and started) is full and starting none, and returns the pool's
// idle containers.
func settle(tb testing.TB, d *Docker) map[string]bool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if err := d.WaitRemovals(ctx); err != nil {
			tb.Fatalf("the runner's removals did not end: %v", err)
		}
		idle := map[string]bool{}
		if d.pool == nil {
			return idle
		}
		d.pool.mu.Lock()
		for _, b := range d.pool.idle {
			idle[b.id] = true
		}
		// At least the target: after a burst the pool keeps more for a
		// while (sizer.held).
		full := len(idle) >= d.pool.targetLocked() && d.pool.starting == 0
		full = full || !d.pool.started || d.pool.closed
		d.pool.mu.Unlock()
		if full {
			return idle
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("the pool did not fill up: %+v", d.pool.stats())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// instanceContainers lists the containers (any state) of the runner's instance.
func instanceContainers(tb testing.TB, d *Docker) []container.Summary {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: instanceFilter(d.cfg.Instance)})
	if err != nil {
		tb.Fatalf("ContainerList: %v", err)
	}
	return list
}

// modes are the two ways a runner gets its containers: created for each
// run, or taken from a warm pool. Every test of runs passes in both.
var modes = []struct {
	name string
	pool int
}{{"fresh", 0}, {"pooled", 2}}

// eachMode runs f as one subtest per mode; mode is the Config change that
// selects it, for mustDocker.
func eachMode(t *testing.T, f func(t *testing.T, mode func(*Config))) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f(t, func(c *Config) { c.PoolSize = m.pool })
		})
	}
}

// want is the expected answer of a run; Duration is checked apart.
type want struct {
	stdout, stderr string
	exit           int
	status         sandboxd.Status
	timedOut, oom  bool
	truncated      bool
}

// check compares a result with the expected answer, field by field.
func check(tb testing.TB, got sandboxd.Result, w want) {
	tb.Helper()
	if got.Stdout != w.stdout {
		tb.Errorf("stdout = %q, want %q", got.Stdout, w.stdout)
	}
	if got.Stderr != w.stderr {
		tb.Errorf("stderr = %q, want %q", got.Stderr, w.stderr)
	}
	if got.ExitCode != w.exit || got.Status != w.status {
		tb.Errorf("exit %d status %q, want exit %d status %q", got.ExitCode, got.Status, w.exit, w.status)
	}
	if got.TimedOut != w.timedOut || got.OOMKilled != w.oom || got.Truncated != w.truncated {
		tb.Errorf("timed_out=%v oom_killed=%v truncated=%v, want %v %v %v",
			got.TimedOut, got.OOMKilled, got.Truncated, w.timedOut, w.oom, w.truncated)
	}
}
