package runtime

import (
	"log/slog"
	"testing"
	"time"
)

// The pool's sizing, on a clock of the test's own: no Docker.

// arrivals feeds the sizer one arrival every gap for d, starting at t0,
// and returns the time of the last.
func arrivals(s *sizer, t0 time.Time, gap, d time.Duration) time.Time {
	t := t0
	for ; t.Sub(t0) < d; t = t.Add(gap) {
		s.arrive(t)
	}
	return t.Add(-gap)
}

// startsTaking records n starts of the latency.
func startsTaking(s *sizer, n int, latency time.Duration) {
	for range n {
		s.started(latency)
	}
}

func TestSizerSparseCallsKeepTheLeast(t *testing.T) {
	s := newSizer(4, 16, 2)
	t0 := time.Unix(1000, 0)
	if got := s.target(t0); got != 4 {
		t.Errorf("target before any arrival = %d, want 4", got)
	}
	last := arrivals(s, t0, 10*time.Second, 5*time.Minute)
	startsTaking(s, 50, 300*time.Millisecond)
	if got := s.target(last); got != 4 {
		t.Errorf("target at one call every 10 s = %d, want the least, 4", got)
	}
}

func TestSizerFollowsRateTimesLatency(t *testing.T) {
	tests := []struct {
		name     string
		gap      time.Duration
		latency  time.Duration
		servers  int
		min, max int
	}{
		// 3 a second, 300 ms a start, two at once: 0.9 refills owed
		// on average, and 10 owed but once in a thousand (M/M/2).
		{"3/s at 300 ms, 2 at once", 333 * time.Millisecond, 300 * time.Millisecond, 2, 9, 11},
		// 10 a second, 300 ms a start, four at once: 26, past the most.
		{"10/s at 300 ms, 4 at once", 100 * time.Millisecond, 300 * time.Millisecond, 4, 16, 16},
		// 20 a second, 200 ms a start, eight at once: 14.
		{"20/s at 200 ms, 8 at once", 50 * time.Millisecond, 200 * time.Millisecond, 8, 13, 15},
		// More than the starts at once can carry: every container.
		{"10/s at 300 ms, 2 at once", 100 * time.Millisecond, 300 * time.Millisecond, 2, 16, 16},
		// Fast starts need few: the least.
		{"10/s at 20 ms, 2 at once", 100 * time.Millisecond, 20 * time.Millisecond, 2, 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSizer(4, 16, tt.servers)
			startsTaking(s, 100, tt.latency)
			last := arrivals(s, time.Unix(1000, 0), tt.gap, time.Minute)
			got := s.target(last.Add(tt.gap / 2))
			if got < tt.min || got > tt.max {
				t.Errorf("target = %d, want %d..%d (rate %.1f/s, latency %s)", got, tt.min, tt.max, s.rateAt(last), s.latency)
			}
		})
	}
}

func TestSizerGrowsOnABurstAndShrinksWhenIdle(t *testing.T) {
	s := newSizer(1, 12, 2)
	startsTaking(s, 100, 400*time.Millisecond)
	t0 := time.Unix(1000, 0)
	// 40 calls within 2 s.
	last := arrivals(s, t0, 50*time.Millisecond, 2*time.Second)
	grown := s.target(last)
	if grown < 4 {
		t.Errorf("target right after a burst of 40 calls in 2 s = %d, want at least 4", grown)
	}
	prev := grown
	for idle := time.Second; idle <= time.Minute; idle += time.Second {
		got := s.target(last.Add(idle))
		if got > prev {
			t.Fatalf("target grew while idle: %d after %s, %d before", got, idle, prev)
		}
		prev = got
	}
	if prev != 1 {
		t.Errorf("target after a minute idle = %d, want the least, 1", prev)
	}
}

