package runtime

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"sandboxd"
)

// poolJob is the job label of a container started for the pool, before any
// job is known.
const poolJob = "pool"

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
