package runtime

import (
	"testing"
	"time"
)

// TestRemovalWaitsForTheWaitingRuns: while a run waits for a warm
// container the pool is not calm, so a removal holds back; once the last
// waiter is served it goes ahead at once, and without a pool never waits.
func TestRemovalWaitsForTheWaitingRuns(t *testing.T) {
	p := &pool{}
	if !closed(p.calm()) {
		t.Fatal("a pool nobody waits on is not calm")
	}
	w1, w2 := make(chan *box, 1), make(chan *box, 1)
	p.setWaitersLocked([]chan *box{w1, w2})
	calm := p.calm()
	if closed(calm) {
		t.Fatal("calm while two runs wait")
	}
	d := &Docker{pool: p}
	held := make(chan time.Duration)
	go func() {
		began := time.Now()
		d.holdRemoval()
		held <- time.Since(began)
	}()
	p.setWaitersLocked(p.waiters[1:])
	if closed(calm) {
		t.Fatal("calm while a run still waits")
	}
	time.Sleep(50 * time.Millisecond)
	p.setWaitersLocked(nil)
	if !closed(calm) {
		t.Fatal("not calm once the last waiter left")
	}
	if got := <-held; got < 50*time.Millisecond || got > removalHold {
		t.Errorf("the removal was held %v, want from the first wait to the last waiter's end", got)
	}
	began := time.Now()
	(&Docker{}).holdRemoval()
	if time.Since(began) > 10*time.Millisecond {
		t.Error("a removal without a pool waited")
	}
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
