package runtime

import (
	"math"
	"time"
)

// The sizing of the warm pool: enough containers starting to keep up with
// the arrivals, and enough idle that the runs arriving at random (Poisson)
// during one start find one idle but once in a thousand, between the
// configured least and most.
const (
	// poolMissRate is how often the arrivals during one start may exceed
	// the idle depth: a run that finds the pool empty waits for a start
	// in flight, the slowest 1 % of the answers under load (issue 28).
	poolMissRate = 0.001
	// poolRateWindow is the time constant of the arrival rate's moving
	// average: a burst raises the pool within a second or two, and an idle
	// pool is back at its least within a few windows.
	poolRateWindow = 5 * time.Second
	// poolRiseWindow is the time constant of a second, faster average,
	// which the rate follows when it is the higher: a rise in the arrivals
	// grows the pool within a second.
	poolRiseWindow = time.Second
	// poolFirstLatency is the start latency assumed before one is measured.
	poolFirstLatency = 200 * time.Millisecond
	// latencyWeight is the weight of a new start in the latency's moving
	// average.
	latencyWeight = 0.2
)

// sizer follows the recent arrival rate of runs and the start latency of
// containers, and turns them into the pool's target size. It is not safe
// for concurrent use (the pool's mutex guards it); times come from the
// caller, so tests drive it with a clock of their own.
type sizer struct {
	least, most int
	window      time.Duration
	// rate and fast are the arrival rate (a second) at last, decaying
	// since, over window and over poolRiseWindow.
	rate, fast float64
	last       time.Time
	// latency is the moving average of the start latency.
	latency time.Duration
}

// newSizer returns a sizer between least and most containers (most below
// least means a fixed size).
func newSizer(least, most int) *sizer {
	return &sizer{least: least, most: max(least, most), window: poolRateWindow, latency: poolFirstLatency}
}

// arrive counts a run arriving at now.
func (s *sizer) arrive(now time.Time) {
	s.rate = decay(s.rate, s.last, now, s.window) + 1/s.window.Seconds()
	s.fast = decay(s.fast, s.last, now, poolRiseWindow) + 1/poolRiseWindow.Seconds()
	s.last = now
}

// rateAt is the arrival rate (a second) as of now: the faster of the two
// averages, so that a burst raises it within a second and a lull lowers
// it only over the slow window.
func (s *sizer) rateAt(now time.Time) float64 {
	if s.last.IsZero() {
		return 0
	}
	return max(decay(s.rate, s.last, now, s.window), decay(s.fast, s.last, now, poolRiseWindow))
}

// decay is an exponential moving average of rate, of time constant
// window, as it was at last, decayed to now.
func decay(rate float64, last, now time.Time, window time.Duration) float64 {
	dt := now.Sub(last).Seconds()
	if last.IsZero() || dt <= 0 {
		return rate
	}
	return rate * math.Exp(-dt/window.Seconds())
}

// started records how long a container took to start.
func (s *sizer) started(latency time.Duration) {
	s.latency += time.Duration(latencyWeight * float64(latency-s.latency))
}

// inFlight is how many starts must be under way at once to keep up with
// the arrivals (Little's law: rate × latency), rounded up.
func (s *sizer) inFlight(now time.Time) int {
	return int(math.Ceil(s.rateAt(now) * s.latency.Seconds()))
}

// target is how many containers the pool should hold (idle and starting)
// at now, between least and most: an idle depth the arrivals during one
// start exceed less than poolMissRate of the time (poissonDepth), and the
// starts in flight on average that replace the taken (the arrivals during
// one start, rounded down: below one, the idle depth covers them; rounded
// up, a pool that has idled would keep one more than its least for good).
func (s *sizer) target(now time.Time) int {
	expected := s.rateAt(now) * s.latency.Seconds()
	want := math.Floor(expected) + float64(poissonDepth(expected, poolMissRate))
	return int(min(max(want, float64(s.least)), float64(s.most)))
}

// poissonDepth is the least k such that a Poisson count of mean expected
// exceeds k with a probability below miss: the idle containers that cover
// the arrivals during one start but that often.
func poissonDepth(expected, miss float64) int {
	if expected <= 0 {
		return 0
	}
	p := math.Exp(-expected) // P(N = k)
	cdf, k := p, 0
	for 1-cdf >= miss && k < 1000 {
		k++
		p *= expected / float64(k)
		cdf += p
	}
	return k
}
