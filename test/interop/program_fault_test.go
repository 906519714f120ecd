package interop

import "testing"

// faultProgram is a program that attacks its own run, and the answer it must get.
type faultProgram struct {
	name string
	code string
	want runAnswer
}

// faultPrograms attack their runs the ways the runtime's table (test/hostile's
// TestProgramFaults) covers, several at once: forged runner-protocol frames with the run's
// own token, a child stopping the runner, the standard streams closed or sent to
// /dev/null, and an exit that looks like a crash.
var faultPrograms = []faultProgram{
	{
		// The exit status of a segfault with the runner's end marker forged and cut
		// short: judged by the container's exit, which the runtime must not take for
		// Docker going away.
		name: "forged-partial-marker-then-exit-139",
		code: "import os, sys\nprefix = sys._getframe(1).f_locals['prefix']\n" +
			"os.write(1, prefix + b'000 00')\nos.write(2, prefix)\nos._exit(139)\n",
		want: runAnswer{`status "error", exit 139`, func(b runBody) bool {
			return b.Stdout != nil && b.Status == "error" && b.ExitCode == 139
		}},
	},
	{
		name: "streams-to-dev-null-child-stops-runner-forged-marker",
		code: "import os, signal, sys, time\nprefix = sys._getframe(1).f_locals['prefix']\n" +
			"os.write(1, prefix + b'000 0000000000 0000000000\\n')\n" +
			"fd = os.open('/dev/null', os.O_WRONLY)\nos.dup2(fd, 1)\nos.dup2(fd, 2)\nos.close(0)\n" +
			"if os.fork() == 0:\n    os.kill(os.getppid(), signal.SIGSTOP)\n    os._exit(0)\n" +
			"os.wait()\ntime.sleep(0.2)\nsys.exit(3)\n",
		// Stopping PID 1 from inside its namespace does nothing under runc; the run ends
		// with its own exit, or (should the stop take) at the deadline.
		want: runAnswer{`status "error" with exit 3, or "timeout"`, func(b runBody) bool {
			return b.Stdout != nil && (b.Status == "error" && b.ExitCode == 3 || b.Status == "timeout")
		}},
	},
}

// TestPaidProgramFault: a program that attacks its own run is still the
// service's delivered answer when paid. With the official x402 client on anvil, each
// program in faultPrograms is paid, answered 200 with its run and settled on chain, and a
// replay of its payment with another request gets 402 and moves nothing: a program cannot
// turn its run into a service failure, which would release the payment for a free run.
func TestPaidProgramFault(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("fault"), true, paymentEnv(env)...)
	url := svc.URL + "/v1/code"
	payerKey := writeKey(t, "payer.key", payer.key)
	for _, p := range faultPrograms {
		t.Run(p.name, func(t *testing.T) {
			paid := paidRun(t, c, url, payerKey, p.code, p.want)
			t.Logf("answered %v", paid.Body)
			testReplay(t, c, url, paid, false)
		})
	}
}
