package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// trimEvery is how often the pool compares what it holds with its target
// and retires idle containers beyond it.
const trimEvery = time.Second

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
