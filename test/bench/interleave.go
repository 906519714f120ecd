package main

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"time"
)

// interleaved is saturation taken against the engine's ceiling in short
// turns, so that both see the same minutes of a machine whose speed moves
// by up to 1.7× within one (BENCHMARKS.md, 2026-12-03 14:02): rounds of a
// slice of the service's closed loop and a slice of bare engine cycles,
// the order swapped every round, each slice started once the host is
// quiet again.
type interleaved struct {
	// service and engine are each round's slices.
	service []phase
	engine  []ceilingRun
	// drawn is, for each of the service's slices, how many of its answers
	// took containers its pool had started before the slice (the pool's
	// idle and starting at the start less at the end). They are not
	// counted: the slice began with a pool refilled while the host settled.
	// It is negative when the pool grew: those starts were the slice's work.
	drawn []int64
}

// ratio is the service's answers a second over all its slices, less
// those drawn from the pool's start, against the engine's cycles a second
// over all of its.
func (iv interleaved) ratio() float64 {
	var answers, cycles int64
	var st, et time.Duration
	for i, p := range iv.service {
		answers, st = answers+p.ok, st+p.elapsed
		if i < len(iv.drawn) {
			answers -= iv.drawn[i]
		}
	}
	for _, e := range iv.engine {
		cycles, et = cycles+e.cycles, et+e.elapsed
	}
	if answers == 0 || cycles == 0 {
		return 0
	}
	return (float64(answers) / st.Seconds()) / (float64(cycles) / et.Seconds())
}

// failures counts the service's failed calls over its slices.
func (iv interleaved) failures() int64 {
	var n int64
	for _, p := range iv.service {
		n += p.failures()
	}
	return n
}

// rounds lists each round's rates, "answers/s : cycles/s" (the answers
// drawn from the pool's start counted).
func (iv interleaved) rounds() string {
	var parts []string
	for i := range min(len(iv.service), len(iv.engine)) {
		parts = append(parts, fmt.Sprintf("%.1f:%.1f", iv.service[i].perSec, iv.engine[i].perSec))
	}
	return strings.Join(parts, ", ")
}

// drawnTotal is how many answers, over the service's slices, took
// containers started before their slice.
func (iv interleaved) drawnTotal() int64 {
	var n int64
	for _, d := range iv.drawn {
		n += d
	}
	return n
}

// measureInterleaved runs o.interleaveRounds rounds of o.interleaveSlice
// each, with o.conc callers and o.conc cycles at once, on one service.
func measureInterleaved(ctx context.Context, o *options) (interleaved, error) {
	var iv interleaved
	c, err := newCycler(ctx, benchConfig(o.image))
	if err != nil {
		return iv, err
	}
	defer c.close()
	var sliceErr error
	fail := func(err error) {
		if err != nil && sliceErr == nil {
			sliceErr = err
		}
	}
	_, err = withService(ctx, o, func(s *service) phase {
		// What the host is busy with while the service idles (a CPU hog
		// beside the bench, say) counts as quiet.
		floor := busyShare(time.Second)
		for i := 0; i < o.interleaveRounds && sliceErr == nil; i++ {
			turns := []func(){
				func() {
					before, err := s.poolGauges()
					fail(err)
					iv.service = append(iv.service, s.closedLoop(ctx, o.conc, o.interleaveSlice))
					after, err := s.poolGauges()
					fail(err)
					iv.drawn = append(iv.drawn, int64(before["idle"]+before["starting"]-after["idle"]-after["starting"]))
				},
				func() {
					e, err := c.run(ctx, o.conc, o.interleaveSlice, nil)
					fail(err)
					iv.engine = append(iv.engine, e)
				},
			}
			if i%2 == 1 {
				turns[0], turns[1] = turns[1], turns[0]
			}
			for _, turn := range turns {
				settle(ctx, floor+quietShare, settleMost)
				turn()
			}
		}
		return phase{}
	})
	if err == nil {
		err = sliceErr
	}
	return iv, err
}

// A slice starts once the host's CPU was busy less than quietShare of a
// settleStep above what it is busy with while the service idles (the last
// slice's removals and the pool's refills done), or after settleMost.
const (
	quietShare = 0.25
	settleStep = 250 * time.Millisecond
	settleMost = 15 * time.Second
)

// settle waits until the host was busy less than share of one settleStep,
// or most has passed.
func settle(ctx context.Context, share float64, most time.Duration) {
	deadline := time.Now().Add(most)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if busyShare(settleStep) < share {
			return
		}
	}
}

// busyShare is the share of the host's CPUs that were busy over the next
// step.
func busyShare(step time.Duration) float64 {
	b0, _ := hostBusy()
	time.Sleep(step)
	b1, _ := hostBusy()
	return shareOf(b1-b0, step, goruntime.NumCPU())
}

// shareOf is busy ticks over step on cpus as a share of what they could be.
func shareOf(busy int64, step time.Duration, cpus int) float64 {
	return float64(busy) / (step.Seconds() * userHZ * float64(cpus))
}
