package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"

	"sandboxd/runtime"
	"sandboxd/test/bench/load"
)

// measureDockerRun times `docker run --rm IMAGE python3 -c CODE`, the way
// users would run the program without this service, one at a time with a
// pause before each, like the service's sparse calls. It returns the
// program's output too, which must be the same every time.
func measureDockerRun(ctx context.Context, image, code string, n int, gap time.Duration) (latencies, string, error) {
	var l latencies
	var first string
	for i := range n {
		time.Sleep(gap)
		start := time.Now()
		out, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", image,
			"python3", "-c", code).CombinedOutput()
		if err != nil || (i > 0 && string(out) != first) {
			return nil, "", fmt.Errorf("docker run: %v: %q", err, out)
		}
		l = append(l, time.Since(start))
		first = string(out)
	}
	return l, strings.TrimSuffix(first, "\n"), nil
}

// benchConfig is the service's default runtime configuration (config.yaml),
// under the bench's own instance label.
func benchConfig(image string) runtime.Config {
	return runtime.Config{
		Image: image, Timeout: 5 * time.Second, MemoryBytes: 128 << 20, NanoCPUs: 1e9, PidsLimit: 64,
		TmpfsBytes: 16 << 20, MaxOutputBytes: 64 << 10, Instance: "bench-ceiling",
	}
}

// ceilingRun is one run of the engine's ceiling: its cycles, their rate,
// and the host's CPU over the cycling (the spec's setup left out).
type ceilingRun struct {
	perSec  float64
	cycles  int64
	elapsed time.Duration
	cpu     cpuSplit
}

// measureCeiling counts create+start+wait+remove cycles a second through
// the Engine API with conc at once: the most containers the engine gives
// the service. The container is the one a runner of cfg starts
// (serviceSpec), without stdin, so its runner finds no program and exits
// (after its preload, in the data image); tweak, when set, changes its
// configuration first (the A/B of NetworkDisabled, the preload off). The
// host's CPU is accounted over the cycles, so that saturation's CPU per
// answer has the engine's own per cycle beside it.
func measureCeiling(ctx context.Context, cfg runtime.Config, conc int, window time.Duration, tweak func(*container.Config)) (ceilingRun, error) {
	c, err := newCycler(ctx, cfg)
	if err != nil {
		return ceilingRun{}, err
	}
	defer c.close()
	return c.run(ctx, conc, window, tweak)
}

// cycler runs engine cycles of the service's container spec, taken once.
type cycler struct {
	cli  *client.Client
	spec container.InspectResponse
}

// newCycler connects to the engine and takes the spec a runner of cfg
// gives its containers (serviceSpec).
func newCycler(ctx context.Context, cfg runtime.Config) (*cycler, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	spec, err := serviceSpec(ctx, cli, cfg)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("the service's container spec: %w", err)
	}
	return &cycler{cli: cli, spec: spec}, nil
}

func (c *cycler) close() { c.cli.Close() }

// run keeps conc cycles going for the window (tweak as in measureCeiling),
// accounting the host's CPU over them; the first failed cycle ends it.
func (c *cycler) run(ctx context.Context, conc int, window time.Duration, tweak func(*container.Config)) (ceilingRun, error) {
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	acc := startCPU()
	start := time.Now()
	load.Closed(ctx, conc, window, func() bool {
		if err := cycle(ctx, c.cli, c.spec, tweak); err != nil {
			once.Do(func() { firstErr = err })
			return false
		}
		done.Add(1)
		return true
	})
	elapsed, split := time.Since(start), acc.stop()
	if firstErr != nil {
		return ceilingRun{}, firstErr
	}
	return ceilingRun{perSec: float64(done.Load()) / elapsed.Seconds(), cycles: done.Load(), elapsed: elapsed, cpu: split}, nil
}

// serviceSpec is the container configuration the service gives a run:
// that of the warm container a runner of cfg (pool of one) starts, as the
// engine reports it. The runner is closed again, its container removed.
func serviceSpec(ctx context.Context, cli *client.Client, cfg runtime.Config) (container.InspectResponse, error) {
	cfg.PoolSize, cfg.PoolMax = 1, 0
	d, err := runtime.New(cfg, nil)
	if err != nil {
		return container.InspectResponse{}, err
	}
	defer d.Close(context.WithoutCancel(ctx))
	if _, err := d.Reap(ctx); err != nil { // starts the pool
		return container.InspectResponse{}, err
	}
	list := container.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", runtime.LabelInstance+"="+cfg.Instance), filters.Arg("status", "running"))}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		cs, err := cli.ContainerList(ctx, list)
		if err != nil {
			return container.InspectResponse{}, err
		}
		if len(cs) > 0 {
			return cli.ContainerInspect(ctx, cs[0].ID)
		}
	}
	return container.InspectResponse{}, errors.New("the runner's warm container did not start within a minute")
}

// cycle creates, starts, waits for and removes one container of spec,
// changed by tweak when set.
func cycle(ctx context.Context, cli *client.Client, spec container.InspectResponse, tweak func(*container.Config)) error {
	cfg, host := *spec.Config, *spec.HostConfig
	cfg.Hostname = ""
	cfg.OpenStdin, cfg.StdinOnce, cfg.AttachStdin = false, false, false
	// The runner's socket (runtime.io_dir) is the service's own: a cycle
	// mounts an empty directory in its place, as much work for the engine,
	// and its runner, told of no socket, exits at its stdin's end.
	cfg.Env = slices.DeleteFunc(slices.Clone(cfg.Env), func(e string) bool { return strings.HasPrefix(e, "SANDBOX_IO=") })
	host.Mounts = slices.Clone(host.Mounts)
	for i := range host.Mounts {
		if host.Mounts[i].Type == mount.TypeBind {
			dir, err := os.MkdirTemp("", "bench-io-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			host.Mounts[i].Source = dir
		}
	}
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := cli.ContainerCreate(ctx, &cfg, &host, nil, nil, "")
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true})
	waitC, errC := cli.ContainerWait(ctx, c.ID, container.WaitConditionNextExit)
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	select {
	case <-waitC:
		return nil
	case err := <-errC:
		return fmt.Errorf("wait: %w", err)
	}
}
