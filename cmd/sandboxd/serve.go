package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	goruntime "runtime"
	"syscall"
	"time"

	"sandboxd/httpapi"
	"sandboxd/internal/every"
	"sandboxd/internal/slots"
	"sandboxd/metrics"
	"sandboxd/runtime"
	"sandboxd/sessions"
)

// serveCommand runs the service until SIGINT or SIGTERM.
func serveCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", stderr)
	cfg, code, ok := parseConfigFlags(fs, serveHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	log := newLogger(stderr, cfg.Server.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := &Main{Config: cfg, Log: log}
	if err := m.Open(ctx); err != nil {
		log.Error("could not start", "err", err)
		m.Close()
		return 1
	}
	<-ctx.Done()
	log.Info("shutting down", "grace", cfg.Server.ShutdownTimeout)
	if err := m.Close(); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

// Main is the running service: the pieces built from the configuration.
type Main struct {
	Config Config
	Log    *slog.Logger

	runner        *runtime.Environments
	sessions      *sessions.Table
	closer        func() error // the payment gate's
	fleetLoop     *every.Loop
	fleetClose    func() error // the registry's own ledger, when payments are off
	metrics       *metrics.Metrics
	metricsServer *http.Server
	server        *http.Server
	ln            net.Listener
	served        chan struct{}
}

// Open builds the pieces, removes containers a crash left behind, listens,
// and starts serving in the background.
func (m *Main) Open(ctx context.Context) error {
	rt := m.Config.Runtime
	m.metrics = m.newMetrics()
	runner, err := runtime.NewEnvironments(m.runtimeEnvironments(), hostMemory()/poolMemoryShare, m.Log.With("component", "runtime"))
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	m.runner = runner
	m.reap(ctx)

	gate, closer, err := m.openGate(ctx)
	if err != nil {
		return err
	}
	m.closer = closer
	reg, fleet, err := m.openFleet(ctx, gate)
	if err != nil {
		return err
	}
	if err := m.serveMetrics(); err != nil {
		return err
	}
	run, adm, gate := m.instrument(runner, slots.New(int(rt.MaxConcurrency), rt.QueueWait), gate)

	api := &httpapi.Server{
		Runner:        run,
		Admitter:      adm,
		Gate:          gate,
		Log:           m.Log.With("component", "httpapi"),
		MaxBodyBytes:  int64(m.Config.Server.MaxBodyBytes),
		MaxCodeBytes:  int(rt.MaxCodeBytes),
		MaxStdinBytes: int(rt.MaxStdinBytes),
		RunLimit:      m.Config.runLimit(),
		Version:       httpapi.VersionInfo{Version: version, Commit: commit, GoVersion: goruntime.Version()},
		Page:          m.Config.Server.Page,
		CORSOrigins:   m.Config.Server.CORSOrigins,
		ObservePhase:  m.metrics.Phase,
		Retries:       m.Config.retriesOn(),
	}
	// The environments and the caps of the files, which the API describes
	// (discovery, OpenAPI, the page) and checks a request's files against.
	api.Environments = m.Config.apiEnvironments()
	api.MaxFiles, api.MaxFilesBytes = rt.MaxFiles, int64(rt.MaxFilesBytes)
	api.SessionSettings = m.Config.sessionSettings()
	if m.Config.Sessions.Enabled {
		// The runtime's Environments start the session containers.
		sc := m.Config.sessionsConfig(m.metrics)
		if reg != nil {
			sc.Registry = reg
		}
		m.sessions = sessions.New(runner, sc, m.Log.With("component", "sessions"))
		api.Sessions = m.sessions
		api.Fleet = fleet
	}
	timeouts := m.Config.httpTimeouts()
	m.clientLimits(api, timeouts)
	ln, err := net.Listen("tcp", m.Config.Server.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (server.addr): %w", m.Config.Server.Addr, err)
	}
	m.ln = httpapi.LimitConns(ln, int(m.Config.Server.MaxConnsPerClient), api.TrustedProxies, m.Log.With("component", "http"))
	m.server = httpapi.NewHTTPServer(api.Handler(), timeouts, m.Log.With("component", "http"))
	m.served = make(chan struct{})
	go func() {
		defer close(m.served)
		if err := m.server.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log.Error("serve", "err", err)
		}
	}()
	m.Log.Info("listening", "addr", m.ln.Addr().String(), "payments", m.Config.Payments.Enabled,
		"environments", runner.Names(), "oci_runtime", rt.OCIRuntime, "max_concurrency", rt.MaxConcurrency,
		"sessions", m.Config.Sessions.Enabled)
	return nil
}

// clientLimits copies into api what bounds one client's bodies and how the
// service names itself (the server.* keys, validated by LoadConfig).
func (m *Main) clientLimits(api *httpapi.Server, t httpapi.Timeouts) {
	s := m.Config.Server
	api.MinBodyRate, api.BodyGrace, api.ReadTimeout = int64(s.MinBodyRate), s.BodyGrace, t.Read
	api.MaxBodiesPerClient = int(s.MaxBodiesPerClient)
	api.PublicURL, _ = publicURL(s.PublicURL)
	api.TrustedProxies, _ = trustedProxies(s.TrustedProxies)
}

// runtimeEnvironments are the runtime's environments, those turned on,
// each with its runtime.Config and the engine's observer.
func (m *Main) runtimeEnvironments() []runtime.Environment {
	var envs []runtime.Environment
	for _, name := range m.Config.enabledEnvironments() {
		rc := m.Config.runtimeConfig(m.Config.Environments[name])
		rc.Observe = m.metrics.Engine
		envs = append(envs, runtime.Environment{Name: name, Config: rc})
		m.Log.Info("environment", "name", name, "image", rc.Image, "timeout", rc.Timeout, "memory", int64(rc.MemoryBytes),
			"pool_size", rc.PoolSize, "pool_max", rc.PoolMax, "price", m.Config.price(name))
	}
	return envs
}

// reap removes containers that a crash of this instance left behind. Docker
// may be down at start: the service still starts and answers 503 until it
// is back.
func (m *Main) reap(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := m.runner.Reap(ctx)
	switch {
	case err != nil:
		m.Log.Warn("could not look for leftover containers; is Docker running?", "err", err)
	case n > 0:
		m.Log.Info("removed containers left by an earlier run", "count", n)
	}
}

// Close stops taking requests, lets runs finish within the shutdown grace,
// kills what is still running, and removes every container of this service.
// Then the payment gate closes: it waits for the settlements in flight
// (paid runs go on after their caller left) before it closes the ledger
// and the chain client, and only then are the connections closed, so a
// settlement that outlasts the grace still reaches its payer.
func (m *Main) Close() error {
	var errs []error
	m.closeMetrics()
	if m.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.Server.ShutdownTimeout)
		if err := m.server.Shutdown(ctx); err != nil {
			m.Log.Warn("runs still going at the end of the grace period; killing them", "err", err)
		}
		cancel()
	}
	// The sessions end before the runtime closes under them: each
	// session's container is removed, and counted as ended at shutdown.
	if m.sessions != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, m.sessions.Shutdown(ctx))
		cancel()
	}
	if m.runner != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, m.runner.Close(ctx))
		cancel()
	}
	// The registry's loop, and its own ledger, after the sessions have
	// recorded their ends.
	m.fleetLoop.Close()
	if m.fleetClose != nil {
		errs = append(errs, m.fleetClose())
	}
	// Before the connections close: the gate waits for settlements in
	// flight, and their handlers still answer their payers.
	if m.closer != nil {
		errs = append(errs, m.closer())
	}
	if m.server != nil {
		// A handler whose settlement has just ended still writes its
		// answer: closing the connections at once raced it, and the payer
		// of a settled call got no answer (seen under a CPU hog). Each
		// connection closes once idle, or after answerWait.
		ctx, cancel := context.WithTimeout(context.Background(), answerWait)
		_ = m.server.Shutdown(ctx)
		cancel()
		_ = m.server.Close()
		<-m.served
	}
	return errors.Join(errs...)
}

// answerWait bounds how long Close waits, after the settlements in flight,
// for their handlers to write the answers.
const answerWait = 5 * time.Second

// newLogger returns a text logger at the level.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
