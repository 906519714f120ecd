package runtime

import (
	goruntime "runtime"
	"slices"
	"time"
)

// How many containers the pool starts at once: as many as keep up with the
// arrivals (Little's law), at least fillConcurrency, and never more than
// the cores, even while runs wait. A start keeps a core busy (dockerd,
// containerd, runc, the runner's Python); more of them at once than the
// cores crowd out the programs already handed over, whose answers then
// wait (with up to 8 at once on 2 cores, the host's run queue reached 18
// and every answer in flight waited hundreds of milliseconds). A run that finds
// every start promised starts its own, bounded by the admission slots.
const fillConcurrency = 2

// fillConcurrencyMost is the most starts at once: the cores (a variable for
// the tests).
var fillConcurrencyMost = max(fillConcurrency, goruntime.NumCPU())

// The backoff of the refill after a failed start or a warm container found
// dead: doubling from the least to the most.
const (
	refillBackoffMin = 100 * time.Millisecond
	refillBackoffMax = 5 * time.Second
)

// refillDelay is how long after a take its replacement starts, while no
// run waits: starting a container keeps both cores busy for a while (dockerd,
// containerd, runc), and a short program is done in less (a hello world in
// ~3 ms). Measured here, it lowers the median answer by 1 to 2 ms.
const refillDelay = 30 * time.Millisecond

// refillLater fills the pool after refillDelay. Called with p.mu held.
func (p *pool) refillLater() {
	time.AfterFunc(refillDelay, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.fillLocked()
	})
}

// fillLocked starts containers until the pool is full or enough are
// starting, unless it is closed or backing off.
func (p *pool) fillLocked() {
	// Enough starts at once to keep up with the arrivals, at least a few,
	// never more than the cores.
	limit := min(max(fillConcurrency, p.sizer.inFlight(p.now())+1), fillConcurrencyMost)
	if !p.started || p.closed || p.retry != nil {
		return
	}
	have := len(p.idle) + p.starting
	want := min(p.targetLocked()-have, limit-p.starting)
	for range p.budget.grow(p, have, want, p.size()) {
		p.starting++
		p.work.Add(1)
		go p.warm()
	}
}

// warm starts one container and offers it.
func (p *pool) warm() {
	defer p.work.Done()
	begin := time.Now()
	b, err := p.d.prepare(p.ctx, poolJob, p.log)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting--
	defer p.accountLocked()
	if err == nil {
		p.sizer.started(time.Since(begin))
		p.starts.Add(1)
	}
	switch {
	case err != nil && p.closed:
	case err != nil:
		p.failLocked(err)
		// The runs waiting would wait out the backoff: they start their
		// own instead (and report the failure if it persists).
		for _, w := range p.waiters {
			w <- nil
		}
		p.waiters = nil
	default:
		if p.failures > 0 {
			p.log.Info("warm containers start again", "after_failures", p.failures)
		}
		p.failures = 0
		p.offerLocked(b)
		p.fillLocked()
	}
}

// offerLocked hands a ready box to the first waiting run, or keeps it idle
// and watched.
func (p *pool) offerLocked(b *box) {
	if p.closed {
		p.d.retire(b)
		return
	}
	if len(p.waiters) > 0 {
		w := p.waiters[0]
		p.waiters = slices.Delete(p.waiters, 0, 1)
		w <- b
		return
	}
	b.left = make(chan struct{})
	p.idle = append(p.idle, b)
	p.work.Add(1)
	go p.watch(b, b.left)
	p.measureLaterLocked(b)
}

// failLocked counts a failure and schedules the next start after a backoff.
func (p *pool) failLocked(err error) {
	p.failures++
	delay := min(refillBackoffMin<<min(p.failures-1, 10), refillBackoffMax)
	if err != nil {
		if p.failures == 1 {
			p.log.Warn("could not start a warm container; retrying with backoff", "err", err, "retry_in", delay)
		} else {
			p.log.Debug("could not start a warm container", "err", err, "failures", p.failures, "retry_in", delay)
		}
	}
	if p.retry == nil {
		p.retry = time.AfterFunc(delay, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.retry = nil
			p.fillLocked()
		})
	}
}

// kick ends a backoff at once, when the engine is known to work again.
func (p *pool) kick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retry != nil && p.retry.Stop() {
		p.retry = nil
		p.fillLocked()
	}
}
