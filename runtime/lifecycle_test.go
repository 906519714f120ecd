package runtime

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sandboxd/internal/testenv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// The runner's life: parallel runs, cancellation, Close, Reap, Health, Info.

func TestRunParallel(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		const n = 16
		var wg sync.WaitGroup
		results := make([]sandboxd.Result, n)
		errs := make([]error, n)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := range n {
			wg.Go(func() {
				code := fmt.Sprintf("import sys\nprint(%d * %d)\nprint('e%d', file=sys.stderr)\n", i, i, i)
				results[i], errs[i] = d.Run(ctx, sandboxd.Job{ID: fmt.Sprintf("%s-%d", jobID(t), i), Code: code})
			})
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Errorf("run %d: %v", i, errs[i])
				continue
			}
			check(t, results[i], want{stdout: fmt.Sprintf("%d\n", i*i), stderr: fmt.Sprintf("e%d\n", i), status: sandboxd.StatusOK})
		}
	})
}

// startSleeper starts a run that prints and sleeps, on its own goroutine, and
// returns once the run has its container and the program had time to start;
// the run's outcome arrives on the channel.
func startSleeper(t *testing.T, ctx context.Context, d *Docker) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := d.Run(ctx, sandboxd.Job{ID: jobID(t), Code: "import time\nprint('up', flush=True)\ntime.sleep(60)\n"})
		done <- err
	}()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if runningContainer(d) != "" {
			time.Sleep(500 * time.Millisecond)
			return done
		}
	}
	t.Fatalf("the run never got a container")
	return nil
}

// runningContainer is the container of a run in flight, or "".
func runningContainer(d *Docker) string {
	d.inflight.mu.Lock()
	defer d.inflight.mu.Unlock()
	for f := range d.inflight.runs {
		if id := f.containerID(); id != "" {
			return id
		}
	}
	return ""
}

// await returns the error a run ended with, failing when it takes longer than limit.
func await(t *testing.T, done <-chan error, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("the run did not return within %s", limit)
		return nil
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := d.Run(ctx, sandboxd.Job{ID: jobID(t), Code: "print(1)"})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		assertGone(t, d, jobID(t))
	})
}

func TestRunCancelledMidway(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode, func(c *Config) { c.Timeout = 30 * time.Second })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := startSleeper(t, ctx, d)
		cancel()
		if err := await(t, done, 3*time.Second); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		assertGone(t, d, jobID(t))
	})
}

func TestCloseKillsInFlightRuns(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode, func(c *Config) { c.Timeout = 30 * time.Second })
		done := startSleeper(t, context.Background(), d)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		// Close waited for the run: it has returned already.
		if err := await(t, done, 100*time.Millisecond); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
			t.Errorf("the in-flight run ended with %v, want CodeUnavailable", err)
		}
		assertGone(t, d, jobID(t))
		if _, err := d.Run(ctx, sandboxd.Job{ID: jobID(t), Code: "print(1)"}); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
			t.Errorf("Run after Close: %v, want CodeUnavailable", err)
		}
	})
}

func TestReap(t *testing.T) {
	reaping, other := testInstance+"-reap", testInstance+"-other"
	d := mustDocker(t, func(c *Config) { c.Instance = reaping })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Leftovers made by hand, as a crash would leave them.
	leftover := func(labels map[string]string, start bool) string {
		t.Helper()
		resp, err := d.cli.ContainerCreate(ctx,
			&container.Config{Image: testImage, Cmd: []string{"sleep", "60"}, Labels: labels},
			&container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}}, nil, nil, "")
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		t.Cleanup(func() { _ = d.remove(context.Background(), resp.ID) })
		if start {
			if err := d.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
				t.Fatalf("start: %v", err)
			}
		}
		return resp.ID
	}
	created := leftover(labels(reaping, "crashed-1"), false)
	running := leftover(labels(reaping, "crashed-2"), true)
	others := leftover(labels(other, "someone-elses"), false)
	unmanaged := leftover(map[string]string{LabelInstance: reaping}, false)

	n, err := d.Reap(ctx)
	if err != nil || n != 2 {
		t.Errorf("Reap = %d, %v; want 2, nil", n, err)
	}
	for _, id := range []string{created, running} {
		if _, err := d.cli.ContainerInspect(ctx, id); !cerrdefs.IsNotFound(err) {
			t.Errorf("leftover %s still there (inspect: %v)", shortID(id), err)
		}
	}
	for _, id := range []string{others, unmanaged} {
		if _, err := d.cli.ContainerInspect(ctx, id); err != nil {
			t.Errorf("container %s not ours to reap is gone: %v", shortID(id), err)
		}
	}
	if n, err := d.Reap(ctx); err != nil || n != 0 {
		t.Errorf("second Reap = %d, %v; want 0, nil", n, err)
	}
}

