package payments

import (
	"sync"
	"time"
)

// charges counts the charges between their reservation and the end of their
// settlement or release, so that closing the gate waits for them instead
// of closing the ledger and the chain client under a settlement.
type charges struct {
	mu      sync.Mutex
	n       int
	closing bool
	idle    chan struct{} // closed when n drops to 0 while closing
}

// add counts one more charge in flight and returns the function that ends
// it (safe to call more than once). It reports false, counting nothing,
// once close has begun.
func (f *charges) add() (done func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return nil, false
	}
	f.n++
	var once sync.Once
	return func() { once.Do(f.end) }, true
}

func (f *charges) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// close refuses new charges and waits up to bound for those in flight to
// end. It returns how many were still in flight when it gave up.
func (f *charges) close(bound time.Duration) int {
	f.mu.Lock()
	f.closing = true
	if f.n == 0 {
		f.mu.Unlock()
		return 0
	}
	idle := make(chan struct{})
	f.idle = idle
	f.mu.Unlock()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-idle:
		return 0
	case <-timer.C:
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.n
	}
}
