package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"sandboxd"
	"sandboxd/metrics"
	"sandboxd/payments"
	"sandboxd/runtime"
)

// newMetrics builds the service's series; the pool's are read from the
// runner set later in m.runner, its PoolStats converted whole.
func (m *Main) newMetrics() *metrics.Metrics {
	return metrics.New(func() metrics.PoolStats {
		if m.runner == nil {
			return metrics.PoolStats{}
		}
		return metrics.PoolStats(m.runner.PoolStats())
	})
}

// instrument wraps the runner, admitter and gate with the metrics. Only
// an x402 gate is counted: with payments off (the free gate) no payment is
// quoted, reserved or settled, and sandboxd_payments_total stays empty
// rather than counting free runs as payments.
func (m *Main) instrument(runner *runtime.Environments, adm sandboxd.Admitter, gate sandboxd.PaymentGate) (sandboxd.Runner, sandboxd.Admitter, sandboxd.PaymentGate) {
	run, adm := metrics.Runner{Runner: runner, M: m.metrics}, metrics.Admitter{Admitter: adm, M: m.metrics}
	g, ok := gate.(*payments.Gate)
	if !ok {
		return run, adm, gate
	}
	amount := func(req sandboxd.PaymentRequest) float64 {
		a, _ := strconv.ParseFloat(g.RequirementsOf(req).Amount, 64)
		return a
	}
	return run, adm, metrics.Gate{PaymentGate: gate, M: m.metrics, Amount: amount, Reason: payments.RefusalReason}
}

// serveMetrics listens on server.metrics_addr, when set, and serves
// GET /metrics there, apart from the public listener.
func (m *Main) serveMetrics() error {
	addr := m.Config.Server.MetricsAddr
	if addr == "" {
		return nil
	}
	ln, err := listenPrivate(addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.metrics.Handler())
	m.metricsServer = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := m.metricsServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log.Error("metrics", "err", err)
		}
	}()
	m.Log.Info("metrics listening", "addr", ln.Addr().String())
	return nil
}

// listenPrivate listens on addr (server.metrics_addr) and refuses the
// listener when it is bound to every interface, whatever spelling led there
// ([::%lo] that no IP parser reads, a host name resolving to 0.0.0.0): the
// address checked is the one the kernel bound, not the text configured.
func listenPrivate(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (server.metrics_addr; \"\" turns metrics off): %w", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("server.metrics_addr %q listens on every interface (%s); /metrics shows revenue: "+
			"name a loopback or private address", addr, ln.Addr())
	}
	return ln, nil
}

// closeMetrics stops the metrics listener.
func (m *Main) closeMetrics() {
	if m.metricsServer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.metricsServer.Shutdown(ctx)
}
