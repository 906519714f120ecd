package runtime

import (
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// Every limit of the container, proven by a program that tries to break it.

func TestLimitTimeout(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode) // the real 5 s limit
		res := mustRun(t, d, "print('spinning', flush=True)\nwhile True:\n    pass\n")
		check(t, res, want{stdout: "spinning\n", exit: 137, status: sandboxd.StatusTimeout, timedOut: true})
		// The promise: a deadline kill is answered within half a
		// second of the deadline. Duration runs from the hand-over to the
		// complete answer, so it leaves out the time spent getting a
		// container, which on a loaded host is the host's cost, not ours.
		limit, late := d.cfg.Timeout, d.cfg.Timeout+500*time.Millisecond
		if res.Duration < limit || res.Duration > late {
			t.Errorf("Duration = %s, want within [%s, %s]", res.Duration, limit, late)
		}
		assertGone(t, d, jobID(t))
	})
}

func TestLimitTimeoutWithOutputClosed(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode, func(c *Config) { c.Timeout = time.Second })
		// The output stream ends at once; the program runs on.
		res := mustRun(t, d, "import os\nos.close(1)\nos.close(2)\nwhile True:\n    pass\n")
		check(t, res, want{exit: 137, status: sandboxd.StatusTimeout, timedOut: true})
		assertGone(t, d, jobID(t))
	})
}

func TestLimitOutput(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		tests := []struct {
			name, code string
			stream     func(sandboxd.Result) (flooded, other string)
		}{
			{"stdout", "while True:\n    print('x' * 99)\n", func(r sandboxd.Result) (string, string) { return r.Stdout, r.Stderr }},
			{"stderr", "import sys\nprint('hi')\nwhile True:\n    sys.stderr.write('y' * 100)\n", func(r sandboxd.Result) (string, string) { return r.Stderr, r.Stdout }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := mustRun(t, d, tt.code)
				flooded, other := tt.stream(res)
				if len(flooded) != int(d.cfg.MaxOutputBytes) {
					t.Errorf("kept %d bytes, want exactly the cap %d", len(flooded), d.cfg.MaxOutputBytes)
				}
				if strings.Trim(flooded, "xy\n") != "" {
					t.Errorf("flooded stream holds something else than the flood")
				}
				if wantOther := map[string]string{"stdout": "", "stderr": "hi\n"}[tt.name]; other != wantOther {
					t.Errorf("other stream = %q, want %q", other, wantOther)
				}
				if res.Status != sandboxd.StatusOutputLimit || !res.Truncated || res.TimedOut || res.ExitCode != 137 {
					t.Errorf("status %q truncated %v timed_out %v exit %d, want output_limit, true, false, 137",
						res.Status, res.Truncated, res.TimedOut, res.ExitCode)
				}
				// The promise: an output-cap kill is answered
				// within a second of the program's start (of the hand-over).
				if res.Duration > time.Second {
					t.Errorf("Duration = %s, want at most 1s", res.Duration)
				}
				assertGone(t, d, jobID(t))
			})
		}
	})
}

// sharedBomb fills a shared anonymous mapping, which RLIMIT_DATA does not
// count but the cgroup does: a bomb only the kernel's OOM killer stops.
const sharedBomb = "import mmap\nprint('allocating', flush=True)\nm = mmap.mmap(-1, 1 << 30)\n" +
	"for i in range(0, len(m), 4096):\n    m[i] = 1\nprint('survived')\n"

func TestLimitMemory(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		// One process's allocation past the data limit fails at once.
		res := mustRun(t, d, "print('allocating', flush=True)\nb = b'x' * (1 << 30)\nprint('survived')\n")
		if err := oomOrMemoryError(res); err != nil || res.Status != sandboxd.StatusError || res.Stdout != "allocating\n" {
			t.Errorf("bomb: status %q exit %d stdout %q stderr %.200q, want MemoryError", res.Status, res.ExitCode, res.Stdout, res.Stderr)
		}
		// Memory the data limit does not count meets the cgroup's limit.
		res = mustRun(t, d, sharedBomb)
		check(t, res, want{stdout: "allocating\n", exit: 137, status: sandboxd.StatusOOM, oom: true})
		check(t, mustRun(t, d, "print(1)"), want{stdout: "1\n", status: sandboxd.StatusOK})
	})
}

func TestLimitDataSetByTheRunner(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		// Soft and hard (the program cannot raise it), inherited by a
		// child, and the variable that carried it is gone.
		code := "import os, resource\nprint(resource.getrlimit(resource.RLIMIT_DATA), 'SANDBOX_DATA_LIMIT' in os.environ)\n" +
			"if os.fork() == 0:\n    try:\n        b = bytearray(1 << 30)\n    except MemoryError:\n        print('child: MemoryError', flush=True)\n" +
			"    os._exit(0)\nos.wait()\n"
		check(t, mustRun(t, d, code), want{stdout: "(100663296, 100663296) False\nchild: MemoryError\n", status: sandboxd.StatusOK})
	})
}

func TestLimitExit137IsNotOOM(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		// 137 alone is not an OOM: only the kernel's flag makes one.
		res := mustRun(t, d, "import sys\nsys.exit(137)\n")
		check(t, res, want{exit: 137, status: sandboxd.StatusError})
	})
}

func TestLimitPids(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		// Forks until the kernel refuses: 63 children and the runner make 64.
		code := "import os, errno, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n" +
			"            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n" +
			"    print(errno.errorcode[e.errno], n)\n"
		res := mustRun(t, d, code)
		check(t, res, want{stdout: "EAGAIN 63\n", status: sandboxd.StatusOK})
		assertGone(t, d, jobID(t))
	})
}

