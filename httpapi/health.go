package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"sandboxd"
)

// healthTimeout bounds a health check, so a stuck daemon answers 503 quickly.
const healthTimeout = 3 * time.Second

// handleHealth answers 200 when runs can start, else 503 with the reason;
// 200 too while the only environments that cannot are those whose images
// are being built, naming them and when they will be ready. Answers are
// reused for engineTTL (see shared).
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	err := s.checkHealth(r.Context())
	var b *sandboxd.Building
	switch {
	case errors.As(err, &b):
		writeJSON(w, http.StatusOK, s.buildingHealth(b, time.Now()))
	case err != nil:
		s.writeError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, healthResponse{Status: "ok"})
	}
}

// engineTTL is how long an answer about the engine (health, version), good
// or bad, is reused: each costs several Engine API calls, and a flood of
// GET /v1/health or /v1/version must not become a flood of calls to the
// daemon.
const engineTTL = time.Second

// refreshTTL is how old the last health answer of a run outside the
// default environment may be before the run refreshes it in the
// background (shared.recent). The refresh's Engine API calls run beside
// the very run that started it: with engineTTL, every other run of a node
// environment a second apart paid for them in its answer, on 2 cores.
const refreshTTL = 10 * time.Second

// shared shares one probe's answer among the requests of an engineTTL
// window, and one probe in flight among the requests waiting for it. Its
// zero value is ready.
type shared[T any] struct {
	mu   sync.Mutex
	at   time.Time     // when the last answer came; zero before the first
	val  T             // the last answer
	err  error         // the last answer's error
	done chan struct{} // closed when the probe in flight ends; nil when none
}

// get returns the last answer while it is fresh, else waits for the probe
// in flight or runs probe. The probe does not end when the request that
// started it does (others may wait for it); healthTimeout bounds it.
func (c *shared[T]) get(ctx context.Context, probe func(context.Context) (T, error)) (T, error) {
	for {
		c.mu.Lock()
		if !c.at.IsZero() && time.Since(c.at) < engineTTL {
			val, err := c.val, c.err
			c.mu.Unlock()
			return val, err
		}
		if done := c.done; done != nil {
			c.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				var zero T
				return zero, ctx.Err()
			}
		}
		done := make(chan struct{})
		c.done = done
		c.mu.Unlock()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthTimeout)
		val, err := probe(pctx)
		cancel()
		c.mu.Lock()
		c.at, c.val, c.err, c.done = time.Now(), val, err, nil
		c.mu.Unlock()
		close(done)
		return val, err
	}
}

// recent returns the last answer however old, and, when it is stale,
// starts one probe in the background to refresh it; only before the first
// answer does it wait (as get). For what may lag the engine by a probe
// (whether an image is being built), so that no call waits for one.
func (c *shared[T]) recent(ctx context.Context, probe func(context.Context) (T, error)) (T, error) {
	c.mu.Lock()
	if c.at.IsZero() {
		c.mu.Unlock()
		return c.get(ctx, probe)
	}
	val, err, stale := c.val, c.err, time.Since(c.at) >= refreshTTL && c.done == nil
	c.mu.Unlock()
	if stale {
		go func() { _, _ = c.get(context.WithoutCancel(ctx), probe) }() // kept for the next call
	}
	return val, err
}

// engineCache holds the shared answers about the engine.
type engineCache struct {
	health shared[struct{}]
	info   shared[sandboxd.RunnerInfo]
}

// checkHealth is the runner's health, shared (see shared).
func (s *Server) checkHealth(ctx context.Context) error {
	_, err := s.engine.health.get(ctx, s.probeHealth)
	return err
}

// recentHealth is the runner's last health, refreshed in the background
// once stale (shared.recent).
func (s *Server) recentHealth(ctx context.Context) error {
	_, err := s.engine.health.recent(ctx, s.probeHealth)
	return err
}

// probeHealth asks the runner for its health.
func (s *Server) probeHealth(ctx context.Context) (struct{}, error) {
	return struct{}{}, s.Runner.Health(ctx)
}

// runnerInfo is the runner's info, shared (see shared).
func (s *Server) runnerInfo(ctx context.Context) (sandboxd.RunnerInfo, error) {
	return s.engine.info.get(ctx, s.Runner.Info)
}

// healthResponse is the answer of a healthy GET /v1/health. Environments
// and Building are there while an environment's image is being built: the
// service is healthy (its default environment runs) and says which
// environment is not ready yet, and when it will be.
type healthResponse struct {
	Status       string                  `json:"status"`
	Environments map[string]string       `json:"environments,omitempty"`
	Building     map[string]buildingJSON `json:"building,omitempty"`
}
