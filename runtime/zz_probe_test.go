package runtime

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"sandboxd"
)

func TestProbeCeiling(t *testing.T) {
	if os.Getenv("PROBE") == "" {
		t.Skip()
	}
	d := mustDocker(t)
	ctx := context.Background()
	for _, hardened := range []bool{false, true} {
		for _, c := range []int{1, 2, 4} {
			var n atomic.Int64
			deadline := time.Now().Add(8 * time.Second)
			var wg sync.WaitGroup
			for range c {
				wg.Go(func() {
					for time.Now().Before(deadline) {
						var cfg *container.Config
						var host *container.HostConfig
						if hardened {
							sp := newSpec(d.cfg, sandboxd.Job{ID: "probe"})
							cfg, host = sp.config, sp.host
							cfg.Cmd = []string{"python3", "-c", "print(1)"}
							cfg.OpenStdin, cfg.StdinOnce, cfg.AttachStdin = false, false, false
						} else {
							cfg = &container.Config{Image: testImage, Cmd: []string{"python3", "-c", "print(1)"}, Labels: labels(testInstance, "probe")}
							host = &container.HostConfig{NetworkMode: "none"}
						}
						r, err := d.cli.ContainerCreate(ctx, cfg, host, nil, nil, "")
						if err != nil {
							t.Error(err)
							return
						}
						wc, we := d.cli.ContainerWait(ctx, r.ID, container.WaitConditionNextExit)
						if err := d.cli.ContainerStart(ctx, r.ID, container.StartOptions{}); err != nil {
							t.Error(err)
						}
						select {
						case <-wc:
						case <-we:
						}
						d.cli.ContainerRemove(ctx, r.ID, container.RemoveOptions{Force: true})
						n.Add(1)
					}
				})
			}
			wg.Wait()
			t.Logf("hardened=%v conc=%d: %.1f/s", hardened, c, float64(n.Load())/8)
		}
	}
}
