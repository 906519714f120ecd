package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

func TestPoolFollowsTheLoad(t *testing.T) {
	const least, most = 1, 8
	d := mustDocker(t, func(c *Config) { c.PoolSize, c.PoolMax = least, most })
	d.pool.start()
	settle(t, d)

	// A burst: 48 hello worlds, 8 at once.
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	var grown poolStats
	peak := 0 // the largest target
	sampler.Go(func() {
		for {
			st := d.pool.stats()
			if st.idle+st.starting > grown.idle+grown.starting {
				grown = st
			}
			peak = max(peak, st.target)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := d.Run(ctx, sandboxd.Job{ID: fmt.Sprintf("%s-%d", jobID(t), i), Code: "print('hi')"})
			if err != nil || res.Status != sandboxd.StatusOK {
				t.Errorf("run %d: %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	t.Logf("largest pool during the burst: %+v", grown)
	if held := grown.idle + grown.starting; held <= least || held > most {
		t.Errorf("the pool held at most %d containers during the burst, want more than its least %d and at most %d", held, least, most)
	}

	// The lull right after the burst: the arrival rate falls, but the pool
	// holds its largest target for poolHoldFor (sizer.held): it retires
	// nothing, and refills to it, since the next burst would take those
	// containers (a pool that refilled only to the falling rate's target
	// met a burst at 60 % of the ceiling with 11 idle, not 17).
	// Half the hold into the lull, the rate's own target has fallen; the
	// pool's has not, and its idle containers reach it (refills take up
	// to a few seconds a start on a slow, busy host: a quarter of the hold
	// more for that).
	time.Sleep(poolHoldFor / 2)
	if st := d.pool.stats(); st.target < peak {
		t.Errorf("%s after the burst, within its hold of %s: %+v; want the target at the burst's largest, %d",
			poolHoldFor/2, poolHoldFor, st, peak)
	}
	refilled := time.Now().Add(poolHoldFor / 4)
	for st := d.pool.stats(); st.idle < peak; st = d.pool.stats() {
		if time.Now().After(refilled) {
			t.Errorf("%s after the burst: %+v; want %d idle containers, the burst's largest target", 3*poolHoldFor/4, st, peak)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st := d.pool.stats(); st.retired != 0 {
		t.Errorf("the pool retired %d idle containers within its hold of %s after the burst: %+v", st.retired, poolHoldFor, st)
	}

	// Idle: back to the least, and no more containers than that, once the
	// rate's average has decayed (a least of 1 needs it below one call in
	// a thousand start times: 45 s after 8 at once on a slow host) and
	// the pool's hold of its largest target has passed (poolHoldFor).
	deadline := time.Now().Add(90*time.Second + poolHoldFor)
	for {
		st := d.pool.stats()
		if st.target == least && st.idle+st.starting == least && len(instanceContainers(t, d)) == least {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not shrink back to %d within %s of idling: %+v, %d containers", least, 90*time.Second+poolHoldFor, st, len(instanceContainers(t, d)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	assertGone(t, d, jobID(t))
}
