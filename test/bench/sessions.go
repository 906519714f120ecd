package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// sessionStep is the call of the sessions' aim: one step of state in a warm
// session.
const sessionStep = "x += 1; x"

// sessionsReport is what the sessions phase measured, all in one
// service over HTTP.
type sessionsReport struct {
	// sparseCall and sparseOneShot are sessionStep in a warm session and a
	// one-shot hello world, interleaved, one at a time, gap apart.
	sparseCall, sparseOneShot latencies
	// ceiling is the engine ceiling the load is a share of; loadRate the
	// one-shot arrivals a second (40 % of it); loadedCall is sessionStep
	// while they run, loaded the one-shot calls' phase.
	ceiling, loadRate float64
	loadedCall        latencies
	loaded            phase
	// open is POST /v1/sessions with the warm pools full.
	open latencies
	// pandas is the five-step analysis, per round: in a session and as
	// one-shot calls that each reload the data.
	pandas []pandasRound
	// failed counts the failed session calls and opens.
	failed map[string]int64
}

// pandasRound is one run of the five steps each way, per step.
type pandasRound struct {
	session, oneShot []time.Duration
}

// measureSessions runs the sessions phase against one service with both
// environments; ceiling is the engine ceiling measured earlier in the run,
// 0 to measure it here.
func measureSessions(ctx context.Context, o *options, ceiling float64) (sessionsReport, error) {
	r := sessionsReport{failed: map[string]int64{}}
	var err error
	if r.ceiling, err = ceilingOr(ctx, o, "sessions", ceiling); err != nil {
		return r, err
	}
	s, err := startService(ctx, o, []string{"SANDBOX_ENVIRONMENTS_DATA_IMAGE=" + o.dataImage})
	if err != nil {
		return r, err
	}
	defer s.stop()
	for range 3 { // connection set-up and the pool's first fill
		if _, err := s.call(); err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
	}
	steps := []func() error{
		func() error { return r.sparse(ctx, s, o.sparse, o.gap) },
		func() error { return r.underLoad(ctx, s, o.poisson) },
		func() error { return r.opens(ctx, s, max(o.sparse/4, 5), o.gap) },
		func() error { return r.analysis(ctx, s, o.sessionRounds) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// fail counts a failed call by its first words.
func (r *sessionsReport) fail(err error) { r.failed[firstWords(err.Error())]++ }

// sparse interleaves n session steps with n one-shot hello worlds, gap
// before each.
func (r *sessionsReport) sparse(ctx context.Context, s *service, n int, gap time.Duration) error {
	progress("sessions: %d calls of %q in a warm session beside %d one-shot calls, %v apart", n, sessionStep, n, gap)
	st, err := newStepper(s)
	if err != nil {
		return err
	}
	defer s.closeSession(st.id)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(gap)
		d, err := st.step()
		if err != nil {
			return fmt.Errorf("session call %d: %w", i+1, err)
		}
		r.sparseCall = append(r.sparseCall, d)
		time.Sleep(gap)
		if d, err = s.call(); err != nil {
			r.fail(err)
			continue
		}
		r.sparseOneShot = append(r.sparseOneShot, d)
	}
	return nil
}

// underLoad makes session steps one after another (100 ms apart) while
// one-shot calls arrive at 40 % of the ceiling (Poisson) for window.
func (r *sessionsReport) underLoad(ctx context.Context, s *service, window time.Duration) error {
	r.loadRate = 0.4 * r.ceiling
	progress("sessions: %q in a warm session while one-shot calls arrive at %.1f/s (40 %% of the ceiling), %v", sessionStep, r.loadRate, window)
	st, err := newStepper(s)
	if err != nil {
		return err
	}
	defer s.closeSession(st.id)
	var wg sync.WaitGroup
	wg.Go(func() { r.loaded = s.poisson(ctx, r.loadRate, window, 0) })
	for end := time.Now().Add(window); time.Now().Before(end) && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
		d, err := st.step()
		if err != nil {
			wg.Wait()
			return fmt.Errorf("session call under load: %w", err)
		}
		r.loadedCall = append(r.loadedCall, d)
	}
	wg.Wait()
	return nil
}

// opens opens n python sessions, each once the warm pools are full again
// and gap after, and closes each.
func (r *sessionsReport) opens(ctx context.Context, s *service, n int, gap time.Duration) error {
	progress("sessions: %d opens, each %v after the warm pools are full", n, gap)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if err := waitPoolFull(ctx, s); err != nil {
			return err
		}
		time.Sleep(gap)
		id, d, err := s.openSession("python")
		if err != nil {
			r.fail(err)
			continue
		}
		r.open = append(r.open, d)
		s.closeSession(id)
	}
	return nil
}

// waitPoolFull waits until the service's warm pools are full.
func waitPoolFull(ctx context.Context, s *service) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.poolFull() {
			return nil
		}
	}
	return errors.New("the warm pools were not full within a minute")
}

// ceilingOr is ceiling when the run measured it already, else the engine
// ceiling measured now for the phase named what.
func ceilingOr(ctx context.Context, o *options, what string, ceiling float64) (float64, error) {
	if ceiling > 0 {
		return ceiling, nil
	}
	progress("%s: engine ceiling, the service's spec, concurrency %d, %v", what, o.conc, o.ceiling)
	c, err := measureCeiling(ctx, benchConfig(o.image), o.conc, o.ceiling, nil)
	return c.perSec, err
}
