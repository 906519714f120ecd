package retries

import (
	"context"
	"io"
	"sync"
	"time"
)

// Start starts the sweeper: at once (to learn the ledger's sum), every
// SweepEvery, and as soon as Stored
// says this replica took the ledger over MaxBytes, it sweeps the expired
// answers and keeps the answers under MaxBytes (Store.SweepAnswers). Every
// replica runs one: a pass is idempotent. Close stops it, waiting for a
// pass in flight.
func (k *Keeper) Start() io.Closer {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(k.opts.SweepEvery)
		defer tick.Stop()
		for {
			k.sweep(ctx)
			select {
			case <-tick.C:
			case <-k.sweepNow:
			case <-ctx.Done():
				return
			}
		}
	}()
	return &sweeper{cancel: cancel, done: done}
}

// sweep runs one pass and notes what it left.
func (k *Keeper) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	began := time.Now()
	k.mu.Lock()
	stored := k.stored
	k.mu.Unlock()
	r, err := k.store.SweepAnswers(ctx, int64(k.cfg.MaxBytes))
	k.obs.Swept(r, time.Since(began), err)
	if err != nil {
		k.log.Warn("cannot sweep the kept answers; next pass in a while", "err", err)
		return
	}
	k.mu.Lock()
	k.stored -= stored // what was stored during the pass counts toward the next
	k.lastBytes = r.Bytes
	k.mu.Unlock()
	if r.Expired > 0 || r.Evicted > 0 {
		k.log.Info("kept answers swept", "expired", r.Expired, "evicted", r.Evicted,
			"evicted_bytes", r.EvictedBytes, "bytes", r.Bytes, "duration_ms", time.Since(began).Milliseconds())
	}
}

// sweeper is the io.Closer of a started sweeper.
type sweeper struct {
	once   sync.Once
	cancel context.CancelFunc
	done   chan struct{}
}

// Close stops the sweeper and waits for it; it is safe to call twice.
func (s *sweeper) Close() error {
	s.once.Do(s.cancel)
	<-s.done
	return nil
}

// SweepReport is what one SweepAnswers pass did.
type SweepReport struct {
	// Expired counts the rows deleted.
	Expired int64
	// Evicted counts the rows whose bytes were dropped for the budget,
	// EvictedBytes their bytes.
	Evicted, EvictedBytes int64
	// Bytes is the sum of the bytes kept after the pass.
	Bytes int64
}
