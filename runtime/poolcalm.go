package runtime

import "time"

// removalHold bounds how long a removal waits for the runs waiting on a
// warm container to be served: a removal keeps dockerd, containerd and runc
// busy for as long as a start, and while a run waits, the start it waits
// for should have the engine (issue 28). A removal held that long goes
// ahead anyway, so the sandbox slots it holds come back.
const removalHold = 2 * time.Second

// setWaitersLocked sets the runs waiting for a ready box, and with them
// whether the pool is calm: calmC is made when the first run waits and
// closed when the last is served or gives up.
func (p *pool) setWaitersLocked(ws []chan *box) {
	p.waiters = ws
	switch {
	case len(ws) > 0 && p.calmC == nil:
		p.calmC = make(chan struct{})
	case len(ws) == 0 && p.calmC != nil:
		close(p.calmC)
		p.calmC = nil
	}
}

// calm returns a channel closed once no run waits for a warm container
// (already closed when none does); nil for no pool.
func (p *pool) calm() <-chan struct{} {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calmC == nil {
		return closedChan
	}
	return p.calmC
}

// closedChan is a channel that is always closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// holdRemoval waits, before a removal, until no run waits for a warm
// container, or removalHold has passed.
func (d *Docker) holdRemoval() {
	calm := d.pool.calm()
	if calm == nil {
		return
	}
	select {
	case <-calm:
		return
	default:
	}
	t := time.NewTimer(removalHold)
	defer t.Stop()
	select {
	case <-calm:
	case <-t.C:
	}
}
