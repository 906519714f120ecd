package runtime

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// A session lives long, so its program attacks it across calls.

// writer starts a thread that prints a numbered line forever, between calls
// too.
const writer = "import threading, time\n" +
	"def spam():\n    n = 0\n    while True:\n        n += 1\n        print('spam', n, flush=True)\n        time.sleep(0.001)\n" +
	"threading.Thread(target=spam, daemon=True).start()\ntime.sleep(0.05)"

func TestSessionOutputBetweenCalls(t *testing.T) {
	eachSessionMode(t, func(t *testing.T, mods ...func(*Config)) {
		d := mustDocker(t, mods...)
		s := mustSession(t, d)
		res := mustCall(t, s, writer)
		if !strings.Contains(res.Stdout, "spam 1\n") {
			t.Fatalf("the thread's output during its call: %q", res.Stdout)
		}
		// The thread writes during calls and in the moments around the
		// freeze between them; a call's answer holds its own output, and
		// the thread's while it ran (a few lines), never what came between.
		for range 8 {
			time.Sleep(300 * time.Millisecond)
			res := mustCall(t, s, "print('mine')")
			if !strings.Contains(res.Stdout, "mine\n") || res.Status != sandboxd.StatusOK || res.Ended {
				t.Fatalf("status %q ended %v (%s) stdout %.200q", res.Status, res.Ended, res.EndReason, res.Stdout)
			}
			spam := 0
			for _, line := range strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n") {
				switch {
				case strings.HasPrefix(line, "spam "):
					spam++
				case line != "mine":
					t.Fatalf("a line no one wrote: %q", line)
				}
			}
			// Generous: a call of a few ms, on a host 4x slower.
			if most := 1 + int(res.Duration/time.Millisecond); spam > most+20 {
				t.Errorf("%d of the thread's lines in a call of %s: output between calls was attributed to it", spam, res.Duration)
			}
		}
		if res := mustCall(t, s, "1 + 1"); valueOf(res) != "2" || res.Status != sandboxd.StatusOK || res.Ended {
			t.Errorf("status %q value %s ended %v", res.Status, valueOf(res), res.Ended)
		}
	})
}

