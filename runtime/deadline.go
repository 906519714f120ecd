package runtime

import (
	"sync"
	"time"
)

// deadline is a run's wall-clock limit, counted from the hand-over of the
// program; or, when the runner's ack says it came late (the program came
// before the runner was ready for it, while its interpreter started or it
// imported the image's preloaded modules, in a container started for the
// run), from the ack, so the runner's own start costs the program none of
// its time. Until the ack a longer wait applies (ackWait after the
// hand-over): a runner that never acks is the service's failure, not the
// program's.
type deadline struct {
	// C receives once, when the limit has passed.
	C <-chan time.Time

	stop chan struct{}
	once sync.Once
	mu   sync.Mutex
	// start is when the limit began to count: the hand-over, or a late ack.
	start time.Time
	// handover is when the program was handed over (the deadline made).
	handover time.Time
}

// ackGrace is how much longer than the program's own limit a runner may
// take to ack its program (or a session's runner to start its loop),
// counted from the hand-over: the data image's preload in a container
// started for the run takes seconds on a busy host, and under gVisor on a
// slow 2-core host with a CPU hog beside it took over 14 s (four session
// opens of the hostile suite failed at 10 s). It stays within the run's
// overhead beyond its limit that the HTTP and payment deadlines allow
// (cmd/sandboxd's runOverhead, 30 s), with room for the container's start.
// A runner that never acks is the service's failure, answered this late.
const ackGrace = 20 * time.Second

// newDeadline starts waiting for the ack at the hand-over (now), at most
// ackWait; then the program has its limit from the hand-over, or from the
// ack when it was late (ack receives whether it was).
func newDeadline(limit, ackWait time.Duration, ack <-chan bool) *deadline {
	c := make(chan time.Time, 1)
	handover := time.Now()
	d := &deadline{C: c, stop: make(chan struct{}), start: handover, handover: handover}
	timer := time.NewTimer(ackWait)
	go func() {
		defer timer.Stop()
		for {
			select {
			case late := <-ack:
				ack = nil
				if late {
					d.mu.Lock()
					d.start = time.Now()
					d.mu.Unlock()
				}
				timer.Reset(time.Until(d.started().Add(limit)))
			case now := <-timer.C:
				c <- now
				return
			case <-d.stop:
				return
			}
		}
	}()
	return d
}

// started is when the limit began to count.
func (d *deadline) started() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.start
}

// Stop ends the limit's goroutine; it is safe to call more than once.
func (d *deadline) Stop() {
	d.once.Do(func() { close(d.stop) })
}
