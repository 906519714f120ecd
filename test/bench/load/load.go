// Package load holds the closed loop the bench programs drive their targets
// with: the bench's own phases and engine ceiling, and fleetload.
package load

import (
	"context"
	"sync"
	"time"
)

// Closed keeps conc workers calling call, each again as soon as its last
// call returned, until window has passed or ctx ends, and waits for the
// last call. A call that returns false stops its worker.
func Closed(ctx context.Context, conc int, window time.Duration, call func() bool) {
	deadline := time.Now().Add(window)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if !call() {
					return
				}
			}
		})
	}
	wg.Wait()
}
