package httpapi

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sandboxd"
)

// slowHealthRunner is a fakeRunner whose first health probe answers at
// once and whose later ones block until hang is closed; it counts them.
type slowHealthRunner struct {
	fakeRunner
	hang   chan struct{}
	probes atomic.Int32
}

// mustNodeHealthServer is a server of python and node on a
// slowHealthRunner, whose hung probes end with the test.
func mustNodeHealthServer(t *testing.T) (*Server, *slowHealthRunner) {
	t.Helper()
	runner := &slowHealthRunner{fakeRunner: fakeRunner{result: sandboxd.Result{Stdout: "42\n", Status: sandboxd.StatusOK}},
		hang: make(chan struct{})}
	t.Cleanup(func() { close(runner.hang) })
	s := newTestServer(&runner.fakeRunner, &fakeGate{})
	s.Runner = runner
	s.Environments = []sandboxd.Environment{{Name: "python", Languages: []string{sandboxd.LanguagePython}},
		{Name: "node", Languages: []string{sandboxd.LanguageJavaScript}}}
	return s, runner
}

func (r *slowHealthRunner) Health(ctx context.Context) error {
	if r.probes.Add(1) == 1 {
		return nil
	}
	select {
	case <-r.hang:
	case <-ctx.Done():
	}
	return nil
}

// TestRunOutsideTheDefaultNeverWaitsForAStaleHealth: a run in an
// environment other than the default asks whether its image is being
// built from the last health answer: once that answer is stale the run
// is answered while the new probe is still in flight (it refreshes in the
// background), where it used to wait for the probe (10-12 ms of Engine API
// calls at each run a second apart, measured on node's runs).
func TestRunOutsideTheDefaultNeverWaitsForAStaleHealth(t *testing.T) {
	s, runner := mustNodeHealthServer(t)
	h := s.Handler()
	body := `{"code":"console.log(42)","language":"javascript"}`
	if rec := do(t, h, "POST", "/v1/code", body); rec.Code != 200 {
		t.Fatalf("first run %d: %s", rec.Code, rec.Body)
	}
	s.engine.health.mu.Lock()
	s.engine.health.at = time.Now().Add(-2 * refreshTTL) // stale
	s.engine.health.mu.Unlock()
	answered := make(chan int, 1)
	go func() { answered <- do(t, h, "POST", "/v1/code", body).Code }()
	select {
	case code := <-answered:
		if code != 200 {
			t.Fatalf("run with a stale health: %d", code)
		}
	case <-time.After(healthTimeout / 2): // the probe in flight ends at healthTimeout
		t.Fatal("a run waited for the health probe in flight")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runner.probes.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runner.probes.Load(); n != 2 {
		t.Errorf("%d health probes, want the first and one refresh in the background", n)
	}
}

// TestRunOutsideTheDefaultRefreshesHealthAtMostEveryRefreshTTL: an answer
// older than engineTTL but not refreshTTL is used as it is, with no probe
// in the background: a probe started by a run runs beside it (several
// Engine API calls), and with engineTTL every other node run a second
// apart paid for one.
func TestRunOutsideTheDefaultRefreshesHealthAtMostEveryRefreshTTL(t *testing.T) {
	s, runner := mustNodeHealthServer(t)
	h := s.Handler()
	body := `{"code":"console.log(42)","language":"javascript"}`
	for i, age := range []time.Duration{0, 2 * engineTTL, refreshTTL / 2} {
		s.engine.health.mu.Lock()
		if !s.engine.health.at.IsZero() {
			s.engine.health.at = time.Now().Add(-age)
		}
		s.engine.health.mu.Unlock()
		if rec := do(t, h, "POST", "/v1/code", body); rec.Code != 200 {
			t.Fatalf("run %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	time.Sleep(50 * time.Millisecond) // a refresh would have started by now
	if n := runner.probes.Load(); n != 1 {
		t.Errorf("%d health probes, want the first only", n)
	}
}
