package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"
)

// memoryBudget bounds the memory that the warm containers of every
// environment hold together. Each pool counts the containers it holds
// (idle and starting) at its environment's size: the measured resident
// size of one of its warm containers, or its memory limit until measured
// (pool.size). A pool asks before it starts containers (grow) and says
// when it holds fewer (set). Its lock is taken under a pool's, never the
// other way round. A nil budget bounds nothing.
type memoryBudget struct {
	limit int64
	mu    sync.Mutex
	held  map[*pool]int64
}

// newMemoryBudget returns a budget of limit bytes; nil (no bound) when
// limit is not positive.
func newMemoryBudget(limit int64) *memoryBudget {
	if limit <= 0 {
		return nil
	}
	return &memoryBudget{limit: limit, held: map[*pool]int64{}}
}

// grow returns how many of want more containers of size bytes the pool,
// holding have now, may start within the budget, and counts them.
func (b *memoryBudget) grow(p *pool, have, want int, size int64) int {
	if b == nil || want <= 0 {
		return max(want, 0)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var others int64
	for q, n := range b.held {
		if q != p {
			others += n
		}
	}
	k := 0
	if size > 0 {
		k = int(min(max((b.limit-others)/size-int64(have), 0), int64(want)))
	}
	b.held[p] = int64(have+k) * size
	return k
}

// set records that the pool holds n containers of size bytes.
func (b *memoryBudget) set(p *pool, n int, size int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= 0 {
		delete(b.held, p)
		return
	}
	b.held[p] = int64(n) * size
}

// used is the memory the pools hold, as counted.
func (b *memoryBudget) used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sum int64
	for _, n := range b.held {
		sum += n
	}
	return sum
}

// When a warm container's resident size is measured: measureDelay after
// it went idle (its runner has loaded what it preloads by then), again
// every measureEvery, each time on one idle container; measureTimeout
// bounds the Engine API's answer.
const (
	measureDelay   = 5 * time.Second
	measureEvery   = 5 * time.Minute
	measureTimeout = 5 * time.Second
)

// size is the memory a warm container of the pool is counted at: the
// measured resident size, or the memory limit until one is measured.
func (p *pool) size() int64 {
	if n := p.measured.Load(); n > 0 {
		return n
	}
	return int64(p.d.cfg.MemoryBytes)
}

// accountLocked tells the budget how many containers the pool holds now.
func (p *pool) accountLocked() {
	p.budget.set(p, len(p.idle)+p.starting, p.size())
}

// measureLaterLocked measures the resident size of the idle box, when none
// was measured within measureEvery and no measurement is under way.
func (p *pool) measureLaterLocked(b *box) {
	if p.budget == nil || p.measuring || (!p.measuredAt.IsZero() && p.now().Sub(p.measuredAt) < measureEvery) {
		return
	}
	p.measuring = true
	p.work.Add(1)
	go p.measure(b, b.left)
}

// measure waits measureDelay and, when the box is still idle, reads its
// container's resident size and counts the pool's containers at it.
func (p *pool) measure(b *box, left chan struct{}) {
	defer p.work.Done()
	n, err := int64(0), errors.New("taken before it was measured")
	select {
	case <-p.ctx.Done():
	case <-left:
	case <-time.After(measureDelay):
		ctx, cancel := context.WithTimeout(p.ctx, measureTimeout)
		n, err = p.d.residentSize(ctx, b.id)
		cancel()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.measuring = false
	if err != nil {
		p.log.Debug("warm container not measured", "err", err)
		return
	}
	p.measuredAt = p.now()
	p.measured.Store(n)
	p.accountLocked()
	p.log.Info("warm container measured", "resident_bytes", n, "limit_bytes", int64(p.d.cfg.MemoryBytes))
	p.fillLocked()
}

// containerStats is what the service reads of the Engine API's one-shot
// stats of a container (cgroup v1 and v2 alike).
type containerStats struct {
	CPUStats struct {
		CPUUsage struct {
			TotalUsage uint64 `json:"total_usage"`
		} `json:"cpu_usage"`
	} `json:"cpu_stats"`
	MemoryStats struct {
		Usage uint64            `json:"usage"`
		Stats map[string]uint64 `json:"stats"`
	} `json:"memory_stats"`
}

// stats reads the container's one-shot stats.
func (d *Docker) stats(ctx context.Context, id string) (containerStats, error) {
	var st containerStats
	resp, err := d.cli.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return st, d.fail(ctx, "runtime.stats", err)
	}
	defer resp.Body.Close()
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st)
	return st, err
}

// residentSize is the container's resident memory: the memory cgroup's
// usage without its inactive file cache.
func (d *Docker) residentSize(ctx context.Context, id string) (int64, error) {
	st, err := d.stats(ctx, id)
	if err != nil {
		return 0, err
	}
	ms := st.MemoryStats
	inactive := max(ms.Stats["total_inactive_file"], ms.Stats["inactive_file"])
	if ms.Usage == 0 || inactive >= ms.Usage {
		return 0, errors.New("the engine reports no memory usage")
	}
	return int64(ms.Usage - inactive), nil
}

// cpuTime is the CPU time the container's processes have used so far.
func (d *Docker) cpuTime(ctx context.Context, id string) (time.Duration, error) {
	st, err := d.stats(ctx, id)
	if err != nil {
		return 0, err
	}
	return time.Duration(st.CPUStats.CPUUsage.TotalUsage), nil
}