func TestHealthAndInfo(t *testing.T) {
	d := mustDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := d.Info(ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if !strings.HasPrefix(info.Engine, "docker ") || info.EngineAPI == "" || info.Image != testImage || info.OCIRuntime == "" {
		t.Errorf("Info = %+v", info)
	}
	t.Logf("Info = %+v", info)
}

func TestHealthMissingImage(t *testing.T) {
	mustDocker(t) // Docker itself must answer
	cfg := testConfig()
	cfg.Image = "sandbox-python:missing"
	d, err := New(cfg, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = d.Health(ctx)
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable ||
		sandboxd.ErrorMessage(err) != "image sandbox-python:missing is missing: build it with `make image image-data` (the python and data images)" {
		t.Errorf("Health = %v, want CodeUnavailable with the make image hint", err)
	}
	_, err = d.Run(ctx, sandboxd.Job{ID: jobID(t), Code: "print(1)"})
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), "make image") {
		t.Errorf("Run = %v, want CodeUnavailable with the make image hint", err)
	}
}

func TestHealthOutdatedImage(t *testing.T) {
	d := mustDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An image without the runner protocol's label, as an image built
	// before the protocol (or by hand) would be, and one labelled with the
	// protocol before this one: empty ones suffice.
	for i, changes := range [][]string{nil, {"LABEL " + runnerproto.LabelRunner + "=6"}} {
		ref := fmt.Sprintf("sandboxd-test-noprotocol:%d-%d", os.Getpid(), i)
		var tarball bytes.Buffer
		_ = tar.NewWriter(&tarball).Close()
		rc, err := d.cli.ImageImport(ctx, image.ImportSource{Source: &tarball, SourceName: "-"}, ref,
			image.ImportOptions{Changes: changes})
		if err != nil {
			t.Fatalf("import: %v", err)
		}
		_, _ = io.Copy(io.Discard, rc)
		rc.Close()
		t.Cleanup(func() { _, _ = d.cli.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true}) })
		d.cfg.Image = ref
		err = d.Health(ctx)
		msg := sandboxd.ErrorMessage(err)
		if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(msg, "make image") ||
			!strings.Contains(msg, "runner protocol") || !strings.Contains(msg, `needs "`+runnerproto.Version+`"`) {
			t.Errorf("Health with %v = %v, want CodeUnavailable asking for make image", changes, err)
		}
	}
}

func TestHealthUnknownRuntime(t *testing.T) {
	d := mustDocker(t)
	d.cfg.OCIRuntime = "no-such-runtime"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := d.Health(ctx)
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), `"no-such-runtime" is not registered`) {
		t.Errorf("Health = %v, want CodeUnavailable naming the runtime", err)
	}
}

func TestDockerUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	d, err := New(testConfig(), testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Health(ctx); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || !strings.Contains(sandboxd.ErrorMessage(err), "unreachable") {
		t.Errorf("Health = %v, want CodeUnavailable saying Docker is unreachable", err)
	}
	if _, err := d.Run(ctx, sandboxd.Job{ID: "j", Code: "print(1)"}); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Errorf("Run = %v, want CodeUnavailable", err)
	}
	if _, err := d.Reap(ctx); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Errorf("Reap = %v, want CodeUnavailable", err)
	}
}
