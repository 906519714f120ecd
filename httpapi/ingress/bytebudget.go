package ingress

import (
	"context"
	"sync"
)

// byteBudget is a count of bytes shared by the requests being read and
// the jobs waiting for a sandbox. Unlike a FIFO semaphore it serves no
// queue: a waiter takes room as soon as its own request fits, so one that
// asks for little never waits behind one that asks for much.
type byteBudget struct {
	mu   sync.Mutex
	size int64
	used int64
	// freed is closed, and replaced, each time room is given back.
	freed chan struct{}
}

// newByteBudget returns an empty budget of size bytes.
func newByteBudget(size int64) *byteBudget {
	return &byteBudget{size: size, freed: make(chan struct{})}
}

// tryAcquire takes n bytes when they fit now, and reports whether it did.
func (b *byteBudget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.size {
		return false
	}
	b.used += n
	return true
}

// acquire takes n bytes, waiting for room until ctx is done (its error).
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.used+n <= b.size {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives n bytes back and wakes every waiter: each takes room if
// its own request now fits.
func (b *byteBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}

// inUse returns the bytes taken.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
