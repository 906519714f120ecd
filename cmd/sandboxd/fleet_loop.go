package main

import (
	"context"
	"log/slog"

	"sandboxd/internal/every"
	"sandboxd/metrics"
	"sandboxd/payments/ledger"
)

// startRegistryLoop keeps a replica's part of the fleet's session
// registry until the returned loop is closed: a first pass now, then one
// every lease/3. A pass beats the replica's heartbeat (the payment gate
// beats it too when payments are on; the registry must not depend on it),
// ends the sessions of replicas whose lease ran out, and shows the fleet's
// open sessions by replica in the metrics.
func startRegistryLoop(ctx context.Context, l *ledger.SQL, reg *ledger.Registry, m *metrics.Metrics, log *slog.Logger) *every.Loop {
	pass := func(ctx context.Context) { registryPass(ctx, l, reg, m, log) }
	pass(ctx)
	return every.Start(l.Lease()/3, pass)
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
