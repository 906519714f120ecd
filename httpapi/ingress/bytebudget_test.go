package ingress

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestSmallRequestNeverWaitsBehindALargeOne: with the budget all but full
// and a large request waiting for room, a small one takes the room that
// is left at once. A FIFO semaphore would queue it behind the large one.
func TestSmallRequestNeverWaitsBehindALargeOne(t *testing.T) {
	b := newByteBudget(100 << 10)
	if !b.tryAcquire(90 << 10) {
		t.Fatal("the budget refused its first taker")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { _ = b.acquire(ctx, 64<<10) })
	time.Sleep(50 * time.Millisecond) // the large one waits
	small, err := make(chan error, 1), error(nil)
	go func() { small <- b.acquire(context.Background(), 19) }()
	select {
	case err = <-small:
	case <-time.After(BodyWait):
		t.Fatal("a 19-byte request waited behind a 64 KiB one")
	}
	if err != nil || !b.tryAcquire(1) {
		t.Errorf("small: %v; the budget has room left: %v", err, b.inUse())
	}
	b.release(90<<10 + 20)
	wg.Wait() // the large one gets its room once it is free
	if n := b.inUse(); n != 64<<10 {
		t.Errorf("in use %d, want the large one's %d", n, 64<<10)
	}
}
