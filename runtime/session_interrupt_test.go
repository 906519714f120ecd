package runtime

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// standInEngine is a Docker client of an Engine that is handler, both
// closed at the test's end.
func standInEngine(t *testing.T, handler http.HandlerFunc) *client.Client {
	t.Helper()
	engine := httptest.NewServer(handler)
	t.Cleanup(engine.Close)
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+engine.Listener.Addr().String()), client.WithVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestCallEndedBeforeItsInterruptIsNoTimeout: at a call's deadline the
// interrupt finds the container stopped (Docker answers 409, "is not
// running") while its exit has not reached the call yet, as under gVisor
// on a loaded host: the interpreter ended by itself, and the call is
// judged by its exit, not as a timeout. An interrupt that went through
// still makes the call a timeout. The Engine is a stand-in: no Docker.
func TestCallEndedBeforeItsInterruptIsNoTimeout(t *testing.T) {
	for _, tc := range []struct {
		name         string
		kill         int
		wantTimedOut bool
	}{
		{"stopped", http.StatusConflict, false},
		{"running", http.StatusNoContent, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kills := make(chan string, 4)
			cli := standInEngine(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/containers/abc/kill") {
					http.NotFound(w, r)
					return
				}
				kills <- r.URL.Query().Get("signal")
				if tc.kill == http.StatusConflict {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.kill)
					_, _ = w.Write([]byte(`{"message":"Container abc is not running"}`))
					return
				}
				w.WriteHeader(tc.kill)
			})
			b := &box{id: "abc", exited: make(chan struct{})}
			s := &Session{d: &Docker{cli: cli}, b: b, readDone: make(chan struct{}), ended: make(chan struct{})}
			c := newCall(newCallProtocol(1, 1, 1), 1024, false)
			close(c.acked)
			cr := &callRun{s: s, c: c, log: slog.New(slog.DiscardHandler)}
			deadline := make(chan time.Time, 1)
			deadline <- time.Now()
			go func() {
				// The exit and the output's end come after the interrupt.
				<-time.After(100 * time.Millisecond)
				close(b.exited)
				close(s.readDone)
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			how := cr.watch(ctx, deadline)
			if how != diedCall || cr.timedOut != tc.wantTimedOut {
				t.Errorf("outcome %v timed out %v, want %v (the container's exit) timed out %v", how, cr.timedOut, diedCall, tc.wantTimedOut)
			}
			if sig := <-kills; sig != "SIGINT" {
				t.Errorf("the interrupt sent %q, want SIGINT", sig)
			}
		})
	}
}

// TestCallEndedAtItsDeadlineIsNotInterrupted: a call whose end came as its
// deadline did is answered as ended, and its container gets no interrupt,
// which would reach the interpreter between calls or, late, in the next.
func TestCallEndedAtItsDeadlineIsNotInterrupted(t *testing.T) {
	var kills atomic.Int32
	cli := standInEngine(t, func(w http.ResponseWriter, r *http.Request) {
		kills.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	s := &Session{d: &Docker{cli: cli}, b: &box{id: "abc", exited: make(chan struct{})},
		readDone: make(chan struct{}), ended: make(chan struct{})}
	// Both ready at once, select would pick the deadline half the time.
	for i := range 40 {
		c := newCall(newCallProtocol(1, 1, 1), 1024, false)
		close(c.acked)
		close(c.done)
		cr := &callRun{s: s, c: c, log: slog.New(slog.DiscardHandler)}
		deadline := make(chan time.Time, 1)
		deadline <- time.Now()
		if how := cr.watch(context.Background(), deadline); how != endedCall || cr.timedOut {
			t.Fatalf("round %d: outcome %v timed out %v, want %v", i, how, cr.timedOut, endedCall)
		}
	}
	if n := kills.Load(); n != 0 {
		t.Errorf("%d interrupts sent to calls that had ended", n)
	}
}
