package main

import (
	"context"
	"strings"
	"time"

	"sandboxd/internal/servicetest"
)

// removalsWait is how long settleRemovals waits at most.
const removalsWait = 2 * time.Minute

// settled is what settleRemovals saw: the containers of the instance not
// running when it began (killed and not yet removed), and how long their
// removal took.
type settled struct {
	left int
	took time.Duration
}

// settleRemovals waits until no container of the instance is left but
// running ones (the warm pools'), so that what follows is not measured
// beside the removal of the containers a load phase killed (the service
// removes them in the background, a few at a time, after their answers).
func settleRemovals(ctx context.Context, instance string) (settled, error) {
	start := time.Now()
	var r settled
	for first := true; ; first = false {
		ids, err := servicetest.Containers(ctx, instance)
		if err != nil {
			return r, err
		}
		n := 0
		for _, id := range ids {
			if !strings.HasSuffix(id, " running") {
				n++
			}
		}
		if first {
			r.left = n
		}
		r.took = time.Since(start)
		if n == 0 || r.took > removalsWait || ctx.Err() != nil {
			return r, ctx.Err()
		}
		time.Sleep(250 * time.Millisecond)
	}
}
