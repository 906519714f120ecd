package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"

	"sandboxd"
	"sandboxd/runtime"
	"sandboxd/test/bench/load"
)

// The programs of the data phase: the pandas import of the data environment's target,
// and a chart drawn with pandas and matplotlib, saved in the working
// directory (so returned as a file out where the runner speaks files out).
const (
	pandasVersion = "import pandas as pd; print(pd.__version__)"
	chartProgram  = `import pandas as pd
import matplotlib.pyplot as plt
df = pd.DataFrame({"month": ["Jan", "Feb", "Mar", "Apr"], "sales": [120, 95, 180, 150]})
ax = df.plot.bar(x="month", y="sales", title="Sales")
ax.set_ylabel("units")
plt.savefig("chart.png")
print("drawn")
`
)

// preloadEnv is the variable that tells the data image's runner what to
// import before its program comes (images/python/data/recipe.sh); empty,
// it imports nothing.
const preloadEnv = "SANDBOX_PRELOAD"

// pngMagic starts every PNG file.
var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// dataReport is what the data phase measured.
type dataReport struct {
	// ceiling is the engine's cycles a second of the data environment's
	// own container spec, its runner's preload included; ceilingBare the
	// same without the preload: the engine's own limit with this image.
	ceiling, ceilingBare float64
	// ceilingRuns is the ceiling's run with the preload, its CPU beside
	// saturation's.
	ceilingRuns []ceilingRun
	// dockerRun is pandasVersion in a fresh `docker run --rm` of the data
	// image; warm is the same through the runtime, its pool warm.
	dockerRun, warm latencies
	// chart is chartProgram's answer time through the runtime, its pool
	// warm; chartFiles says how its PNG came back.
	chart      latencies
	chartFiles string
	// saturation is pandasVersion under o.conc callers in a closed loop,
	// with the host's CPU split over it.
	saturation phase
	cpu        cpuSplit
	version    string
}

// dataConfig is the data environment's runtime configuration (its
// defaults: 512 MiB, 10 s, one CPU, pids 64, 64 MiB of /tmp, pool_size 1,
// pool_max 4, files out 16 and 8 MiB), under the bench's own instance label.
func dataConfig(image string) runtime.Config {
	cfg := benchConfig(image)
	cfg.Timeout, cfg.MemoryBytes, cfg.TmpfsBytes = 10*time.Second, 512<<20, 64<<20
	cfg.PoolSize, cfg.PoolMax, cfg.Instance = 1, 4, "bench-data"
	cfg.MaxFiles, cfg.MaxFilesBytes = 16, 8<<20 // config.yaml's runtime.max_files, max_files_bytes
	return cfg
}

// measureData runs the data phase: the engine's ceiling for the data
// spec, `docker run --rm` of the data image, the warm runtime's sparse
// pandas import and chart, and saturation.
func measureData(ctx context.Context, o *options) (dataReport, error) {
	var r dataReport
	var err error
	cfg := dataConfig(o.dataImage)
	progress("data: docker run --rm %s (pandas import) x%d, %v apart", o.dataImage, o.dockerRuns, o.gap)
	if r.dockerRun, r.version, err = measureDockerRun(ctx, o.dataImage, pandasVersion, o.dockerRuns, o.gap); err != nil {
		return r, err
	}
	d, err := runtime.New(cfg, nil)
	if err != nil {
		return r, err
	}
	defer d.Close(context.WithoutCancel(ctx))
	if _, err := d.Reap(ctx); err != nil { // starts the pool
		return r, err
	}
	n := max(o.sparse/2, 3)
	progress("data: runtime, pool warm: %d pandas imports, %d charts, each %v after a container is idle", n, n/3, o.dataGap)
	if r.warm, _, err = sparseRuns(ctx, d, n, o.dataGap, pandasVersion, r.version+"\n"); err != nil {
		return r, err
	}
	if r.chart, r.chartFiles, err = sparseRuns(ctx, d, n/3, o.dataGap, chartProgram, "drawn\n"); err != nil {
		return r, err
	}
	// The ceilings right before saturation, on the host's load of then.
	progress("data: engine ceiling, the data spec with and without its preload, concurrency %d, %v each", o.conc, o.ceiling)
	ceil := cfg
	ceil.Instance = "bench-data-ceiling" // its own: serviceSpec reaps its instance
	withPreload, err := measureCeiling(ctx, ceil, o.conc, o.ceiling, nil)
	if err != nil {
		return r, err
	}
	noPreload := func(c *container.Config) { c.Env = append(c.Env, preloadEnv+"=") }
	bare, err := measureCeiling(ctx, ceil, o.conc, o.ceiling, noPreload)
	if err != nil {
		return r, err
	}
	r.ceiling, r.ceilingBare, r.ceilingRuns = withPreload.perSec, bare.perSec, []ceilingRun{withPreload}
	progress("data: saturation, %d callers, %v, with CPU accounting (profile the host now)", o.conc, o.window)
	acc := startCPU()
	r.saturation = closedLoopRuns(ctx, d, o.conc, o.window, pandasVersion, r.version+"\n")
	r.cpu = acc.stop()
	return r, nil
}

