package hostile

import (
	"fmt"

	"sandboxd"
)

// processCases try to outlive the answer, hang it, or break exec.
func processCases(e environment) []hostileCase {
	setsid := answer{status: statuses(sandboxd.StatusOK), stdout: []string{"parent done\n"}, check: promptly(e)}
	stoppedChild := answer{status: statuses(sandboxd.StatusTimeout), exit: []int{137}, stdout: []string{"stopping\n"}}
	return []hostileCase{
		{
			// A daemon (double fork, setsid) and a child in its own session,
			// both holding stdout open, both running forever: the answer
			// still comes when the program itself ends, and neither survives.
			name: "setsid-background-children",
			code: "import os, subprocess, sys\n" +
				"sleeper = [sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)', '" + markerPlaceholder + "']\n" +
				"if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execv(sys.executable, sleeper)\n    os._exit(0)\n" +
				"os.wait()\nsubprocess.Popen(sleeper, start_new_session=True)\n" +
				"import time\ntime.sleep(0.5)\nprint('parent done')\n",
			want: setsid,
			per:  orRunscFailed(setsid),
		},
		{
			// The program is the container's PID 1, which Linux shields from
			// SIGSTOP sent inside its own namespace: it runs on. gVisor's
			// kernel stops it; it is then killed at the deadline.
			name:   "sigstop-self-as-pid1",
			code:   "import os, signal\nprint(os.getpid(), flush=True)\nos.kill(os.getpid(), signal.SIGSTOP)\nprint('not stopped')\n",
			killed: true,
			want:   answer{status: statuses(sandboxd.StatusOK), stdout: []string{"1\nnot stopped\n"}},
			per: map[string][]answer{
				"runsc": {{status: statuses(sandboxd.StatusTimeout), exit: []int{137}, stdout: []string{"1\n"}}},
			},
		},
		{
			// A child that stops itself while the parent waits for it: the
			// whole container is killed at the deadline, stopped or not.
			name: "sigstop-self-child",
			code: "import os, signal\npid = os.fork()\nif pid == 0:\n    print('stopping', flush=True)\n" +
				"    os.kill(os.getpid(), signal.SIGSTOP)\n    print('resumed')\nelse:\n    os.waitpid(pid, 0)\n",
			killed: true,
			want:   stoppedChild,
			per:    orRunscFailed(stoppedChild),
		},
		{
			name:   "close-stdout-then-loop",
			code:   "import os\nprint('closing', flush=True)\nos.close(1)\nos.close(2)\nwhile True:\n    pass\n",
			killed: true,
			want:   answer{status: statuses(sandboxd.StatusTimeout), exit: []int{137}, stdout: []string{"closing\n"}},
		},
		{
			name: "close-stdout-then-exit",
			code: "import os, sys, time\nprint('closing', flush=True)\nos.close(1)\nos.close(2)\ntime.sleep(0.5)\nsys.exit(3)\n",
			want: answer{status: statuses(sandboxd.StatusError), exit: []int{3}, stdout: []string{"closing\n"}, check: promptly(e)},
		},
		{
			// Arguments and environments past the kernel's limits: exec
			// refuses them, the program goes on and answers. gVisor refuses
			// them with another errno.
			name: "huge-argv-env",
			code: "import errno, os, sys\nbig = 'x' * 100000\ntries = [\n" +
				"    ('argv-total', [sys.executable, '-c', 'pass'] + [big] * 100, {}),\n" +
				"    ('argv-one', [sys.executable, '-c', 'pass', 'x' * (1 << 20)], {}),\n" +
				"    ('env-total', [sys.executable, '-c', 'pass'], {f'K{i}': big for i in range(100)}),\n]\n" +
				"for name, argv, env in tries:\n    try:\n        os.execve(sys.executable, argv, env)\n" +
				"    except OSError as e:\n        print(name, errno.errorcode[e.errno])\n",
			want: answer{status: statuses(sandboxd.StatusOK), stdout: []string{"argv-total E2BIG\nargv-one E2BIG\nenv-total E2BIG\n"}},
			per: map[string][]answer{
				"runsc": {{status: statuses(sandboxd.StatusOK), stdout: []string{"argv-total ENAMETOOLONG\nargv-one ENAMETOOLONG\nenv-total ENAMETOOLONG\n"}}},
			},
		},
	}
}

// selfKilled is the answer of a program that ends by its own SIGKILL after
// writing stdout: an error, exit 137, no timeout. An exit by a SIGKILL not
// the service's is answered after shutdownWindow (2 s, runtime/docker.go),
// the wait that tells it from an OOM and from dockerd's shutdown, so the
// answer comes after the program's end by that much: it is bound from the
// program's start, within the deadline (twice that under runsc, whose
// report of the exit lags on a loaded host), not from the hand-over as
// promptly's are. In CI a Bash kill-all under runsc was answered 5.6 s
// after its hand-over, 1.2 s of which before the program started and 2 s
// after it ended.
func selfKilled(e environment, stdout string) answer {
	return answer{status: statuses(sandboxd.StatusError), exit: []int{137}, stdout: []string{stdout}, within: e.timeout}
}

// promptly returns a check that a program that ended by itself (after
// about half a second) was answered before the environment's deadline:
// nothing it left behind (children holding its output open) was waited
// for, which would last until the kill. How much sooner depends on the
// host's load, so that is all it asserts.
func promptly(e environment) func(sandboxd.Result) []string {
	return func(res sandboxd.Result) []string {
		if res.Duration >= e.timeout {
			return []string{fmt.Sprintf("answered %s after the hand-over, at the %s deadline; it ended after about half a second", res.Duration, e.timeout)}
		}
		return nil
	}
}
