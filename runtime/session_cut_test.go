package runtime

import (
	"context"
	"testing"
	"time"

	"sandboxd"
)

// TestSessionCallCutOffIsTheServices: a call running when its session is
// closed (a DELETE, the service stopping: Session.Close, Docker.Close) is
// the service's failure, an error, never a delivered answer that would be
// charged.
func TestSessionCallCutOffIsTheServices(t *testing.T) {
	for _, by := range []string{"session", "runtime"} {
		t.Run(by, func(t *testing.T) {
			d := mustDocker(t, func(c *Config) { c.Instance = testInstance + "-cut-" + by })
			s := mustSession(t, d)
			mustCall(t, s, "x = 1")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			type answer struct {
				res sandboxd.SessionResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := s.Run(ctx, sandboxd.Job{ID: jobID(t), Language: sandboxd.LanguagePython,
					Code: "import time\nprint('started', flush=True)\ntime.sleep(30)"})
				done <- answer{res, err}
			}()
			time.Sleep(time.Second) // the call is under way (a slow host: at worst it has not begun, which ends the same)
			var err error
			if by == "session" {
				err = s.Close(ctx)
			} else {
				err = d.Close(ctx)
			}
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
			select {
			case a := <-done:
				if sandboxd.ErrorCode(a.err) != sandboxd.CodeUnavailable {
					t.Fatalf("the call cut off answered %+v, err %v; want CodeUnavailable", a.res, a.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the call cut off did not answer within 30 s")
			}
		})
	}
}
