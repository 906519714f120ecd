package runtime

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// daemonProxy stands between a runner and the Docker socket; cutting it
// looks, to the runner, like dockerd going away: every connection drops and
// no new one is accepted, until it is restored.
type daemonProxy struct {
	path, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

// mustDaemonProxy starts a proxy to the local Docker socket, stopped when the
// test ends.
func mustDaemonProxy(t *testing.T) *daemonProxy {
	t.Helper()
	p := &daemonProxy{path: filepath.Join(t.TempDir(), "docker.sock"), target: dockerSocket(t), conns: map[net.Conn]bool{}}
	p.restore(t)
	t.Cleanup(p.cut)
	return p
}

// dockerSocket is the path of the Docker socket that DOCKER_HOST names (the
// default one when unset); a test that needs it skips when it is no unix
// socket.
func dockerSocket(t *testing.T) string {
	t.Helper()
	h := os.Getenv("DOCKER_HOST")
	if h == "" {
		return "/var/run/docker.sock"
	}
	if !strings.HasPrefix(h, "unix://") {
		t.Skipf("DOCKER_HOST %s is no unix socket", h)
	}
	return strings.TrimPrefix(h, "unix://")
}

// restore listens again.
func (p *daemonProxy) restore(t *testing.T) {
	t.Helper()
	_ = os.Remove(p.path)
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go serveEach(ln, p.serve)
}

// serveEach serves every connection ln accepts on its own goroutine, until
// ln is closed.
func serveEach(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go serve(c)
	}
}

// serve copies one connection both ways to the real socket.
func (p *daemonProxy) serve(c net.Conn) {
	up, err := net.Dial("unix", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	// Half-closes pass through: the runner closes its write side after the
	// program, and still reads the output.
	go func() { _, _ = io.Copy(up, c); _ = up.(*net.UnixConn).CloseWrite() }()
	_, _ = io.Copy(c, up)
	c.Close()
	up.Close()
}

// cut closes the listener and every connection.
func (p *daemonProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	_ = os.Remove(p.path)
}

func TestDaemonGoneAndBack(t *testing.T) {
	mustDocker(t) // the real daemon must answer
	proxy := mustDaemonProxy(t)
	t.Setenv("DOCKER_HOST", "unix://"+proxy.path)
	d := mustDocker(t, pooled(2), func(c *Config) { c.Timeout = 30 * time.Second })
	d.pool.start()
	settle(t, d)

	// A run in flight when the daemon goes is the service's failure.
	done := startSleeper(t, context.Background(), d)
	proxy.cut()
	if err := await(t, done, 10*time.Second); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Errorf("the run in flight ended with %v, want CodeUnavailable", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := d.Run(ctx, sandboxd.Job{ID: jobID(t), Code: "print(1)"}); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable ||
		!strings.Contains(sandboxd.ErrorMessage(err), "Docker is unreachable") {
		t.Errorf("a run while the daemon is gone: %v, want CodeUnavailable naming Docker", err)
	}
	if err := d.Health(ctx); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Errorf("Health while the daemon is gone: %v", err)
	}

	// Back: runs answer at once, the pool refills, and every container of
	// the runs and the pool from before is removed.
	proxy.restore(t)
	back := time.Now()
	for {
		res, err := d.Run(ctx, sandboxd.Job{ID: jobID(t), Code: "print('back')"})
		if err == nil && res.Stdout == "back\n" {
			break
		}
		if time.Since(back) > 5*time.Second {
			t.Fatalf("no answer within 5 s of the daemon coming back: %+v %v", res, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("answering again %v after the daemon came back", time.Since(back).Round(time.Millisecond))
	assertGone(t, d, jobID(t))
}
