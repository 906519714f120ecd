package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ExecCommand is the supervisor's subcommand that starts a stub: the
// supervisor runs itself as "<self> exec --stack=<bytes> [--data=<bytes>]
// -- <argv…>", and
// Exec sets the stub's limits on that process and executes the stub in
// its place, so no instant of the stub runs without them.
const ExecCommand = "exec"

// Exec is the exec subcommand, given its arguments (after ExecCommand):
// it sets RLIMIT_STACK (when --stack is not 0) and RLIMIT_DATA (with
// --data, for a stub that is never ready, so never capped at ready), marks
// every descriptor
// past the stub's 0 to 4 close-on-exec (whatever the supervisor inherited) and oom_score_adj 1000 (so
// the kernel's OOM killer picks a stub or its children, never PID 1;
// raising needs no privilege; where the kernel refuses it, the stub runs
// anyway: the host still judges a kill), then executes argv. It returns
// only on an error.
func Exec(args []string) error {
	limits := map[string]int{"--stack=": unix.RLIMIT_STACK, "--data=": unix.RLIMIT_DATA}
	for len(args) > 0 && args[0] != "--" {
		flag, v, _ := strings.Cut(args[0], "=")
		resource, ok := limits[flag+"="]
		if !ok {
			return fmt.Errorf("supervisor exec: unknown argument %q", args[0])
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("supervisor exec: %s %q: %w", flag, v, err)
		}
		if n > 0 {
			if err := unix.Setrlimit(resource, &unix.Rlimit{Cur: n, Max: n}); err != nil {
				return fmt.Errorf("supervisor exec: %s: %w", flag, err)
			}
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return errors.New("supervisor exec: no command after --")
	}
	argv := args[1:]
	if err := closeExtra(); err != nil {
		return fmt.Errorf("supervisor exec: %w", err)
	}
	os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("supervisor exec: %w", err)
	}
	return fmt.Errorf("supervisor exec: %w", unix.Exec(path, argv, os.Environ()))
}

// closeExtra marks every descriptor from 5 on close-on-exec: a stub gets 0
// to 4 and nothing else.
func closeExtra() error {
	if unix.CloseRange(5, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	// Kernels before 5.11, and sandboxes without close_range.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= 5 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
