package httpapi

import (
	"context"
	"sync"
	"time"
)

// healthTTL is how long a health answer, good or bad, is reused: a check
// costs several Engine API calls, and a flood of GET /v1/health must not
// become a flood of calls to the daemon.
const healthTTL = time.Second

// healthCache shares one runner health check among the requests of a
// healthTTL window, and one check in flight among the requests waiting for
// it. Its zero value is ready.
type healthCache struct {
	mu   sync.Mutex
	at   time.Time     // when the last answer came; zero before the first
	err  error         // the last answer
	done chan struct{} // closed when the check in flight ends; nil when none
}

// check returns the last answer while it is fresh, else waits for the
// check in flight or runs probe. The probe does not end when the request
// that started it does (others may wait for it); healthTimeout bounds it.
func (c *healthCache) check(ctx context.Context, probe func(context.Context) error) error {
	for {
		c.mu.Lock()
		if !c.at.IsZero() && time.Since(c.at) < healthTTL {
			err := c.err
			c.mu.Unlock()
			return err
		}
		if done := c.done; done != nil {
			c.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done := make(chan struct{})
		c.done = done
		c.mu.Unlock()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthTimeout)
		err := probe(pctx)
		cancel()
		c.mu.Lock()
		c.at, c.err, c.done = time.Now(), err, nil
		c.mu.Unlock()
		close(done)
		return err
	}
}
