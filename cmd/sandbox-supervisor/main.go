// Command sandbox-supervisor is PID 1 of every sandbox image
// (/opt/sandbox/supervisor): it serves the host's runner protocol on its
// link and runs each language as a stub (internal/supervisor). Run as
// "sandbox-supervisor exec --stack=N -- argv…" it is the step that starts a
// stub: limits set, then the stub executed in its place.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"sandboxd/internal/runnerproto"
	"sandboxd/internal/supervisor"
)

// The image's paths.
const (
	root = "/tmp"
	shm  = "/dev/shm"
	proc = "/proc"
	self = "/proc/self/exe"
	// dataLimitEnv is the data limit the host hands over, in bytes.
	dataLimitEnv = "SANDBOX_DATA_LIMIT"
	// defaultPath is a stub's PATH when the image sets none.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// main exits with the supervisor's status.
func main() {
	os.Exit(run())
}

// run is the supervisor or its exec step, and returns the exit status.
func run() int {
	if len(os.Args) > 1 && os.Args[1] == supervisor.ExecCommand {
		err := supervisor.Exec(os.Args[2:])
		fmt.Fprintf(os.Stderr, "sandbox-supervisor: %v\n", err)
		return 126
	}
	// First: a process of the same uid can then read neither the token
	// nor the link through /proc/1.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-supervisor: not dumpable: %v\n", err)
		return 2
	}
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, syscall.SIGINT)
	ignoreSignals()
	link, err := supervisor.Connect(os.Getenv(supervisor.IOEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-supervisor: %v\n", err)
		return 2
	}
	data, _ := strconv.ParseInt(os.Getenv(dataLimitEnv), 10, 64)
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	s := &supervisor.Supervisor{
		Link:       link,
		Stubs:      supervisor.Stubs,
		Languages:  strings.Split(os.Getenv(runnerproto.EnvLanguages), ","),
		Limits:     supervisor.Limits{Data: max(data, 0)},
		Self:       self,
		Env:        []string{"HOME=" + root, "LANG=C.UTF-8", "PATH=" + path},
		Root:       root,
		Shm:        shm,
		Proc:       proc,
		Interrupts: interrupts,
	}
	return s.Run(context.Background())
}

// ignoreSignals takes every catchable signal but SIGINT (the service's
// interrupt), SIGCHLD (the reaper's) and SIGURG (Go's scheduler) into a
// channel no one reads: as PID 1 the supervisor outlives a program's
// SIGTERM, and Go's runtime, which would exit on it, never sees it. A
// handler, unlike SIG_IGN, is reset at exec, so the stubs get the default
// dispositions.
func ignoreSignals() {
	sink := make(chan os.Signal, 1)
	signal.Notify(sink, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGPIPE, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGWINCH,
		syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGIO, syscall.SIGPWR)
}
