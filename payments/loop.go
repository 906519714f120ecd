package payments

import (
	"context"
	"time"
)

// loop is a background pass run at a fixed interval: the pending resolver
// and the replica keep-alive.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startLoop runs pass every interval, the first after one interval, until
// Close. pass's context ends at Close.
func startLoop(every time.Duration, pass func(ctx context.Context)) *loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(every)
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

// Close stops the loop and waits for a pass under way to end.
func (l *loop) Close() error {
	l.cancel()
	<-l.done
	return nil
}
