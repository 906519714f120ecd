package runtime

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

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
			engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			}))
			defer engine.Close()
			cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+engine.Listener.Addr().String()), client.WithVersion("1.41"))
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
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
