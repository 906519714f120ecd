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

// countingRunner counts health checks, each taking a moment.
type countingRunner struct {
	fakeRunner
	checks atomic.Int32
}

func (c *countingRunner) Health(ctx context.Context) error {
	c.checks.Add(1)
	time.Sleep(20 * time.Millisecond)
	return c.fakeRunner.healthErr
}

// TestHealthFloodMakesFewEngineRounds: 200 concurrent GET /v1/health make
// about one engine round per healthTTL, for good and bad answers alike.
func TestHealthFloodMakesFewEngineRounds(t *testing.T) {
	for name, healthErr := range map[string]error{
		"ok":   nil,
		"down": sandboxd.Errorf(sandboxd.CodeUnavailable, "test", "Docker is unreachable"),
	} {
		t.Run(name, func(t *testing.T) {
			runner := &countingRunner{fakeRunner: fakeRunner{healthErr: healthErr}}
			srv := newTestServer(&runner.fakeRunner, &fakeGate{})
			srv.Runner = runner
			h := srv.Handler()
			want := http.StatusOK
			if healthErr != nil {
				want = http.StatusServiceUnavailable
			}
			start := time.Now()
			var wg sync.WaitGroup
			var wrong atomic.Int32
			for i := 0; i < 200; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if rec := do(t, h, "GET", "/v1/health", ""); rec.Code != want {
						wrong.Add(1)
					}
				}()
			}
			wg.Wait()
			// One round per started TTL window, however slow the machine.
			rounds := int32(math.Ceil(time.Since(start).Seconds()/healthTTL.Seconds())) + 1
			if n := runner.checks.Load(); n < 1 || n > rounds {
				t.Errorf("%d engine rounds for 200 health calls in %s, want at most %d", n, time.Since(start), rounds)
			}
			if wrong.Load() != 0 {
				t.Errorf("%d answers were not %d", wrong.Load(), want)
			}
			before := runner.checks.Load()
			time.Sleep(healthTTL + 100*time.Millisecond)
			do(t, h, "GET", "/v1/health", "")
			if runner.checks.Load() != before+1 {
				t.Errorf("after the TTL a health call made %d rounds, want 1", runner.checks.Load()-before)
			}
		})
	}
}
