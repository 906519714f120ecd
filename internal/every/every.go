// Package every runs a pass in the background at a fixed interval: the
// payment gate's pending resolver and keep-alive, and a fleet replica's
// session registry.
package every

import (
	"context"
	"time"
)

// Loop is a pass run at a fixed interval until Close.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs pass every interval, the first after one interval, until
// Close. pass's context ends at Close.
func Start(interval time.Duration, pass func(ctx context.Context)) *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pass(ctx)
		}
	}()
	return l
}

// Close stops the loop and waits for a pass under way to end. A nil Loop
// is closed already.
func (l *Loop) Close() error {
	if l == nil {
		return nil
	}
	l.cancel()
	<-l.done
	return nil
}
