// Command soak holds sandboxd under a long, mixed, hostile load and checks
// that it stays correct and lean. It starts the service binary in free mode
// on a free loopback port with its own instance label, sends -n requests at
// concurrency -c (hello worlds, timeouts, memory bombs, output floods and
// fork bombs, each with a nonce so crossed answers show), and checks every
// answer against its program. It then counts leaked containers, compares
// the service's and dockerd's memory and threads before and after, and
// prints one Markdown table.
//
// It stops by itself: after -n requests or at -deadline, whichever is first.
// It exits 1 when any answer was wrong, any was a 5xx, or a container leaked.
// Run it with `make soak` (which builds the binary and the image first).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sandboxd/internal/servicetest"
)

// options are the knobs of a soak run.
type options struct {
	binary      string
	config      string
	requests    int
	concurrency int
	pool        int
	runTimeout  time.Duration
	deadline    time.Duration
	settle      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "bin/sandboxd", "the sandboxd binary to soak")
	flag.StringVar(&o.config, "config", "config.yaml", "the configuration file it starts with")
	flag.IntVar(&o.requests, "n", 2000, "requests to send")
	flag.IntVar(&o.concurrency, "c", 16, "requests in flight at once (also the service's max_concurrency)")
	flag.IntVar(&o.pool, "pool", 0, "the service's runtime.pool_size (warm containers; they are not leaks)")
	flag.DurationVar(&o.runTimeout, "run-timeout", 2*time.Second, "the service's runtime.timeout")
	flag.DurationVar(&o.deadline, "deadline", 30*time.Minute, "stop sending after this long, whatever -n says")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "pause after the load before the figures are taken")
	flag.Parse()
	if o.requests < 1 || o.concurrency < 1 || o.concurrency > 1024 {
		fmt.Fprintln(os.Stderr, "soak: -n must be at least 1 and -c within 1..1024")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(1)
	}
	r.print(os.Stdout)
	if problems := r.problems(); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "soak: FAIL: %s\n", p)
		}
		os.Exit(1)
	}
}

// run starts the service, measures it at rest, loads it, measures it again,
// and stops it; the service is stopped on every path.
func run(ctx context.Context, o options) (*report, error) {
	instance := fmt.Sprintf("soak-%d", os.Getpid())
	svc, err := startService(ctx, o, instance)
	if err != nil {
		return nil, err
	}
	defer svc.stop()
	r := &report{opts: o, instance: instance}
	progress("service pid %d at %s, instance %s", svc.pid(), svc.URL, instance)

	if err := warmUp(ctx, svc.URL); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	r.before = sample(svc.pid())
	loadCtx, cancel := context.WithTimeout(ctx, o.deadline)
	defer cancel()
	progress("sending %d requests at concurrency %d (stops by %s at the latest)", o.requests, o.concurrency, o.deadline)
	r.load = load(loadCtx, svc.URL, o.requests, o.concurrency)
	progress("load done in %s; settling %s", r.load.elapsed.Round(time.Millisecond), o.settle)
	time.Sleep(o.settle)
	r.after = sample(svc.pid())
	if r.leaked, err = servicetest.Containers(ctx, instance); err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	r.errorLines = svc.errorLines()
	if err := svc.stop(); err != nil {
		r.stopErr = err.Error()
	}
	if r.leakedAfterStop, err = servicetest.Containers(ctx, instance); err != nil {
		return nil, fmt.Errorf("listing containers after the stop: %w", err)
	}
	return r, nil
}

// progress prints a line about what the soak is doing to stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", args...)
}
