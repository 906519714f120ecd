package main

import (
	"context"
	"log/slog"
	"time"

	"sandboxd/metrics"
	"sandboxd/payments/ledger"
)

// registryLoop keeps a replica's part of the fleet's session registry:
// every lease/3 it beats the replica's heartbeat (the payment gate beats it
// too when payments are on; the registry must not depend on it), ends the
// sessions of replicas whose lease ran out, and shows the fleet's open
// sessions by replica in the metrics.
type registryLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startRegistryLoop runs the registry's pass until Close.
func startRegistryLoop(l *ledger.SQL, reg *ledger.Registry, m *metrics.Metrics, log *slog.Logger) *registryLoop {
	ctx, cancel := context.WithCancel(context.Background())
	loop := &registryLoop{cancel: cancel, done: make(chan struct{})}
	every := l.Lease() / 3
	go func() {
		defer close(loop.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			registryPass(ctx, l, reg, m, log)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return loop
}

// registryPass is one pass of the loop.
func registryPass(ctx context.Context, l *ledger.SQL, reg *ledger.Registry, m *metrics.Metrics, log *slog.Logger) {
	if err := l.Heartbeat(ctx); err != nil && ctx.Err() == nil {
		log.Warn("fleet heartbeat failed", "err", err)
	}
	if n, err := reg.EndStale(ctx); err != nil && ctx.Err() == nil {
		log.Warn("could not end the sessions of silent replicas", "err", err)
	} else if n > 0 {
		log.Info("ended the sessions of replicas whose lease ran out", "count", n)
	}
	open, err := l.OpenSessions(ctx, 0)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("could not count the fleet's sessions", "err", err)
		}
		return
	}
	m.FleetSessions(open)
}

// Close stops the loop and waits for a pass under way.
func (r *registryLoop) Close() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}
