package ingress

import (
	"context"
	"sync"
	"time"

	"sandboxd"
)

// Hold is a request's room in the body budget. Its methods are safe to
// call more than once and from any goroutine.
type Hold struct {
	budget *byteBudget
	mu     sync.Mutex
	n      int64
}

// grow takes n more bytes, without waiting when they fit now, else within
// BodyWait (CodeBusy after it); a caller gone is ctx's error. It returns
// how long it waited.
func (h *Hold) grow(ctx context.Context, n int64) (time.Duration, error) {
	if !h.budget.tryAcquire(n) {
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, BodyWait)
		err := h.budget.acquire(wctx, n)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "httpapi.read", RetryAfter: bodyRetry,
				Message: "too many large requests are being read at once; retry after the time in Retry-After"}
		}
		h.add(n)
		return time.Since(start), nil
	}
	h.add(n)
	return 0, nil
}

// add counts n more bytes as held.
func (h *Hold) add(n int64) {
	h.mu.Lock()
	h.n += n
	h.mu.Unlock()
}

// keep gives back all but n of the bytes held.
func (h *Hold) keep(n int64) {
	h.mu.Lock()
	back := h.n - n
	if back > 0 {
		h.n = n
	}
	h.mu.Unlock()
	h.budget.release(back)
}

// Release gives back every byte held; nil holds none.
func (h *Hold) Release() {
	if h != nil {
		h.keep(0)
	}
}

// holdKey is the context key of a request's room in the body budget.
type holdKey struct{}

// WithHold returns ctx carrying hold, for Release.
func WithHold(ctx context.Context, hold *Hold) context.Context {
	return context.WithValue(ctx, holdKey{}, hold)
}

// Release gives back the room ctx's request holds in the body budget,
// if any: its run is admitted, and what it keeps from then on is bounded
// by the admission of runs.
func Release(ctx context.Context) {
	if hold, ok := ctx.Value(holdKey{}).(*Hold); ok {
		hold.Release()
	}
}