func TestSessionOutputBetweenCallsCapped(t *testing.T) {
	eachSessionMode(t, func(t *testing.T, mods ...func(*Config)) {
		d := mustDocker(t, mods...)
		s := mustSession(t, d)
		// A thread the call leaves behind keeps the output stream the call
		// had, and floods it whenever no call runs (the runner's own 1 is
		// /dev/null then), a moment after the runner's end marker. The
		// container is frozen soon after each call, so it floods in the
		// moments around the freeze and the thaw: the next calls end the
		// session. It may flood before the freeze, 5 ms after the marker:
		// on a loaded host (under runsc, in a run of .ci/run beside a CPU
		// hog) it passed the cap between calls before the first call's
		// answer was made, which then said the session had ended.
		res := mustCall(t, s, floodBetweenCalls)
		if res.Stdout != "left a thread\n" || res.Status != sandboxd.StatusOK {
			t.Fatalf("status %q stdout %q", res.Status, res.Stdout)
		}
		for n := 0; n < 20 && !res.Ended; n++ {
			var err error
			if res, err = s.Run(t.Context(), sandboxd.Job{ID: jobID(t), Code: "pass"}); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		assertEnded(t, s, "output")
		// Most often between calls; a flood that began before the
		// runner's end marker was written is the call's own output.
		if why := s.EndReason(); !strings.Contains(why, "output between calls") && !strings.Contains(why, "output cap") {
			t.Errorf("end reason %q", why)
		}
		t.Logf("ended: %s", s.EndReason())
		assertSessionGone(t, d, s)
	})
}

// floodBetweenCalls starts a thread that writes on a copy of the call's
// stdout whenever the runner's own 1 is /dev/null (no call runs).
const floodBetweenCalls = "import os, threading, time\nout = os.dup(1)\n" +
	"def flood():\n    while True:\n        if os.readlink('/proc/self/fd/1') != '/dev/null':\n" +
	"            time.sleep(0.001)\n            continue\n        time.sleep(0.005)\n" +
	"        while os.readlink('/proc/self/fd/1') == '/dev/null':\n            os.write(out, b'x' * 4096)\n" +
	"threading.Thread(target=flood, daemon=True).start()\nprint('left a thread')"

// forge prints an end marker of the call's own token (the runner's frame
// holds it) on the streams named, then prints on.
func forge(streams string) string {
	return "import sys\nprefix = sys._getframe(1).f_locals['call']['prefix'].decode()\n" +
		"fake = prefix + '000 0000000000 0000000000 0000000000 0 0 0000000000 0\\n'\n" +
		"for s in [" + streams + "]:\n    s.write(fake)\n    s.flush()\nprint('after the forgery', flush=True)\n" +
		"print('after the forgery', file=sys.stderr, flush=True)\nx = 'forged'"
}

func TestSessionForgedMarker(t *testing.T) {
	eachSessionMode(t, func(t *testing.T, mods ...func(*Config)) {
		d := mustDocker(t, mods...)
		t.Run("both", func(t *testing.T) {
			s := mustSession(t, d)
			// Both streams: the program ends its own call early; the rest
			// of it, and the runner's real marker, are output between calls.
			res := mustCall(t, s, forge("sys.stdout, sys.stderr"))
			if res.Status != sandboxd.StatusOK || res.Stdout != "" || res.Stderr != "" || res.Ended {
				t.Fatalf("status %q ended %v stdout %q stderr %q", res.Status, res.Ended, res.Stdout, res.Stderr)
			}
			checkCall(t, mustCall(t, s, "print('next')\nx"), want{stdout: "next\n", status: sandboxd.StatusOK}, "'forged'")
		})
		t.Run("stdout", func(t *testing.T) {
			s := mustSession(t, d)
			// One stream: the ends disagree; the session ends, cleanly.
			res := mustCall(t, s, forge("sys.stdout"))
			if !res.Ended {
				checkCall(t, mustCall(t, s, "print('next')"), want{stdout: "next\n", status: sandboxd.StatusOK}, "<none>")
				return
			}
			if strings.Contains(res.Stdout, "after the forgery") {
				t.Errorf("output after the forged end was the call's: %q", res.Stdout)
			}
			assertEnded(t, s, "not reported consistently")
		})
	})
}

// stealer starts a thread that reads the protocol's own stream (the
// runner's private copy of its stdin) for the next call's header: the read
// end of a pipe (the attach connection), or the first socket among the
// runner's private descriptors (its own sockets: stdin's copy is made
// first, stdout's and stderr's after).
const stealer = "import os, stat, threading, fcntl\n" +
	"def protocol(fd):\n    mode = os.fstat(fd).st_mode\n" +
	"    return stat.S_ISSOCK(mode) or (stat.S_ISFIFO(mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY)\n" +
	"fds = [fd for fd in range(3, 64) if os.path.exists('/proc/self/fd/%d' % fd) and protocol(fd)][:1]\n" +
	"def steal():\n    while True:\n        os.read(fds[0], 1)\n" +
	"threading.Thread(target=steal, daemon=True).start()\nlen(fds)"

func TestSessionStolenHeader(t *testing.T) {
	eachSessionMode(t, func(t *testing.T, mods ...func(*Config)) {
		d := mustDocker(t, append(mods, func(c *Config) { c.Timeout = sessionTimeout })...)
		s := mustSession(t, d)
		if res := mustCall(t, s, stealer); valueOf(res) != "1" {
			t.Fatalf("the protocol's stream was not found: %s %q", valueOf(res), res.Stderr)
		}
		// The next calls race the thread for the stream: each is answered
		// right (the runner read it whole) or ends the session (the thread
		// took part of it), within the wait for the ack; none is answered
		// with another's output, none hangs.
		for n := range 20 {
			began := time.Now()
			res := mustCall(t, s, fmt.Sprintf("print('call %d')", n))
			if took, most := time.Since(began), sessionTimeout+ackGrace+5*time.Second; took > most {
				t.Errorf("call %d took %s, want at most %s", n, took, most)
			}
			if res.Ended {
				if res.Stdout != "" {
					t.Errorf("call %d ended the session with output %q", n, res.Stdout)
				}
				assertSessionGone(t, d, s)
				return
			}
			if want := fmt.Sprintf("call %d\n", n); res.Stdout != want || res.Status != sandboxd.StatusOK {
				t.Fatalf("call %d: status %q stdout %q, want %q", n, res.Status, res.Stdout, want)
			}
		}
	})
}

func TestSessionFullTmp(t *testing.T) {
	d := mustDocker(t, func(c *Config) { c.PoolSize = 1 })
	s := mustSession(t, d)
	res := mustCall(t, s, "x = 3\nf = open('/tmp/fill', 'wb')\ntry:\n    while True:\n        f.write(b'x' * (1 << 20))\nexcept OSError as e:\n    print(type(e).__name__)")
	if res.Ended || res.Status != sandboxd.StatusOK {
		t.Fatalf("filling /tmp: status %q ended %v stdout %q stderr %q", res.Status, res.Ended, res.Stdout, res.Stderr)
	}
	// The next call runs (its files in cannot be written: its own error).
	checkCall(t, mustCall(t, s, "x"), want{status: sandboxd.StatusOK}, "3")
	res = mustCall(t, s, "print('ran')", sandboxd.File{Name: "in.txt", Content: []byte(strings.Repeat("y", 1<<20))})
	if res.Status != sandboxd.StatusError || !strings.Contains(res.Stderr, "cannot write the files in") || res.Ended {
		t.Errorf("files in over a full /tmp: status %q stderr %q ended %v", res.Status, res.Stderr, res.Ended)
	}
	checkCall(t, mustCall(t, s, "import os\nf.close()\nos.remove('/tmp/fill')\nx"), want{status: sandboxd.StatusOK}, "3")
}

func TestSessionForkBomb(t *testing.T) {
	d := mustDocker(t, func(c *Config) { c.PoolSize = 1; c.Timeout = 2 * time.Second })
	s := mustSession(t, d)
	mustCall(t, s, "x = 9")
	res := mustCall(t, s, "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass")
	if res.Status != sandboxd.StatusTimeout && !res.Ended {
		t.Fatalf("fork bomb: status %q ended %v", res.Status, res.Ended)
	}
	if !res.Ended {
		// The interpreter came back; its children are the session's own
		// now, and the next call still answers.
		res = mustCall(t, s, "x")
		if res.Ended {
			return
		}
		if valueOf(res) != "9" {
			t.Errorf("after the fork bomb: %s %q", valueOf(res), res.Stderr)
		}
	}
}