func TestSizerFixedWhenMostIsBelowLeast(t *testing.T) {
	s := newSizer(3, 0, 2)
	startsTaking(s, 10, time.Second)
	last := arrivals(s, time.Unix(1000, 0), 10*time.Millisecond, 10*time.Second)
	if got := s.target(last); got != 3 {
		t.Errorf("target = %d, want 3: a pool without a most keeps its size", got)
	}
}

func TestSizerLatencyFollowsStarts(t *testing.T) {
	s := newSizer(1, 8, 2)
	if s.latency != poolFirstLatency {
		t.Fatalf("first latency = %s, want %s", s.latency, poolFirstLatency)
	}
	startsTaking(s, 40, time.Second)
	if s.latency < 990*time.Millisecond || s.latency > time.Second {
		t.Errorf("latency after 40 starts of 1 s = %s, want about 1 s", s.latency)
	}
}

func TestSizerStartsInFlightKeepUpWithArrivals(t *testing.T) {
	s := newSizer(4, 16, 2)
	startsTaking(s, 100, 600*time.Millisecond)
	last := arrivals(s, time.Unix(1000, 0), 100*time.Millisecond, time.Minute)
	// 10 a second, 600 ms a start: 6 must be under way at once.
	if got := s.inFlight(last.Add(50 * time.Millisecond)); got < 6 || got > 7 {
		t.Errorf("starts in flight = %d, want 6..7", got)
	}
	if got := s.inFlight(last.Add(time.Minute)); got > 1 {
		t.Errorf("starts in flight after a minute idle = %d, want at most 1", got)
	}
}

// TestQueueDepthIsReachedButOnceInAThousand: the pool's size is the least
// number of refills owed that an M/M/c queue reaches less than 0.1 % of
// the time, checked against the queue's distribution found apart, from its
// balance equations over a long truncated chain.
func TestQueueDepthIsReachedButOnceInAThousand(t *testing.T) {
	// atLeast is P(N >= k) for the M/M/c queue of load a.
	atLeast := func(a float64, c, k int) float64 {
		p := []float64{1}
		for n := 1; n < 4000; n++ {
			p = append(p, p[n-1]*a/float64(min(n, c)))
		}
		sum, tail := 0.0, 0.0
		for n, v := range p {
			sum += v
			if n >= k {
				tail += v
			}
		}
		return tail / sum
	}
	if got := queueDepth(0, 2, poolMissRate); got != 0 {
		t.Errorf("depth with no arrivals = %d, want 0", got)
	}
	for _, c := range []int{1, 2, 4, 8} {
		for _, rho := range []float64{0.01, 0.2, 0.45, 0.7, 0.9} {
			a := rho * float64(c)
			k := queueDepth(a, c, poolMissRate)
			if atLeast(a, c, k) >= poolMissRate || (k > 0 && atLeast(a, c, k-1) < poolMissRate) {
				t.Errorf("depth for load %.2f on %d = %d: P(N >= %d) = %.5f, P(N >= %d) = %.5f; want the least k below %v",
					a, c, k, k, atLeast(a, c, k), k-1, atLeast(a, c, k-1), poolMissRate)
			}
		}
	}
	// At 40 % of a 7.5 cycles/s ceiling with 300 ms starts, two at once
	// (0.9 owed on average): 10. The Poisson count of one start's
	// arrivals said 5, and runs waited for starts.
	if got := queueDepth(0.9, 2, poolMissRate); got != 10 {
		t.Errorf("depth for 0.9 on 2 = %d, want 10", got)
	}
	if got := queueDepth(2, 2, poolMissRate); got < 1<<10 {
		t.Errorf("depth for a load the starts cannot carry = %d, want every container", got)
	}
}

