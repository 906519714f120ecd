package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// service is a sandboxd process the soak started.
type service struct {
	cmd    *exec.Cmd
	url    string
	exited chan struct{}

	mu     sync.Mutex
	errors []string
	waited error

	stopOnce sync.Once
	stopErr  error
}

// listenLine is the log line that says where the service listens.
var listenLine = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startService starts the binary in free mode on a free loopback port,
// with max_concurrency and the run timeout of the soak and its own
// instance label, and waits until it listens.
func startService(ctx context.Context, o options, instance string) (*service, error) {
	s := &service{exited: make(chan struct{})}
	s.cmd = exec.Command(o.binary, "serve", "--config", o.config)
	s.cmd.Env = append(os.Environ(),
		"SANDBOX_SERVER_ADDR=127.0.0.1:0",
		"SANDBOX_SERVER_METRICS_ADDR=127.0.0.1:0",
		"SANDBOX_PAYMENTS_ENABLED=false",
		"SANDBOX_RUNTIME_INSTANCE="+instance,
		fmt.Sprintf("SANDBOX_RUNTIME_MAX_CONCURRENCY=%d", o.concurrency),
		fmt.Sprintf("SANDBOX_RUNTIME_POOL_SIZE=%d", o.pool),
		"SANDBOX_RUNTIME_TIMEOUT="+o.runTimeout.String(),
	)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.binary, err)
	}
	addr := make(chan string, 1)
	go s.readLog(bufio.NewScanner(stderr), addr)
	select {
	case a := <-addr:
		s.url = "http://" + a
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("sandboxd exited at start: %v; its errors: %s", s.waited, strings.Join(s.errorLines(), " | "))
	case <-time.After(60 * time.Second):
		_ = s.stop()
		return nil, fmt.Errorf("sandboxd did not listen within 60 s")
	case <-ctx.Done():
		_ = s.stop()
		return nil, ctx.Err()
	}
}

// readLog scans the service's log: it reports the listen address once and
// keeps every warning and error line; when the log ends it reaps the process.
func (s *service) readLog(sc *bufio.Scanner, addr chan<- string) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		if m := listenLine.FindStringSubmatch(line); m != nil && !sent {
			addr <- m[1]
			sent = true
		}
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
			s.mu.Lock()
			s.errors = append(s.errors, line)
			s.mu.Unlock()
		}
	}
	err := s.cmd.Wait()
	s.mu.Lock()
	s.waited = err
	s.mu.Unlock()
	close(s.exited)
}

// errorLines returns the warning and error lines logged so far.
func (s *service) errorLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errors...)
}

// pid is the service's process ID.
func (s *service) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM and waits for the exit (the service removes its
// containers on the way out), killing it after 60 s. It is safe to call
// more than once; the first call's result is kept.
func (s *service) stop() error {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(60 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.stopErr = fmt.Errorf("sandboxd did not stop within 60 s of SIGTERM; killed")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.waited != nil {
			s.stopErr = fmt.Errorf("sandboxd exited with %v after SIGTERM", s.waited)
		}
	})
	return s.stopErr
}
