package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"sandboxd/internal/servicetest"
)

// service is a sandboxd process the soak started, with the warning and
// error lines it logged.
type service struct {
	*servicetest.Service

	mu     sync.Mutex
	errors []string
}

// startService starts the binary in free mode on a free loopback port,
// with max_concurrency and the run timeout of the soak and its own
// instance label, and waits until it listens.
func startService(ctx context.Context, o options, instance string) (*service, error) {
	s := &service{}
	sv, err := servicetest.Launch(ctx, servicetest.Options{
		Binary:   o.binary,
		Config:   o.config,
		Instance: instance,
		Env: []string{
			"SANDBOX_PAYMENTS_ENABLED=false",
			fmt.Sprintf("SANDBOX_RUNTIME_MAX_CONCURRENCY=%d", o.concurrency),
			fmt.Sprintf("SANDBOX_RUNTIME_POOL_SIZE=%d", o.pool),
			"SANDBOX_RUNTIME_TIMEOUT=" + o.runTimeout.String(),
			// python's programs only: the data and node environments'
			// warm containers would count as leaks.
			"SANDBOX_ENVIRONMENTS_DATA_ENABLED=false", "SANDBOX_ENVIRONMENTS_NODE_ENABLED=false",
		},
		OnLine: s.keepErrors,
	})
	if err != nil {
		return nil, err
	}
	s.Service = sv
	return s, nil
}

// keepErrors keeps every warning and error line of the log.
func (s *service) keepErrors(line string) {
	if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
		s.mu.Lock()
		s.errors = append(s.errors, line)
		s.mu.Unlock()
	}
}

// errorLines returns the warning and error lines logged so far.
func (s *service) errorLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errors...)
}

// pid is the service's process ID.
func (s *service) pid() int { return s.Cmd.Process.Pid }

// stop sends SIGTERM and waits for the exit (the service removes its
// containers on the way out), killing it after 60 s. It is safe to call
// more than once; the first call's result is kept.
func (s *service) stop() error { return s.Stop(60 * time.Second) }