func TestLimitForkBomb(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode, func(c *Config) { c.Timeout = 2 * time.Second })
		res := mustRun(t, d, "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
		check(t, res, want{exit: 137, status: sandboxd.StatusTimeout, timedOut: true})
		// Answered within half a second of the deadline (the promise), 64
		// processes to kill or not; Duration leaves out getting a container.
		if late := d.cfg.Timeout + 500*time.Millisecond; res.Duration > late {
			t.Errorf("answered %s after the hand-over, want at most %s", res.Duration, late)
		}
		assertGone(t, d, jobID(t))
		check(t, mustRun(t, d, "print(1)"), want{stdout: "1\n", status: sandboxd.StatusOK})
	})
}

func TestLimitReadOnlyRoot(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		code := "import errno\nfor path in ['/x', '/etc/x', '/var/tmp/x', '/opt/sandbox/run.py']:\n    try:\n" +
			"        open(path, 'a').close()\n        print(path, 'written')\n    except OSError as e:\n" +
			"        print(path, errno.errorcode[e.errno])\n"
		res := mustRun(t, d, code)
		// /var/tmp is world-writable: only the read-only root stops it. The
		// runner belongs to root: permissions stop it first.
		check(t, res, want{stdout: "/x EROFS\n/etc/x EROFS\n/var/tmp/x EROFS\n/opt/sandbox/run.py EACCES\n", status: sandboxd.StatusOK})
	})
}

func TestLimitTmpfs(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		t.Run("writable up to its size", func(t *testing.T) {
			code := "import errno\ntotal, i = 0, 0\ntry:\n    while True:\n" +
				"        with open(f'/tmp/f{i}', 'wb', buffering=0) as f:\n            for _ in range(4):\n" +
				"                total += f.write(b'x' * (1 << 20))\n        i += 1\nexcept OSError as e:\n" +
				"    print(errno.errorcode[e.errno], total >> 20, 'MiB')\n"
			check(t, mustRun(t, d, code), want{stdout: "ENOSPC 16 MiB\n", status: sandboxd.StatusOK})
		})
		t.Run("no file past the size", func(t *testing.T) {
			code := "import errno\ntotal = 0\ntry:\n    with open('/tmp/big', 'wb', buffering=0) as f:\n" +
				"        while True:\n            total += f.write(b'x' * (1 << 20))\nexcept OSError as e:\n" +
				"    print(errno.errorcode[e.errno], total >> 20, 'MiB')\n"
			check(t, mustRun(t, d, code), want{stdout: "EFBIG 16 MiB\n", status: sandboxd.StatusOK})
		})
		t.Run("not executable", func(t *testing.T) {
			code := "import shutil, os, subprocess, errno\nshutil.copy('/bin/true', '/tmp/t')\nos.chmod('/tmp/t', 0o755)\n" +
				"try:\n    subprocess.run(['/tmp/t'])\n    print('executed')\nexcept OSError as e:\n" +
				"    print(errno.errorcode[e.errno])\n"
			check(t, mustRun(t, d, code), want{stdout: "EACCES\n", status: sandboxd.StatusOK})
		})
	})
}

func TestLimitIdentity(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		code := "keep = ('Uid', 'Gid', 'Groups', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs')\n" +
			"for line in open('/proc/self/status'):\n    if line.split(':')[0] in keep:\n        print(line.rstrip())\n" +
			"import resource\nprint(resource.getrlimit(resource.RLIMIT_NOFILE))\n"
		res := mustRun(t, d, code)
		check(t, res, want{
			stdout: "Uid:\t10001\t10001\t10001\t10001\nGid:\t10001\t10001\t10001\t10001\nGroups:\t10001\n" +
				"CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n" +
				"CapAmb:\t0000000000000000\nNoNewPrivs:\t1\n(256, 256)\n",
			status: sandboxd.StatusOK,
		})
	})
}

func TestLimitBackgroundChild(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		tests := []struct{ name, code string }{
			{"popen", "import subprocess\nsubprocess.Popen(['sh', '-c', 'while true; do sleep 1; echo tick; done'])\nprint('parent done')\n"},
			{"fork", "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    print('child woke')\nelse:\n    print('parent done')\n"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := mustRun(t, d, tt.code)
				check(t, res, want{stdout: "parent done\n", status: sandboxd.StatusOK})
				// Waiting for the child would last until the deadline;
				// how much sooner the answer comes is the host's load.
				if res.Duration >= d.cfg.Timeout {
					t.Errorf("answered %s after the hand-over: it waited for the child", res.Duration)
				}
				assertGone(t, d, jobID(t))
			})
		}
	})
}

// TestLimitCoreDumps: the core limit is 0, soft and hard, and a program
// cannot raise it back.
func TestLimitCoreDumps(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		code := "import resource\nprint(resource.getrlimit(resource.RLIMIT_CORE))\n" +
			"for limits in [(resource.RLIM_INFINITY, resource.RLIM_INFINITY), (1 << 20, 1 << 20)]:\n" +
			"    try:\n        resource.setrlimit(resource.RLIMIT_CORE, limits)\n        print('raised', limits)\n" +
			"    except (ValueError, OSError) as e:\n        print('refused', type(e).__name__)\n" +
			"print(resource.getrlimit(resource.RLIMIT_CORE))\n"
		res := mustRun(t, d, code)
		check(t, res, want{stdout: "(0, 0)\nrefused ValueError\nrefused ValueError\n(0, 0)\n", status: sandboxd.StatusOK})
	})
}
