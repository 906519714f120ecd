package runtime

import (
	"math"
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
	s := newSizer(4, 16)
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
		min, max int
	}{
		// 10 a second, 300 ms a start: 3 arrive during a start on
		// average, so 3 starting, and 9 or 10 idle, which 3 a start
		// (Poisson) exceed once in a thousand.
		{"10/s at 300 ms", 100 * time.Millisecond, 300 * time.Millisecond, 12, 14},
		// 20 a second, 200 ms: 4 starting, 10 or 11 idle.
		{"20/s at 200 ms", 50 * time.Millisecond, 200 * time.Millisecond, 14, 16},
		// 100 a second: far past the most.
		{"100/s at 300 ms", 10 * time.Millisecond, 300 * time.Millisecond, 16, 16},
		// Fast starts need few: half an arrival a start, none counted
		// starting, 4 idle.
		{"10/s at 50 ms", 100 * time.Millisecond, 50 * time.Millisecond, 4, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSizer(2, 16)
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
	s := newSizer(1, 12)
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
	s := newSizer(3, 0)
	startsTaking(s, 10, time.Second)
	last := arrivals(s, time.Unix(1000, 0), 10*time.Millisecond, 10*time.Second)
	if got := s.target(last); got != 3 {
		t.Errorf("target = %d, want 3: a pool without a most keeps its size", got)
	}
}

func TestSizerLatencyFollowsStarts(t *testing.T) {
	s := newSizer(1, 8)
	if s.latency != poolFirstLatency {
		t.Fatalf("first latency = %s, want %s", s.latency, poolFirstLatency)
	}
	startsTaking(s, 40, time.Second)
	if s.latency < 990*time.Millisecond || s.latency > time.Second {
		t.Errorf("latency after 40 starts of 1 s = %s, want about 1 s", s.latency)
	}
}

func TestSizerStartsInFlightKeepUpWithArrivals(t *testing.T) {
	s := newSizer(4, 16)
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

// TestPoissonDepthCoversBurstsButOnceInAThousand: the idle depth is the
// least that the arrivals during one start (a Poisson count) exceed less
// than 0.1 % of the time, checked against the distribution summed apart.
func TestPoissonDepthCoversBurstsButOnceInAThousand(t *testing.T) {
	// over is P(N > k) for a Poisson N of mean m.
	over := func(m float64, k int) float64 {
		cdf := 0.0
		for i := 0; i <= k; i++ {
			lg, _ := math.Lgamma(float64(i + 1))
			cdf += math.Exp(float64(i)*math.Log(m) - m - lg)
		}
		return 1 - cdf
	}
	if got := poissonDepth(0, poolMissRate); got != 0 {
		t.Errorf("depth with no arrivals = %d, want 0", got)
	}
	for _, m := range []float64{0.05, 0.5, 0.8, 1, 1.2, 2, 3, 6} {
		k := poissonDepth(m, poolMissRate)
		if over(m, k) >= poolMissRate || (k > 0 && over(m, k-1) < poolMissRate) {
			t.Errorf("depth for %.2f arrivals a start = %d: P(N > %d) = %.5f, P(N > %d) = %.5f; want the least k below %v",
				m, k, k, over(m, k), k-1, over(m, k-1), poolMissRate)
		}
	}
	// At 40 % of a 7 cycles/s ceiling with 300 ms starts (0.84 a start),
	// 5 idle; 4 would be exceeded 0.11 % of the time.
	if got := poissonDepth(0.84, poolMissRate); got != 5 {
		t.Errorf("depth for 0.84 arrivals a start = %d, want 5", got)
	}
}

// TestSizerRisesWithinASecond (issue 28): after a minute of nothing, one
// second of arrivals at 5 a second raises the rate to most of it, so the
// pool grows before a burst drains it; a lull then lowers it only over the
// slow window.
func TestSizerRisesWithinASecond(t *testing.T) {
	s := newSizer(4, 16)
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
