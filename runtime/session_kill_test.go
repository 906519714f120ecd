package runtime

import (
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// The ways a call ends that are not its program's own end: the interrupt at
// its timeout, the kill after the grace, the container dying under it.

// sessionTimeout is the time limit of these tests' calls.
const sessionTimeout = time.Second

func TestSessionTimeoutInterrupts(t *testing.T) {
	eachSessionMode(t, func(t *testing.T, mods ...func(*Config)) {
		d := mustDocker(t, append(mods, func(c *Config) { c.Timeout = sessionTimeout })...)
		s := mustSession(t, d)
		mustCall(t, s, "x = 5")
		for _, code := range []string{
			"print('spinning', flush=True)\nwhile True:\n    pass",
			"import time\nprint('spinning', flush=True)\ntime.sleep(60)",
			// A loop in the value's repr is interrupted too.
			"class R:\n    def __repr__(self):\n        while True:\n            pass\nprint('spinning', flush=True)\nR()",
		} {
			res := mustCall(t, s, code)
			if res.Status != sandboxd.StatusTimeout || !res.TimedOut || res.ExitCode != 130 || res.Stdout != "spinning\n" ||
				!strings.Contains(res.Stderr, "KeyboardInterrupt") || strings.Contains(res.Stderr, "run.py") || res.Ended {
				t.Fatalf("%q: status %q exit %d ended %v (%s) stdout %q stderr %q", code, res.Status, res.ExitCode,
					res.Ended, res.EndReason, res.Stdout, res.Stderr)
			}
			// The promise: answered within the grace after the timeout
			// (generously: a loaded host, gVisor).
			if late := sessionTimeout + interruptGrace + time.Second; res.Duration < sessionTimeout || res.Duration > late {
				t.Errorf("%q: answered after %s, want within [%s, %s]", code, res.Duration, sessionTimeout, late)
			}
			checkCall(t, mustCall(t, s, "x"), want{status: sandboxd.StatusOK}, "5")
		}
	})
}

func TestSessionInterruptIgnoredKills(t *testing.T) {
	eachSessionMode(t, func(t *testing.T, mods ...func(*Config)) {
		d := mustDocker(t, append(mods, func(c *Config) { c.Timeout = sessionTimeout })...)
		s := mustSession(t, d)
		res := mustCall(t, s, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('deaf', flush=True)\nwhile True:\n    pass")
		if res.Status != sandboxd.StatusTimeout || !res.TimedOut || res.Stdout != "deaf\n" || !res.Ended ||
			!strings.Contains(res.EndReason, "did not come back from the interrupt") {
			t.Fatalf("status %q ended %v (%q) stdout %q", res.Status, res.Ended, res.EndReason, res.Stdout)
		}
		if late := sessionTimeout + interruptGrace + 2*time.Second; res.Duration > late {
			t.Errorf("answered after %s, want within %s", res.Duration, late)
		}
		assertEnded(t, s, "interrupt")
		assertSessionGone(t, d, s)
	})
}

// assertSessionGone fails the test when the session's container is left
// once its removal is done.
func assertSessionGone(tb testing.TB, d *Docker, s *Session) {
	tb.Helper()
	settle(tb, d)
	for _, c := range instanceContainers(tb, d) {
		if c.ID == s.b.id {
			tb.Errorf("the session's container %s is left (%s)", shortID(c.ID), c.State)
		}
	}
}

func TestSessionContainerDies(t *testing.T) {
	eachSessionMode(t, func(t *testing.T, mods ...func(*Config)) {
		d := mustDocker(t, mods...)
		tests := []struct {
			name, code string
			w          want
			reason     string
		}{
			{"os._exit", "import os\nprint('going', flush=True)\nos._exit(3)", want{stdout: "going\n", exit: 3, status: sandboxd.StatusError}, "exit status 3"},
			{"oom", sharedBomb, want{stdout: "allocating\n", exit: 137, status: sandboxd.StatusOOM, oom: true}, "OOM"},
			{"segfault", "import ctypes\nprint('before', flush=True)\nctypes.string_at(0)", want{stdout: "before\n", exit: 139, status: sandboxd.StatusError}, "exit status 139"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := mustSession(t, d)
				mustCall(t, s, "x = 1")
				res := mustCall(t, s, tt.code)
				if tt.name == "oom" && res.TimedOut && !res.Ended {
					// On a loaded host the kernel may reclaim for longer
					// than the call's limit before its OOM killer acts:
					// interrupted, the session lives; a right answer too.
					t.Logf("the bomb was interrupted at the timeout before the OOM killer came: %q", res.Stderr)
					return
				}
				check(t, res.Result, tt.w)
				if !res.Ended || !strings.Contains(res.EndReason, tt.reason) {
					t.Errorf("ended %v (%q), want the session ended saying %q", res.Ended, res.EndReason, tt.reason)
				}
				assertEnded(t, s, tt.reason)
				select {
				case <-res.Gone:
				case <-time.After(30 * time.Second):
					t.Error("the ended session's Gone did not close")
				}
				if _, err := s.Run(t.Context(), sandboxd.Job{ID: jobID(t), Code: "x"}); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
					t.Errorf("a call after the end: %v, want CodeUnavailable", err)
				}
				assertSessionGone(t, d, s)
			})
		}
	})
}

func TestSessionMemoryErrorLives(t *testing.T) {
	d := mustDocker(t, func(c *Config) { c.PoolSize = 1 })
	s := mustSession(t, d)
	mustCall(t, s, "x = 7")
	res := mustCall(t, s, "b = b'x' * (1 << 30)")
	if res.Status != sandboxd.StatusError || !strings.Contains(res.Stderr, "MemoryError") || res.Ended {
		t.Fatalf("status %q ended %v stderr %q", res.Status, res.Ended, res.Stderr)
	}
	checkCall(t, mustCall(t, s, "x"), want{status: sandboxd.StatusOK}, "7")
}
