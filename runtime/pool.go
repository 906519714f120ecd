package runtime

import (
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"sandboxd"
)

// poolJob is the job label of a container started for the pool, before any
// job is known.
const poolJob = "pool"

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

// trimEvery is how often the pool compares what it holds with its target
// and retires idle containers beyond it.
const trimEvery = time.Second

// The backoff of the refill after a failed start or a warm container found
// dead: doubling from the least to the most.
const (
	refillBackoffMin = 100 * time.Millisecond
	refillBackoffMax = 5 * time.Second
)

// pool keeps containers started ahead of the jobs, each with its runner
// waiting for a program. A run takes one and the pool starts another in the
// background; a used container is never given back. The pool holds as many
// containers (idle and starting) as the largest target its sizer gave in
// the last poolHoldFor: the least configured while calls are sparse, more,
// up to the most configured, while they come fast. A fall of the rate
// between bursts neither stops its refills nor retires what the next burst
// would take; it retires idle ones beyond that, drops those found dead,
// backs off while starts fail, and removes all of them at close.
type pool struct {
	d   *Docker
	log *slog.Logger
	// now is the clock of the sizer.
	now func() time.Time
	// ctx bounds the starts; close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// hits count takes served by an idle container at once, waits those
	// served by one that was starting, misses those not served.
	hits, waits, misses atomic.Int64
	// starts counts the containers the pool started, retires the idle
	// ones it removed unused while open, beyond what it keeps (trim,
	// giveBack): the churn of a pool that shrinks too soon.
	starts, retires atomic.Int64

	mu       sync.Mutex
	sizer    *sizer
	started  bool
	closed   bool
	idle     []*box // ready, oldest first
	starting int
	waiters  []chan *box // runs waiting for the next ready box, first first
	failures int         // failed starts and deaths since the last good start
	retry    *time.Timer // set while backing off
	// work counts the start and watch goroutines; it is only added to
	// with mu held and the pool open, so close can wait for it.
	work sync.WaitGroup

	// budget bounds the warm containers of every environment together by
	// memory (poolmem.go); nil bounds nothing. measured is the resident
	// size of a warm container (0 until measured), measuredAt when it was
	// measured, measuring whether a measurement is under way.
	budget     *memoryBudget
	measured   atomic.Int64
	measuredAt time.Time
	measuring  bool
}

// newPool returns a pool of least to most containers for d (most below
// least: least, always); it starts filling at the first take or start.
func newPool(d *Docker, least, most int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{d: d, log: d.log.With("job", poolJob), now: time.Now, ctx: ctx, cancel: cancel,
		sizer: newSizer(least, most, fillConcurrencyMost)}
}

// targetLocked is how many containers the pool holds, idle and starting:
// the largest target of the last poolHoldFor (sizer.held). It refills to
// it and retires idle containers only beyond it.
func (p *pool) targetLocked() int {
	return p.sizer.held(p.now())
}

// start begins filling the pool, once.
func (p *pool) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.startLocked()
}

// startLocked is start with p.mu held.
func (p *pool) startLocked() {
	if !p.started {
		p.started = true
		p.fillLocked()
		if p.sizer.most > p.sizer.least {
			p.work.Add(1)
			go p.trimLoop()
		}
	}
}

// take returns a warm box, or the next one to be ready when none is, with
// ok true; ok is false when the run should start its own: every box
// starting is promised to an earlier run already, or the pool is closed or
// backing off after failures (a start that fails also sends the runs
// waiting on their own). It returns ctx's error when ctx ends first.
//
// A take served records its time in ctx's phases (sandboxd.PhaseTake, or
// PhaseTakeWait when it waited for a start in flight); one not served
// records nothing, as the caller's own start counts it.
func (p *pool) take(ctx context.Context) (b *box, ok bool, err error) {
	began := time.Now()
	p.mu.Lock()
	p.startLocked()
	p.sizer.arrive(p.now())
	if ctx.Err() != nil {
		p.mu.Unlock()
		return nil, false, ctxError(ctx, "runtime.pool")
	}
	for len(p.idle) > 0 {
		b = p.idle[0]
		p.idle = slices.Delete(p.idle, 0, 1)
		close(b.left)
		p.accountLocked()
		if b.dead() {
			p.discardLocked(b)
			continue
		}
		p.hits.Add(1)
		p.refillLater()
		p.mu.Unlock()
		sandboxd.PhasesFrom(ctx).Since(sandboxd.PhaseTake, began)
		return b, true, nil
	}
	// Wait for a box that is starting and not promised to an earlier run;
	// when there is none (full, backing off, closed), starting one's own is
	// no slower, and keeps the engine as busy as it can be.
	p.fillLocked()
	if p.closed || len(p.waiters) >= p.starting {
		p.misses.Add(1)
		p.mu.Unlock()
		return nil, false, nil
	}
	w := make(chan *box, 1)
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()
	select {
	case b := <-w:
		if b == nil { // the start failed: the run starts its own
			p.misses.Add(1)
			return nil, false, nil
		}
		p.waits.Add(1)
		sandboxd.PhasesFrom(ctx).Since(sandboxd.PhaseTakeWait, began)
		return b, true, nil
	case <-ctx.Done():
		p.mu.Lock()
		p.waiters = slices.DeleteFunc(p.waiters, func(x chan *box) bool { return x == w })
		p.mu.Unlock()
		select {
		case b := <-w:
			if b != nil {
				p.giveBack(b)
			}
		default:
		}
		return nil, false, ctxError(ctx, "runtime.pool")
	}
}

