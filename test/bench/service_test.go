package main

import "testing"

// TestReadPoolKeepsThePythonPool: the service logs a "pool closing" line per
// environment, in either order; the bench keeps the python pool's counts,
// never the data pool's zeros. The lines are as log/slog's text handler
// writes them, the environment's attributes before the call's.
func TestReadPoolKeepsThePythonPool(t *testing.T) {
	const (
		python = `time=2026-12-03T08:00:00Z level=INFO msg="pool closing" environment=python instance=bench job=pool hits=396 waits=3 misses=1 started=412 retired=9 idle=4 starting=0`
		data   = `time=2026-12-03T08:00:00Z level=INFO msg="pool closing" environment=data instance=bench job=pool hits=0 waits=0 misses=0 started=1 retired=0 idle=1 starting=0`
	)
	for _, order := range [][]string{{python, data}, {data, python}} {
		var s service
		for _, line := range order {
			s.readPool(line)
		}
		if s.pool != [5]int64{396, 3, 1, 412, 9} {
			t.Errorf("pool counts after %q then %q: %v, want [396 3 1 412 9]", order[0][47:70], order[1][47:70], s.pool)
		}
	}
}
