package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
)

// sample is one answer's wall time at the caller and the time it spent in
// each of the service's phases, from its Server-Timing header (nil when the
// answer had none).
type sample struct {
	wall   time.Duration
	phases map[string]time.Duration
	// at is when the call arrived, from the start of its phase (Poisson
	// phases only).
	at time.Duration
}

// parseServerTiming reads a Server-Timing header (name;dur=ms, ...) into
// the time by phase, a phase listed twice summed; nil for an empty header.
func parseServerTiming(h string) map[string]time.Duration {
	if h == "" {
		return nil
	}
	out := map[string]time.Duration{}
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		for _, p := range strings.Split(params, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "dur="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					out[name] += time.Duration(f * float64(time.Millisecond))
				}
			}
		}
	}
	return out
}

// tailShares are the Poisson loads of the tail, as shares of
// the ceiling, with their targets.
var tailShares = []struct {
	pct      float64
	p50, p99 float64 // ms; 0 for no target
}{{0.4, 10, 100}, {0.6, 0, 250}}

// measureTail takes what the tail's targets compare, in one
// run: the engine's ceiling (with NetworkDisabled off too, for the A/B of
// that field, unless tailOnly), `docker run --rm`, sparse calls,
// saturation with the host's CPU, and the Poisson loads of tailShares,
// each with the -compare binary too when one is given, back to back.
func measureTail(ctx context.Context, o *options, r *report, tailOnly bool) error {
	var err error
	progress("engine ceiling, the service's spec, concurrency %d, %v", o.conc, o.ceiling)
	before, err := measureCeiling(ctx, benchConfig(o.image), o.conc, o.ceiling, nil)
	if err != nil {
		return err
	}
	if !tailOnly {
		progress("engine ceiling, NetworkDisabled off, concurrency %d, %v", o.conc, o.ceiling)
		netOn := func(c *container.Config) { c.NetworkDisabled = false }
		net, err := measureCeiling(ctx, benchConfig(o.image), o.conc, o.ceiling, netOn)
		if err != nil {
			return err
		}
		r.ceilingNet = net.perSec
	}
	progress("docker run --rm x%d, %v apart", o.dockerRuns, o.gap)
	var one string
	if r.dockerRun, one, err = measureDockerRun(ctx, o.image, "print(1)", o.dockerRuns, o.gap); err != nil {
		return err
	} else if one != "1" {
		return fmt.Errorf("docker run printed %q, want 1", one)
	}
	progress("service: %d sparse calls, %v apart", o.sparse, o.gap)
	if r.sparse, err = withService(ctx, o, func(s *service) phase { return s.sequential(ctx, o.sparse, o.gap) }); err != nil {
		return err
	}
	progress("service: saturation, %d callers, %v, with CPU accounting", o.conc, o.window)
	if r.saturation, err = withService(ctx, o, func(s *service) phase {
		acc := startCPU()
		p := s.closedLoop(ctx, o.conc, o.window)
		r.cpu = acc.stop()
		return p
	}); err != nil {
		return err
	}
	// The engine's pace drifts within minutes (BENCHMARKS.md: the VM's CPU
	// speed swings), so saturation is taken against the mean of a ceiling
	// right before it and one right after, and the Poisson rates too.
	progress("engine ceiling again, after saturation, concurrency %d, %v", o.conc, o.ceiling)
	after, err := measureCeiling(ctx, benchConfig(o.image), o.conc, o.ceiling, nil)
	if err != nil {
		return err
	}
	r.ceilingBefore, r.ceilingAfter = before.perSec, after.perSec
	r.ceiling = (before.perSec + after.perSec) / 2
	r.ceilingRuns = []ceilingRun{before, after}
	binaries := []string{o.binary}
	if o.compare != "" {
		binaries = append(binaries, o.compare)
	}
	r.poisson = make([][]phase, len(tailShares))
	for i, share := range tailShares {
		rate := share.pct * r.ceiling
		for _, bin := range binaries {
			progress("service %s: Poisson arrivals at %.0f %% of the ceiling (%.1f/s), %d arrivals", bin, 100*share.pct, rate, o.arrivals)
			ob := *o
			ob.binary = bin
			p, err := withService(ctx, &ob, func(s *service) phase { return steadyPoisson(ctx, s, rate, o.stepWindow, o.arrivals) })
			if err != nil {
				return err
			}
			r.poisson[i] = append(r.poisson[i], p)
		}
	}
	if o.interleaveRounds > 0 {
		progress("saturation interleaved with the ceiling: %d rounds of %v each, %d at once", o.interleaveRounds, o.interleaveSlice, o.conc)
		if r.interleaved, err = measureInterleaved(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// steadyPoisson is a Poisson phase of arrivals at rate, counted once the
// load has run for step from the idle service: the pool starts at its least
// and grows as it measures the rate, so the first seconds are a step in
// the load, not the steady tail. They are kept apart, in the phase's step,
// so that the report shows them too.
func steadyPoisson(ctx context.Context, s *service, rate float64, step time.Duration, arrivals int) phase {
	if step <= 0 {
		return s.poisson(ctx, rate, 0, arrivals)
	}
	first := s.poisson(ctx, rate, step, 0)
	p := s.poisson(ctx, rate, 0, arrivals)
	p.step = &first
	return p
}

// loadAverage is the host's load average over the last minute.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// command is the command line that ran this bench.
func command() string {
	return strings.Join(append([]string{"go run ./test/bench"}, os.Args[1:]...), " ")
}
