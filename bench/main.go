// Command bench measures sandboxd against baselines taken in the same run
// on the same image and program, and prints one Markdown table:
//
//   - `docker run --rm IMAGE python3 -c 'print(1)'`, the baseline users know;
//   - the engine's own ceiling: create+start+wait+remove cycles a second, of
//     a plain container and of one with the service's hardened spec;
//   - the service without and with the warm pool: sequential latency (one
//     call at a time, -gap apart, so a pool refills between calls: the
//     latency of a service that is not saturated), and throughput at several
//     concurrencies (closed loop, no gap) with errors counted;
//   - the service's CPU time and peak RSS during the throughput runs.
//
// Run it with `make bench` (which builds the binary and the image first).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"
	"strings"
	"time"
)

// options are the knobs of a bench run.
type options struct {
	binary     string
	image      string
	dockerRuns int
	sequential int
	gap        time.Duration
	window     time.Duration
	ceiling    time.Duration
	poolSize   int
	conc       []int
}

func main() {
	var o options
	var conc string
	flag.StringVar(&o.binary, "binary", "bin/sandboxd", "the sandboxd binary to measure")
	flag.StringVar(&o.image, "image", "sandbox-python:3.11", "the sandbox image")
	flag.IntVar(&o.dockerRuns, "docker-runs", 20, "`docker run --rm` samples")
	flag.IntVar(&o.sequential, "n", 200, "sequential hello-world calls per mode")
	flag.DurationVar(&o.gap, "gap", 0, "pause before each sequential call and each `docker run` (0: one call per two engine cycles, from the hardened ceiling at concurrency 2)")
	flag.DurationVar(&o.window, "window", 20*time.Second, "length of each throughput run")
	flag.DurationVar(&o.ceiling, "ceiling-window", 10*time.Second, "length of each engine-ceiling run")
	flag.IntVar(&o.poolSize, "pool", 4, "runtime.pool_size for the pooled mode")
	flag.StringVar(&conc, "concurrency", "1,2,4,8", "throughput concurrencies")
	flag.Parse()
	for _, c := range strings.Split(conc, ",") {
		var n int
		if _, err := fmt.Sscan(c, &n); err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: bad -concurrency %q\n", conc)
			os.Exit(2)
		}
		o.conc = append(o.conc, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, &o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// report collects every figure for the final table.
type report struct {
	dockerRun latencies
	// ceiling and hardened are cycles a second by concurrency, of a plain
	// container and of one with the service's spec.
	ceiling  map[int]float64
	hardened map[int]float64
	modes    []modeReport
}

// modeReport is the service measured in one configuration.
type modeReport struct {
	name       string
	pool       int
	seq        latencies
	throughput []throughputRun
	cpu        time.Duration
	peakRSSKiB int64
}

func run(ctx context.Context, o *options) error {
	var r report
	var err error
	progress("engine ceiling at concurrency 1, 2, 4 (%v each), plain and hardened", o.ceiling)
	if r.ceiling, err = measureCeiling(ctx, o.image, []int{1, 2, 4}, o.ceiling, false); err != nil {
		return err
	}
	if r.hardened, err = measureCeiling(ctx, o.image, []int{1, 2, 4}, o.ceiling, true); err != nil {
		return err
	}
	if o.gap == 0 {
		// Sequential calls at half the engine's pace: a pool has time to
		// refill, as on a service that is not saturated (the throughput
		// runs measure saturation).
		o.gap = time.Duration(2 * float64(time.Second) / r.hardened[2]).Round(10 * time.Millisecond)
	}
	progress("docker run --rm x%d, %v apart", o.dockerRuns, o.gap)
	if r.dockerRun, err = measureDockerRun(ctx, o.image, o.dockerRuns, o.gap); err != nil {
		return err
	}
	for _, mode := range []struct {
		name string
		pool int
	}{{"pool_size 0", 0}, {fmt.Sprintf("pool_size %d", o.poolSize), o.poolSize}} {
		progress("service, %s", mode.name)
		m, err := measureService(ctx, *o, mode.name, mode.pool)
		if err != nil {
			return fmt.Errorf("%s: %w", mode.name, err)
		}
		r.modes = append(r.modes, m)
	}
	printReport(os.Stdout, *o, r)
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// machine describes where the figures were taken.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				model = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s), %s, %s", goruntime.NumCPU(), model, goruntime.Version(), time.Now().UTC().Format("2006-01-02"))
}
