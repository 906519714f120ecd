package runtime

import (
	"math"
	"time"
)

// The sizing of the warm pool: enough containers, idle and starting, that
// the runs arriving at random (Poisson) find one idle but once in a
// thousand, between the configured least and most. Every run taken leaves
// a refill owed, and at most the cores' worth of refills start at once
// (fillConcurrencyMost), each taking the measured start latency: the refills
// owed are the customers of an M/M/c queue with c the starts at once. A run
// finds the pool empty when the refills owed reach the pool's size, so the
// size is that queue's length that is reached but once in a thousand
// (queueDepth). A Poisson count of the arrivals during one start, the
// earlier model, leaves out that a burst's refills queue behind each other
// for the few start slots: it sized 5 at 40 % of the ceiling on two cores,
// where runs still waited for starts, and 10 took the waits away
// (BENCHMARKS.md).
const (
	// poolMissRate is how often a run may find the pool empty: it then
	// waits for a start in flight, the slowest 1 % of the answers under
	// load.
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
	// poolHoldFor is how long the pool keeps, and refills to, the largest
	// target it had before it retires the idle containers beyond a lower
	// one. Under a steady Poisson load the rate's averages rise and fall
	// with each burst. A pool that retired at every fall started the same
	// containers again at the next burst: at 60 % of the ceiling on a slow
	// host, 314 containers started for 240 answers, and each start and
	// removal costs the host as much CPU as an answer. One that refilled
	// only to the fallen target met the next burst with 11 idle of 17, and
	// its runs waited for starts (BENCHMARKS.md). An idle
	// container costs only its memory (~6 MiB).
	poolHoldFor = 30 * time.Second
)

// sizer follows the recent arrival rate of runs and the start latency of
// containers, and turns them into the pool's target size. It is not safe
// for concurrent use (the pool's mutex guards it); times come from the
// caller, so tests drive it with a clock of their own.
type sizer struct {
	least, most int
	// servers is how many starts run at once at most.
	servers int
	window  time.Duration
	// rate and fast are the arrival rate (a second) at last, decaying
	// since, over window and over poolRiseWindow.
	rate, fast float64
	last       time.Time
	// latency is the moving average of the start latency.
	latency time.Duration
	// peaks are the targets sampled in the last poolHoldFor that no later
	// sample is as large as, oldest first: their first is the largest
	// (held).
	peaks []targetAt
}

// targetAt is a target the sizer gave, and when.
type targetAt struct {
	at     time.Time
	target int
}

// newSizer returns a sizer between least and most containers (most below
// least means a fixed size), for a pool that runs up to servers starts at
// once.
func newSizer(least, most, servers int) *sizer {
	return &sizer{least: least, most: max(least, most), servers: max(servers, 1), window: poolRateWindow,
		latency: poolFirstLatency}
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
// at now, between least and most: the refills owed that the arrivals at
// the current rate reach less than poolMissRate of the time (queueDepth).
func (s *sizer) target(now time.Time) int {
	want := queueDepth(s.rateAt(now)*s.latency.Seconds(), s.servers, poolMissRate)
	return min(max(want, s.least), s.most)
}

// held is how many containers the pool keeps before it retires idle ones:
// the largest target of the last poolHoldFor, as sampled by the calls of
// held (the pool's trim asks once a second). It is at least target(now).
func (s *sizer) held(now time.Time) int {
	t := s.target(now)
	for len(s.peaks) > 0 && s.peaks[len(s.peaks)-1].target <= t {
		s.peaks = s.peaks[:len(s.peaks)-1]
	}
	s.peaks = append(s.peaks, targetAt{now, t})
	old := 0
	for now.Sub(s.peaks[old].at) > poolHoldFor {
		old++
	}
	s.peaks = s.peaks[old:]
	return s.peaks[0].target
}

// queueDepth is the least k such that an M/M/c queue of c servers and an
// offered load of a (arrival rate × service time) holds k or more with a
// probability below miss; a load the servers cannot carry (a ≥ c) needs
// every container it may have, and is maxDepth.
func queueDepth(a float64, c int, miss float64) int {
	const maxDepth = 1 << 16
	if a <= 0 {
		return 0
	}
	rho := a / float64(c)
	if rho >= 1 {
		return maxDepth
	}
	// terms[n] is P(N = n) / P(N = 0), for n < c; from c on they fall by
	// rho a customer.
	term, sum := 1.0, 1.0
	terms := []float64{1}
	for n := 1; n < c; n++ {
		term *= a / float64(n)
		terms = append(terms, term)
		sum += term
	}
	atC := term * a / float64(c) // P(N = c) / P(N = 0)
	sum += atC / (1 - rho)
	// P(N >= k) for k >= c is atC/(1-rho) * rho^(k-c) / sum.
	tail := 1.0
	for k := 0; k < c; k++ {
		if tail < miss {
			return k
		}
		tail -= terms[k] / sum
	}
	for k := c; k < maxDepth; k++ {
		if tail < miss {
			return k
		}
		tail *= rho
	}
	return maxDepth
}