// takeIdle returns an idle warm box, or nil when none is idle: a session
// takes one only when it is ready, and otherwise starts its own rather than
// take one a run waits for. The replacement starts as for a run's take
// (after refillDelay, so its start does not compete with the session's
// switch), and the box no longer counts in the pool's memory budget (the
// sessions' own budget counts it).
func (p *pool) takeIdle() *box {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.startLocked()
	for len(p.idle) > 0 {
		b := p.idle[0]
		p.idle = slices.Delete(p.idle, 0, 1)
		close(b.left)
		p.accountLocked()
		if b.dead() {
			p.discardLocked(b)
			continue
		}
		p.refillLater()
		return b
	}
	return nil
}

// giveBack returns an unused box that a waiter gave up on.
func (p *pool) giveBack(b *box) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle)+p.starting >= p.targetLocked() {
		if !p.closed {
			p.retires.Add(1)
		}
		p.d.retire(b)
		return
	}
	p.offerLocked(b)
}

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

// trimLoop retires, every trimEvery until close, the idle containers
// beyond what the pool keeps: it shrinks back once calls have been sparse
// for poolHoldFor.
func (p *pool) trimLoop() {
	defer p.work.Done()
	tick := time.NewTicker(trimEvery)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
			p.trim()
		}
	}
}

// trim retires the oldest idle containers beyond what the pool keeps: the
// largest target of the last poolHoldFor.
func (p *pool) trim() {
	p.mu.Lock()
	defer p.mu.Unlock()
	excess := len(p.idle) + p.starting - p.targetLocked()
	for ; excess > 0 && len(p.idle) > 0; excess-- {
		b := p.idle[0]
		p.idle = slices.Delete(p.idle, 0, 1)
		close(b.left)
		p.retires.Add(1)
		p.d.retire(b)
	}
	p.accountLocked()
}

// watch drops an idle box whose container dies (docker kill, a daemon
// restart), so no run is handed a dead one.
func (p *pool) watch(b *box, left chan struct{}) {
	defer p.work.Done()
	select {
	case <-left:
		return
	case <-b.exited:
	case <-b.s.done:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.idle, b)
	if i < 0 {
		return // taken meanwhile
	}
	p.idle = slices.Delete(p.idle, i, i+1)
	close(left)
	p.accountLocked()
	p.discardLocked(b)
}

// discardLocked removes a box found dead and backs the refill off: a
// container that dies while waiting may be a sign of a sick engine.
func (p *pool) discardLocked(b *box) {
	b.log.Warn("a warm container died before use; discarding it", "exit", b.exitState())
	p.d.retire(b)
	p.failLocked(nil)
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

// close stops filling, wakes the waiting runs, removes the idle containers
// (in the background, counted by d.bg), and waits until ctx ends for the
// starts under way to give up.
func (p *pool) close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.log.Info("pool closing", "hits", p.hits.Load(), "waits", p.waits.Load(), "misses", p.misses.Load(),
		"started", p.starts.Load(), "retired", p.retires.Load(), "idle", len(p.idle), "starting", p.starting)
	idle := p.idle
	p.idle = nil
	for _, b := range idle {
		close(b.left)
		p.d.retire(b)
	}
	for _, w := range p.waiters {
		w <- nil
	}
	p.waiters = nil
	if p.retry != nil {
		p.retry.Stop()
		p.retry = nil
	}
	p.budget.set(p, 0, 0)
	p.mu.Unlock()
	p.cancel()
	done := make(chan struct{})
	go func() {
		p.work.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runtime: waiting for the pool's starts: %w", ctx.Err())
	}
}
