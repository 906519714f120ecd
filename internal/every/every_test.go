package every

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoopPassesAndCloses checks that the passes come after an interval,
// that Close ends the pass's context and waits for a pass under way, and
// that no pass begins after Close.
func TestLoopPassesAndCloses(t *testing.T) {
	var passes atomic.Int64
	began := time.Now()
	first := make(chan time.Duration, 1)
	ended := make(chan struct{})
	l := Start(20*time.Millisecond, func(ctx context.Context) {
		if passes.Add(1) == 1 {
			first <- time.Since(began)
		}
		<-ctx.Done()
		close(ended)
	})
	if d := <-first; d < 20*time.Millisecond {
		t.Fatalf("the first pass began %v after Start, before one interval", d)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Close returned before the pass under way ended")
	}
	time.Sleep(50 * time.Millisecond)
	if n := passes.Load(); n != 1 {
		t.Fatalf("%d passes, want 1 (none after Close)", n)
	}
}

// TestNilLoopCloses checks that closing a nil Loop is a no-op.
func TestNilLoopCloses(t *testing.T) {
	var l *Loop
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