// sparseRuns runs code n times through the runtime, one at a time, each
// gap after the pool has an idle container again (so the run finds it
// warm), checks that it printed want, and returns the latencies and how
// the last run's PNG came back.
func sparseRuns(ctx context.Context, d *runtime.Docker, n int, gap time.Duration, code, want string) (latencies, string, error) {
	var l latencies
	var png string
	for i := range n {
		if err := waitIdle(ctx, d); err != nil {
			return nil, "", err
		}
		time.Sleep(gap)
		start := time.Now()
		res, err := d.Run(ctx, sandboxd.Job{ID: fmt.Sprintf("bench-data-%d", i), Language: sandboxd.LanguagePython, Code: code})
		if err != nil || res.Status != sandboxd.StatusOK || res.Stdout != want {
			return nil, "", fmt.Errorf("data run: %v: status %q stdout %q stderr %q", err, res.Status, res.Stdout, res.Stderr)
		}
		l = append(l, time.Since(start))
		png = pngOut(res.Files)
	}
	return l, png, nil
}

// waitIdle waits until the runtime's pool holds an idle container.
func waitIdle(ctx context.Context, d *runtime.Docker) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.PoolStats().Idle > 0 {
			return nil
		}
	}
	return errors.New("the data pool had no idle container within a minute")
}

// pngOut says how a chart came back among the files out.
func pngOut(files []sandboxd.File) string {
	for _, f := range files {
		if bytes.HasPrefix(f.Content, pngMagic) {
			return fmt.Sprintf("returned as %s (%s, %d bytes)", f.Name, f.MediaType, f.Size)
		}
	}
	return "not returned (the image's runner does not speak files out: saved in /tmp only)"
}

// closedLoopRuns keeps conc callers running code through the runtime for
// the window.
func closedLoopRuns(ctx context.Context, d *runtime.Docker, conc int, window time.Duration, code, want string) phase {
	var r recorder
	var mu sync.Mutex
	n := 0
	before := d.PoolStats()
	start := time.Now()
	load.Closed(ctx, conc, window, func() bool {
		mu.Lock()
		n++
		id := fmt.Sprintf("bench-data-sat-%d", n)
		mu.Unlock()
		t := time.Now()
		res, err := d.Run(ctx, sandboxd.Job{ID: id, Language: sandboxd.LanguagePython, Code: code})
		if err == nil && (res.Status != sandboxd.StatusOK || res.Stdout != want) {
			err = fmt.Errorf("status %s: stdout %q", res.Status, strings.TrimSpace(res.Stdout))
		}
		r.record(time.Since(t), err)
		return true
	})
	p := r.done(start)
	after := d.PoolStats()
	p.hits, p.misses = after.Hits-before.Hits, after.Misses-before.Misses
	return p
}
