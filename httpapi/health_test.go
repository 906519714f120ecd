package httpapi

import (
	"context"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandboxd"
)

// countingRunner counts engine rounds (health checks and info queries),
// each taking a moment.
type countingRunner struct {
	fakeRunner
	checks atomic.Int32
}

func (c *countingRunner) Health(ctx context.Context) error {
	c.checks.Add(1)
	time.Sleep(20 * time.Millisecond)
	return c.fakeRunner.healthErr
}

func (c *countingRunner) Info(ctx context.Context) (sandboxd.RunnerInfo, error) {
	c.checks.Add(1)
	time.Sleep(20 * time.Millisecond)
	return c.fakeRunner.Info(ctx)
}

// TestHealthFloodMakesFewEngineRounds: 200 concurrent GET /v1/health (or
// /v1/version) make about one engine round per engineTTL, for good and bad
// answers alike.
func TestHealthFloodMakesFewEngineRounds(t *testing.T) {
	for name, healthErr := range map[string]error{
		"ok":   nil,
		"down": sandboxd.Errorf(sandboxd.CodeUnavailable, "test", "Docker is unreachable"),
	} {
		for _, path := range []string{"/v1/health", "/v1/version"} {
			t.Run(name+path, func(t *testing.T) { testEngineFlood(t, path, healthErr) })
		}
	}
}

func testEngineFlood(t *testing.T, path string, healthErr error) {
	runner := &countingRunner{fakeRunner: fakeRunner{healthErr: healthErr}}
	srv := newTestServer(&runner.fakeRunner, &fakeGate{})
	srv.Runner = runner
	h := srv.Handler()
	want := http.StatusOK
	if healthErr != nil && path == "/v1/health" {
		want = http.StatusServiceUnavailable
	}
	start := time.Now()
	var wg sync.WaitGroup
	var wrong atomic.Int32
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rec := do(t, h, "GET", path, ""); rec.Code != want {
				wrong.Add(1)
			}
		}()
	}
	wg.Wait()
	// One round per started TTL window, however slow the machine.
	rounds := int32(math.Ceil(time.Since(start).Seconds()/engineTTL.Seconds())) + 1
	if n := runner.checks.Load(); n < 1 || n > rounds {
		t.Errorf("%d engine rounds for 200 calls of %s in %s, want at most %d", n, path, time.Since(start), rounds)
	}
	if wrong.Load() != 0 {
		t.Errorf("%d answers were not %d", wrong.Load(), want)
	}
	before := runner.checks.Load()
	time.Sleep(engineTTL + 100*time.Millisecond)
	do(t, h, "GET", path, "")
	if runner.checks.Load() != before+1 {
		t.Errorf("after the TTL a call made %d rounds, want 1", runner.checks.Load()-before)
	}
}
