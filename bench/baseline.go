package main

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// measureDockerRun times `docker run --rm IMAGE python3 -c 'print(1)'`, the
// way users would run the program without this service, one at a time with
// a pause before each, like the service's sequential calls.
func measureDockerRun(ctx context.Context, image string, n int, gap time.Duration) (latencies, error) {
	var l latencies
	for i := 0; i < n; i++ {
		time.Sleep(gap)
		start := time.Now()
		out, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", image,
			"python3", "-c", "print(1)").CombinedOutput()
		if err != nil || string(out) != "1\n" {
			return nil, fmt.Errorf("docker run: %v: %q", err, out)
		}
		l = append(l, time.Since(start))
	}
	return l, nil
}

// measureCeiling counts create+start+wait+remove cycles a second through
// the Engine API, the most containers the engine gives anyone: of a plain
// container, or (hardened) of one with the service's spec.
func measureCeiling(ctx context.Context, image string, concs []int, window time.Duration, hardened bool) (map[int]float64, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	res := map[int]float64{}
	for _, c := range concs {
		var done atomic.Int64
		var firstErr error
		var once sync.Once
		deadline := time.Now().Add(window)
		var wg sync.WaitGroup
		for w := 0; w < c; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) && ctx.Err() == nil {
					if err := cycle(ctx, cli, image, hardened); err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return nil, firstErr
		}
		res[c] = float64(done.Load()) / window.Seconds()
	}
	return res, nil
}

// cycle creates, starts, waits for and removes one container.
func cycle(ctx context.Context, cli *client.Client, image string, hardened bool) error {
	cfg := &container.Config{Image: image, Cmd: []string{"python3", "-c", "print(1)"},
		Labels: map[string]string{"io.sandboxd.managed": "true", "io.sandboxd.instance": "bench-ceiling"}}
	host := &container.HostConfig{NetworkMode: "none"}
	if hardened {
		host = hardenedHost()
		cfg.User = "10001:10001"
	}
	c, err := cli.ContainerCreate(ctx, cfg, host, nil, nil, "")
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

// hardenedHost mirrors the host part of runtime/spec.go with the service's
// default limits (config.yaml).
func hardenedHost() *container.HostConfig {
	const mib = 1 << 20
	pids := int64(64)
	return &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": fmt.Sprintf("rw,noexec,nosuid,nodev,mode=1777,size=%d", 16*mib)},
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		IpcMode:        container.IPCModePrivate,
		ShmSize:        16 * mib,
		LogConfig:      container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     128 * mib,
			MemorySwap: 128 * mib,
			NanoCPUs:   1e9,
			PidsLimit:  &pids,
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: 256, Hard: 256},
				{Name: "fsize", Soft: 16 * mib, Hard: 16 * mib},
			},
		},
	}
}
