package servicetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// The log lines that say where the service listens.
var (
	listenLine  = regexp.MustCompile(`msg=listening addr=(\S+)`)
	metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)
)

// Options says how to start the service.
type Options struct {
	// Binary is the sandboxd binary; Start builds one when it is empty.
	Binary string
	// Config is the configuration file, none when empty (Start uses the
	// module's config.yaml when it is empty).
	Config string
	// Instance is the runtime instance label: one per test, so tests never
	// reap or count each other's containers.
	Instance string
	// Env holds environment overrides, after the listen addresses and the
	// instance, so they win.
	Env []string
	// OnLine, when set, sees every log line as it is read.
	OnLine func(line string)
	// StartWithin bounds the wait for the listen line (default 60 s).
	StartWithin time.Duration
}

// Service is a sandboxd process started by Launch or Start.
type Service struct {
	// Cmd is the process; a test may signal it to try a crash or a stop.
	Cmd *exec.Cmd
	// URL is the base URL of the API listener, MetricsURL of the metrics
	// one (empty until its line is logged).
	URL        string
	Instance   string
	metricsURL string

	mu      sync.Mutex
	log     bytes.Buffer
	exited  chan struct{}
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// Launch starts the service on free loopback ports and waits until it logs
// where it listens. It never builds: o.Binary must be set.
func Launch(ctx context.Context, o Options) (*Service, error) {
	args := []string{"serve"}
	if o.Config != "" {
		args = append(args, "--config", o.Config)
	}
	s := &Service{Instance: o.Instance, exited: make(chan struct{})}
	s.Cmd = exec.Command(o.Binary, args...)
	s.Cmd.Env = append(os.Environ(), "SANDBOX_SERVER_ADDR=127.0.0.1:0", "SANDBOX_SERVER_METRICS_ADDR=127.0.0.1:0",
		"SANDBOX_RUNTIME_INSTANCE="+o.Instance)
	s.Cmd.Env = append(s.Cmd.Env, o.Env...)
	// The service dies with the process that started it, even a killed one.
	s.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := s.Cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s.Cmd.Stdout = s.Cmd.Stderr
	if err := s.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.Binary, err)
	}
	addr := make(chan string, 1)
	go s.read(bufio.NewScanner(out), addr, o.OnLine)
	within := o.StartWithin
	if within == 0 {
		within = 60 * time.Second
	}
	select {
	case a := <-addr:
		s.URL = "http://" + a
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("sandboxd exited at start: %v\n%s", s.waitErr, s.Log())
	case <-time.After(within):
		_ = s.Stop(10 * time.Second)
		return nil, fmt.Errorf("sandboxd did not listen within %v\n%s", within, s.Log())
	case <-ctx.Done():
		_ = s.Stop(10 * time.Second)
		return nil, ctx.Err()
	}
}

// read keeps the log, reports the listen address once and the metrics
// address, and reaps the process when the log ends.
func (s *Service) read(sc *bufio.Scanner, addr chan<- string, onLine func(string)) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.log.WriteString(line + "\n")
		if m := metricsLine.FindStringSubmatch(line); m != nil {
			s.metricsURL = "http://" + m[1]
		}
		s.mu.Unlock()
		if m := listenLine.FindStringSubmatch(line); m != nil && !sent {
			addr <- m[1]
			sent = true
		}
		if onLine != nil {
			onLine(line)
		}
	}
	err := s.Cmd.Wait()
	s.mu.Lock()
	s.waitErr = err
	s.mu.Unlock()
	close(s.exited)
}

// Log returns everything the service logged so far.
func (s *Service) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// MetricsURL returns the base URL of the metrics listener, or "" when it
// has not logged one.
func (s *Service) MetricsURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metricsURL
}

// Exited is closed once the process has ended and its log is read.
func (s *Service) Exited() <-chan struct{} { return s.exited }

// ExitCode is the process's exit code once Exited is closed (-1 for a
// signal).
func (s *Service) ExitCode() int { return s.Cmd.ProcessState.ExitCode() }

// Stop stops the service the way an operator does: SIGTERM, then a wait of
// at most within, then SIGKILL. It returns an error when the service had to
// be killed or exited with an error; a service already ended is no error.
// It is safe to call more than once; the first call's result is kept.
func (s *Service) Stop(within time.Duration) error {
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		_ = s.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(within):
			_ = s.Cmd.Process.Kill()
			<-s.exited
			s.stopErr = fmt.Errorf("sandboxd did not stop within %v of SIGTERM; killed", within)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.waitErr != nil {
			s.stopErr = fmt.Errorf("sandboxd exited with %v after SIGTERM", s.waitErr)
		}
	})
	return s.stopErr
}