// TestSizerRisesWithinASecond: after a minute of nothing, one
// second of arrivals at 5 a second raises the rate to most of it, so the
// pool grows before a burst drains it; a lull then lowers it only over the
// slow window.
func TestSizerRisesWithinASecond(t *testing.T) {
	s := newSizer(4, 16, 2)
	t0 := time.Unix(1000, 0)
	s.arrive(t0)
	last := arrivals(s, t0.Add(time.Minute), 200*time.Millisecond, time.Second)
	if got := s.rateAt(last); got < 3 {
		t.Errorf("rate after 1 s at 5/s = %.2f/s, want ≥ 3 (the rise window)", got)
	}
	slow := decay(s.rate, s.last, last.Add(3*time.Second), s.window)
	if got := s.rateAt(last.Add(3 * time.Second)); got < slow || got <= 0 {
		t.Errorf("rate 3 s into a lull = %.2f/s, below the slow average's %.2f/s", got, slow)
	}
}

func TestSizerHoldsItsPeakBeforeShrinking(t *testing.T) {
	s := newSizer(1, 12, 2)
	startsTaking(s, 100, 400*time.Millisecond)
	t0 := time.Unix(1000, 0)
	last := arrivals(s, t0, 50*time.Millisecond, 2*time.Second) // 40 calls in 2 s
	peak := s.held(last)
	if peak < 4 || peak != s.target(last) {
		t.Fatalf("held right after a burst = %d (target %d), want the target, at least 4", peak, s.target(last))
	}
	// The lull after the burst, sampled once a second as the pool's trim
	// does: what the pool keeps is the largest target of the last
	// poolHoldFor.
	targets := map[time.Duration]int{0: peak}
	fell := false
	for idle := time.Second; idle <= 2*time.Minute; idle += time.Second {
		now := last.Add(idle)
		targets[idle] = s.target(now)
		fell = fell || targets[idle] < peak
		want := 0
		for back := time.Duration(0); back <= poolHoldFor && back <= idle; back += time.Second {
			want = max(want, targets[idle-back])
		}
		if got := s.held(now); got != want {
			t.Fatalf("held %s after the burst = %d, want the largest target of the last %s, %d (target now %d)",
				idle, got, poolHoldFor, want, targets[idle])
		}
	}
	if !fell || s.held(last.Add(2*time.Minute)) != 1 {
		t.Fatalf("the target never fell to the least after the burst: the test proves nothing")
	}
	// A new burst raises it again at once.
	again := arrivals(s, last.Add(3*time.Minute), 50*time.Millisecond, 2*time.Second)
	if got, want := s.held(again), s.target(again); got != want || got < 4 {
		t.Errorf("held after a second burst = %d, want its target %d (at least 4)", got, want)
	}
}

// TestPoolTargetIsItsHeldPeak: the pool refills to, and keeps, the largest
// target of the last poolHoldFor, not the falling rate's target: a Poisson
// lull between bursts otherwise left the next burst fewer idle containers
// (11 of 17 at 60 % of the ceiling on a slow host), and its runs waited
// for starts. No Docker: the pool never starts here.
func TestPoolTargetIsItsHeldPeak(t *testing.T) {
	p := newPool(&Docker{log: slog.New(slog.DiscardHandler)}, 1, 64)
	defer p.cancel()
	startsTaking(p.sizer, 100, 400*time.Millisecond)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	now = arrivals(p.sizer, now, 50*time.Millisecond, 2*time.Second)
	peak := p.targetLocked()
	if peak < 4 {
		t.Fatalf("the pool's target right after a burst = %d, want at least 4", peak)
	}
	for i := range 10 {
		now = now.Add(time.Second)
		if got := p.targetLocked(); got != peak {
			t.Fatalf("%d s into the lull: the pool's target %d (the rate's %d), want the burst's %d", i+1, got, p.sizer.target(now), peak)
		}
	}
	if p.sizer.target(now) >= peak {
		t.Fatalf("10 s into the lull the rate's target is still %d: the test proves nothing", p.sizer.target(now))
	}
	now = now.Add(poolHoldFor + time.Minute)
	if got := p.targetLocked(); got != 1 {
		t.Errorf("a minute past the hold, the pool's target = %d, want its least, 1", got)
	}
}
