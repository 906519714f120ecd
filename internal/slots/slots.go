// Package slots bounds how many runs happen at once: a request waits a short
// while for a free slot, then is told the service is busy.
package slots

import (
	"context"
	"sync"
	"time"

	"sandboxd"
)

// Slots is a counting semaphore that implements sandboxd.Admitter.
type Slots struct {
	free chan struct{}
	wait time.Duration
}

var _ sandboxd.Admitter = (*Slots)(nil)

// New returns Slots with n places; a request waits at most wait for one.
func New(n int, wait time.Duration) *Slots {
	s := &Slots{free: make(chan struct{}, n), wait: wait}
	for i := 0; i < n; i++ {
		s.free <- struct{}{}
	}
	return s
}

// Admit takes a slot, waiting up to the queue time. It returns a CodeBusy
// error when none freed in time, or ctx's error when ctx ended first. The
// returned release function is safe to call more than once.
func (s *Slots) Admit(ctx context.Context) (func(), error) {
	select {
	case <-s.free:
		return s.releaser(), nil
	default:
	}
	if s.wait <= 0 {
		return nil, s.busy()
	}
	timer := time.NewTimer(s.wait)
	defer timer.Stop()
	select {
	case <-s.free:
		return s.releaser(), nil
	case <-timer.C:
		return nil, s.busy()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// InUse reports how many slots are taken.
func (s *Slots) InUse() int { return cap(s.free) - len(s.free) }

func (s *Slots) releaser() func() {
	var once sync.Once
	return func() { once.Do(func() { s.free <- struct{}{} }) }
}

func (s *Slots) busy() error {
	return &sandboxd.Error{
		Code:       sandboxd.CodeBusy,
		Op:         "slots.admit",
		Message:    "all sandboxes are busy; retry after the time in Retry-After",
		RetryAfter: time.Second,
	}
}
