package runtime

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// removalGate stands between a runner and the Docker socket and holds every
// container removal (DELETE /containers/…) until it is opened; every other
// call passes, attach's hijacked streams and their half-closes included.
type removalGate struct {
	path, target string
	open         chan struct{}
	once         sync.Once
	// held counts the removals that reached the gate.
	held atomic.Int32
}

// mustRemovalGate starts a gate in front of the local Docker socket, opened
// and closed when the test ends.
func mustRemovalGate(t *testing.T) *removalGate {
	t.Helper()
	g := &removalGate{path: filepath.Join(t.TempDir(), "docker.sock"), target: dockerSocket(t), open: make(chan struct{})}
	ln, err := net.Listen("unix", g.path)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	go serveEach(ln, g.serve)
	t.Cleanup(func() {
		g.release()
		ln.Close()
	})
	return g
}

// release lets the removals held, and every later one, through.
func (g *removalGate) release() { g.once.Do(func() { close(g.open) }) }

// serve passes one connection on: its requests one at a time (the client
// sends the next only once answered), holding removals, and the answers as
// bytes. After a request that upgrades the connection (attach), what the
// client writes is its stream, copied as bytes.
func (g *removalGate) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("unix", g.target)
	if err != nil {
		return
	}
	defer up.Close()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		_, _ = io.Copy(c, up)
	}()
	in := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(in)
		if err != nil {
			break
		}
		if req.Method == http.MethodDelete && strings.Contains(req.URL.Path, "/containers/") {
			g.held.Add(1)
			<-g.open
		}
		upgrade := req.Header.Get("Upgrade") != ""
		if err := req.Write(up); err != nil {
			break
		}
		if upgrade {
			_, _ = io.Copy(up, in)
			break
		}
	}
	_ = up.(*net.UnixConn).CloseWrite()
	<-answered // the daemon closes its side once done
}

// TestGoneOnceTheContainerStops proves that a run's Gone, which its sandbox
// slot waits for (sandboxd.Result.Gone), closes once its container has
// stopped, not after the removal: on a slow host under load a removal took
// up to a second after the stop, and the slots held through it queued the
// next runs of a burst at admission (admit 117-329 ms in the
// slowest answers at 60 % of the ceiling). Both a program that ends and one
// killed at its deadline; the removals are held at the gate meanwhile, and
// go through once it opens.
func TestGoneOnceTheContainerStops(t *testing.T) {
	mustDocker(t) // the real daemon must answer
	g := mustRemovalGate(t)
	t.Setenv("DOCKER_HOST", "unix://"+g.path)
	d := mustDocker(t, func(c *Config) { c.Timeout = 2 * time.Second })
	for _, tc := range []struct{ name, code string }{
		{"ended", "print('hello')"},
		{"killed at its deadline", "while True: pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustRun(t, d, tc.code)
			if res.Gone == nil {
				t.Fatal("the result has no Gone")
			}
			select {
			case <-res.Gone:
			case <-time.After(30 * time.Second):
				t.Fatalf("Gone still open 30 s after the answer (status %s), with the removal held (%d removals at the gate)",
					res.Status, g.held.Load())
			}
			list := containersOf(t, d, jobID(t))
			if len(list) != 1 || list[0].State != "exited" {
				t.Fatalf("when Gone closed, the job's containers were %+v: want one, exited, its removal held", list)
			}
		})
	}
	// A removal follows the stop (after a kill of ours, once its call
	// returns), so the last one may reach the gate just after its Gone.
	for end := time.Now().Add(30 * time.Second); g.held.Load() < 2 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := g.held.Load(); n < 2 {
		t.Errorf("%d removals reached the gate in 30 s, want both runs': the test proves nothing", n)
	}
	g.release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.WaitRemovals(ctx); err != nil {
		t.Fatalf("the removals after the gate opened: %v", err)
	}
	for _, name := range []string{"ended", "killed_at_its_deadline"} {
		if list := containersOf(t, d, t.Name()+"_"+name); len(list) > 0 {
			t.Errorf("job %s left %d container(s) once its removal went through", name, len(list))
		}
	}
}
