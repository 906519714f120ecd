package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"sandboxd"
	"sandboxd/internal/testenv"
)

// mustEnvironments returns Environments of envs (each a name and an
// image, with the test configuration and a warm pool of one) on the
// instance, under a pool budget of poolMemory, closed when the test ends.
func mustEnvironments(t *testing.T, instance string, poolMemory int64, envs ...[2]string) *Environments {
	t.Helper()
	testenv.RequireIntegration(t)
	var list []Environment
	for _, e := range envs {
		cfg := testConfig()
		// A long timeout: these tests are about routing and memory, and a
		// data container's preload is slow on a loaded host.
		cfg.Image, cfg.Instance, cfg.PoolSize, cfg.Timeout = e[1], instance, 1, 30*time.Second
		list = append(list, Environment{Name: e[0], Config: cfg})
	}
	es, err := NewEnvironments(list, poolMemory, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := es.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return es
}

// docker is the runner of the environment.
func (e *Environments) docker(name string) *Docker { return e.runners[name].(*Docker) }

// environmentContainers lists the instance's containers by their
// environment label.
func environmentContainers(t *testing.T, d *Docker) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: instanceFilter(d.cfg.Instance)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, c := range list {
		out[c.Labels[LabelEnvironment]]++
	}
	return out
}

// waitFor polls cond every 50 ms until it holds or within is up.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitWarm waits until the environment's pool holds an idle container.
func waitWarm(t *testing.T, d *Docker) {
	t.Helper()
	waitFor(t, 60*time.Second, "a warm container", func() bool { return d.PoolStats().Idle > 0 })
}

// TestEnvironmentsRunApart (integration): each environment runs its own
// image with its containers labelled; one environment's Reap leaves the
// other's containers alone, and the service's Reap at start removes the
// leftovers of every environment; an environment whose image is missing
// answers its runs 503 and makes Health say so, while the others run.
func TestEnvironmentsRunApart(t *testing.T) {
	instance := testInstance + "-envs"
	es := mustEnvironments(t, instance, 0, [2]string{"python", testImage}, [2]string{"data", testenv.DataImage()},
		[2]string{"gone", "sandbox-python:no-such-tag"})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if _, err := es.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"", "data"} {
		res, err := es.Run(ctx, sandboxd.Job{ID: jobID(t), Language: sandboxd.LanguagePython, Environment: env,
			Code: "import importlib.util; print(importlib.util.find_spec('numpy') is not None)"})
		want := map[string]string{"": "False", "data": "True"}[env]
		if err != nil || strings.TrimSpace(res.Stdout) != want {
			t.Fatalf("environment %q: %+v %v, want numpy found %s", env, res, err, want)
		}
	}
	_, err := es.Run(ctx, sandboxd.Job{ID: jobID(t), Language: sandboxd.LanguagePython, Environment: "gone", Code: "print(1)"})
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("a run in the environment without its image: %v, want CodeUnavailable", err)
	}
	herr := es.Health(ctx)
	if msg := sandboxd.ErrorMessage(herr); !strings.Contains(msg, "environment gone: image sandbox-python:no-such-tag is missing") ||
		strings.Contains(msg, "environment python") || strings.Contains(msg, "environment data") {
		t.Fatalf("Health: %v", herr)
	}
	py, data := es.docker("python"), es.docker("data")
	waitWarm(t, py)
	waitWarm(t, data)
	if got := environmentContainers(t, py); got["python"] < 1 || got["data"] < 1 || got[""] > 0 {
		t.Fatalf("containers by environment %v, want python's and data's warm ones, each labelled", got)
	}
	// Stop the pools refilling, and wait for the starts and removals under
	// way, so that what is listed is what Reap left.
	for _, d := range []*Docker{py, data} {
		d.pool.mu.Lock()
		d.pool.closed = true
		d.pool.mu.Unlock()
		waitFor(t, 60*time.Second, "the pool's starts", func() bool { return d.PoolStats().Starting == 0 })
		if err := d.WaitRemovals(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := data.Reap(ctx); n < 1 || err != nil {
		t.Fatalf("data's Reap removed %d (%v)", n, err)
	}
	if got := environmentContainers(t, py); got["python"] < 1 || got["data"] > 0 {
		t.Fatalf("after data's Reap: %v, want python's untouched and data's gone", got)
	}
	if n, err := es.Reap(ctx); n < 1 || err != nil {
		t.Fatalf("the service's Reap removed %d (%v)", n, err)
	}
	if got := environmentContainers(t, py); len(got) > 0 {
		t.Fatalf("after the service's Reap: %v, want none left", got)
	}
}

// TestWarmContainerMeasured (integration): a warm container's real
// resident size is read from the engine after the first fill, and the
// pool's containers are counted at it in the shared budget.
func TestWarmContainerMeasured(t *testing.T) {
	es := mustEnvironments(t, testInstance+"-measure", 1<<30, [2]string{"python", testImage}, [2]string{"data", testenv.DataImage()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := es.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range es.Names() {
		p := es.docker(name).pool
		deadline := time.Now().Add(45 * time.Second)
		for p.measured.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no warm container measured in 45s", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
		n, limit := p.measured.Load(), int64(p.d.cfg.MemoryBytes)
		t.Logf("%s (%s): a warm container holds %.1f MiB resident (limit %d MiB)", name, p.d.cfg.Image, float64(n)/(1<<20), limit>>20)
		if n < 1<<20 || n >= limit {
			t.Errorf("%s: measured %d bytes, want between 1 MiB and the limit", name, n)
		}
		if p.size() != n {
			t.Errorf("%s: counted at %d, want the measured %d", name, p.size(), n)
		}
	}
	if used := es.docker("python").pool.budget.used(); used <= 0 || used >= 2*int64(testConfig().MemoryBytes) {
		t.Errorf("the budget counts %d bytes for two measured warm containers", used)
	}
}
