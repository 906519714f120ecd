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
// way users would run the program without this service.
func measureDockerRun(ctx context.Context, image string, n int) (latencies, error) {
	var l latencies
	for i := 0; i < n; i++ {
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
// the Engine API, the most containers the engine gives anyone.
func measureCeiling(ctx context.Context, image string, concs []int, window time.Duration) (map[int]float64, error) {
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
					if err := cycle(ctx, cli, image); err != nil {
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
func cycle(ctx context.Context, cli *client.Client, image string) error {
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"python3", "-c", "print(1)"}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
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
