package runtime

// PoolStats is a snapshot of the warm pool, for metrics.
type PoolStats struct {
	// Target is the number of containers, idle and starting, the pool
	// holds now (it follows the load between pool_size and pool_max).
	Target int
	// Idle containers wait for a program; Starting ones are being made.
	Idle, Starting int
	// Hits count runs served by a warm container (idle, or still starting
	// when the run came); Misses the runs that started their own.
	Hits, Misses int64
	// Started counts the containers the pool started; Retired the idle
	// ones it removed unused while open (beyond what it keeps).
	Started, Retired int64
}

// PoolStats returns a snapshot of the warm pool; all zero without one.
func (d *Docker) PoolStats() PoolStats {
	if d.pool == nil {
		return PoolStats{}
	}
	st := d.pool.stats()
	return PoolStats{Target: st.target, Idle: st.idle, Starting: st.starting, Hits: st.hits + st.waits, Misses: st.misses,
		Started: st.started, Retired: st.retired}
}

// poolStats is a snapshot of the pool, for tests and logs.
type poolStats struct {
	idle, starting, waiting int
	target                  int
	hits, waits, misses     int64
	started, retired        int64
}

// stats returns a snapshot of the pool.
func (p *pool) stats() poolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return poolStats{idle: len(p.idle), starting: p.starting, waiting: len(p.waiters),
		target: p.targetLocked(), hits: p.hits.Load(), waits: p.waits.Load(), misses: p.misses.Load(),
		started: p.starts.Load(), retired: p.retires.Load()}
}
