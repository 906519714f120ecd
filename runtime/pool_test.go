package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sandboxd/internal/testenv"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"sandboxd"
)

// The warm pool: one program per container, size bound, refill, drain,
// dead containers, and the runner's end marker.

// pooled selects a pool of n containers.
func pooled(n int) func(*Config) {
	return func(c *Config) { c.PoolSize = n }
}

// usedCheck prints the container's hostname (its short ID) and whether an
// earlier program left a file in /tmp, then leaves one.
const usedCheck = "import os, socket\np = '/tmp/used'\nprint(socket.gethostname(), os.path.exists(p))\nopen(p, 'w').close()\n"

func TestPoolEveryRunGetsAFreshContainer(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		seen := map[string]bool{}
		for i := range 8 {
			res := mustRun(t, d, usedCheck)
			host, used, ok := strings.Cut(strings.TrimSpace(res.Stdout), " ")
			if !ok || used != "False" || res.Status != sandboxd.StatusOK {
				t.Fatalf("run %d: %+v; want a hostname and False", i, res)
			}
			if seen[host] {
				t.Errorf("run %d landed in container %s, which ran a program before", i, host)
			}
			seen[host] = true
		}
		if d.pool != nil {
			if st := d.pool.stats(); st.hits+st.waits != 8 || st.misses != 0 {
				t.Errorf("pool stats %+v, want every run served by the pool", st)
			}
		}
		assertGone(t, d, jobID(t))
	})
}

func TestPoolNeverExceedsItsSize(t *testing.T) {
	const size, runs, conc = 3, 12, 6
	d := mustDocker(t, pooled(size))
	stop := make(chan struct{})
	var worst poolStats
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			st := d.pool.stats()
			if st.idle+st.starting > worst.idle+worst.starting {
				worst = st
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for w := range conc {
		wg.Go(func() {
			for i := w; i < runs; i += conc {
				res, err := d.Run(context.Background(), sandboxd.Job{ID: fmt.Sprintf("%s-%d", jobID(t), i), Code: fmt.Sprintf("print(%d)", i)})
				if err == nil && res.Stdout != fmt.Sprintf("%d\n", i) {
					err = fmt.Errorf("run %d: %+v", i, res)
				}
				errs <- err
			}
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if worst.idle+worst.starting > size {
		t.Errorf("the pool held %d idle and %d starting containers, over its size %d", worst.idle, worst.starting, size)
	}
	idle := settle(t, d)
	if list := instanceContainers(t, d); len(list) != size || len(idle) != size {
		t.Errorf("after the runs: %d containers of the instance, %d idle; want %d and %d", len(list), len(idle), size, size)
	}
}

func TestPoolRefillsAfterUse(t *testing.T) {
	d := mustDocker(t, pooled(2))
	d.pool.start()
	before := settle(t, d)
	res := mustRun(t, d, usedCheck)
	host := strings.Fields(res.Stdout)[0]
	after := settle(t, d)
	if len(after) != 2 {
		t.Fatalf("%d idle containers after the refill, want 2", len(after))
	}
	var used string
	for id := range before {
		if strings.HasPrefix(id, host) {
			used = id
		}
	}
	if used == "" {
		t.Fatalf("the run's container %s was not one of the pool's %v", host, slices.Collect(maps.Keys(before)))
	}
	if after[used] {
		t.Errorf("the used container %s is back in the pool", host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.cli.ContainerInspect(ctx, used); !cerrdefs.IsNotFound(err) {
		t.Errorf("the used container %s still exists (inspect: %v)", host, err)
	}
	assertGone(t, d, jobID(t))
}

func TestPoolCloseDrains(t *testing.T) {
	// A pool closed at any point of its filling leaves no container: not
	// even one whose create was on its way when Close came.
	for _, after := range []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond, -1} {
		t.Run(fmt.Sprintf("after %v", after), func(t *testing.T) {
			d := mustDocker(t, pooled(3))
			d.pool.start()
			if after < 0 {
				settle(t, d)
			} else {
				time.Sleep(after)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := d.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if list := instanceContainers(t, d); len(list) > 0 {
				t.Errorf("Close left %d container(s), first %s (%s)", len(list), shortID(list[0].ID), list[0].State)
			}
			if st := d.pool.stats(); st.idle+st.starting > 0 {
				t.Errorf("pool after Close: %+v", st)
			}
		})
	}
}

func TestPoolContainerKilledBehindItsBack(t *testing.T) {
	d := mustDocker(t, pooled(2))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for round := range 5 {
		d.pool.start()
		killed := settle(t, d)
		for id := range killed {
			if err := d.cli.ContainerKill(ctx, id, "KILL"); err != nil {
				t.Fatalf("docker kill: %v", err)
			}
		}
		// At once, before the pool may have noticed: the run either gets a
		// live container or falls back to a fresh one, never an error.
		res := mustRun(t, d, usedCheck)
		host, used, _ := strings.Cut(strings.TrimSpace(res.Stdout), " ")
		if res.Status != sandboxd.StatusOK || used != "False" {
			t.Errorf("round %d: %+v", round, res)
		}
		for id := range killed {
			if strings.HasPrefix(id, host) {
				t.Errorf("round %d: the program ran in the killed container %s", round, host)
			}
		}
	}
	assertGone(t, d, jobID(t))
}

func TestRunInDeadContainerIsNotStarted(t *testing.T) {
	// A container that died before its program arrived never acknowledges
	// it: the run reports errNotStarted (Run then retries in a fresh one),
	// not the dead container's exit as the program's.
	d := mustDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := d.prepare(ctx, jobID(t), d.log)
	if err != nil {
		t.Fatal(err)
	}
	defer d.retire(b)
	if err := d.cli.ContainerKill(ctx, b.id, "KILL"); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	r := &run{d: d, b: b, log: d.log}
	if res, err := r.supervise(ctx, sandboxd.Job{Language: sandboxd.LanguagePython, Code: "print('hello')"}); !errors.Is(err, errNotStarted) {
		t.Errorf("supervise = %+v, %v; want errNotStarted", res, err)
	}
}

func TestPoolDockerUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	cfg := testConfig()
	cfg.PoolSize = 2
	d, err := New(cfg, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// No run waits for a pool that cannot fill: each one tries its own
	// container and reports why it failed.
	for range 3 {
		if _, err := d.Run(ctx, sandboxd.Job{ID: "j", Code: "print(1)"}); sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
			t.Errorf("Run = %v, want CodeUnavailable", err)
		}
	}
	if err := d.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestRunEndings(t *testing.T) {
	// How a program ends decides when and how its answer comes: the end
	// marker (after threads and atexit handlers, from the runner's own
	// process only) or, without it, the container's exit.
	fake := "\\x00sandboxd:" + strings.Repeat("0", 32) + ":000\\n"
	tests := []struct {
		name string
		code string
		want want
	}{
		{"sys.exit(256)", "import sys\nsys.exit(256)\n", want{status: sandboxd.StatusOK}},
		{"sys.exit(-1)", "import sys\nsys.exit(-1)\n", want{exit: 255, status: sandboxd.StatusError}},
		{"sys.exit(2**70)", "import sys\nsys.exit(2**70)\n", want{exit: 255, status: sandboxd.StatusError}},
		{"sys.exit(message)", "import sys\nsys.exit('bad input')\n", want{stderr: "bad input\n", exit: 1, status: sandboxd.StatusError}},
		{"SystemExit(None)", "raise SystemExit(None)\n", want{status: sandboxd.StatusOK}},
		{"syntax error", "print(1\n", want{
			stderr: "  File \"main.py\", line 1\n    print(1\n         ^\nSyntaxError: '(' was never closed\n",
			exit:   1, status: sandboxd.StatusError}},
		{"os._exit, no marker", "import os\nprint('before', flush=True)\nos._exit(5)\n", want{stdout: "before\n", exit: 5, status: sandboxd.StatusError}},
		{"stdout replaced by None, no marker", "import sys\nprint('kept', flush=True)\nsys.stdout = None\n", want{stdout: "kept\n", status: sandboxd.StatusOK}},
		{"thread prints after the main program", "import threading, time\ndef f():\n    time.sleep(0.3)\n    print('thread')\n" +
			"threading.Thread(target=f).start()\nprint('main')\n", want{stdout: "main\nthread\n", status: sandboxd.StatusOK}},
		{"atexit handler", "import atexit\natexit.register(lambda: print('bye'))\nprint('main')\n", want{stdout: "main\nbye\n", status: sandboxd.StatusOK}},
		{"forked child runs to the end", "import os, time\nif os.fork() == 0:\n    print('child')\nelse:\n    os.wait()\n" +
			"    time.sleep(0.2)\n    print('parent')\n", want{stdout: "child\nparent\n", status: sandboxd.StatusOK}},
		{"fake marker with a wrong token", "import sys\nsys.stdout.write('" + fake + "')\nsys.stderr.write('" + fake + "')\nsys.exit(3)\n",
			want{stdout: "\x00sandboxd:" + strings.Repeat("0", 32) + ":000\n", stderr: "\x00sandboxd:" + strings.Repeat("0", 32) + ":000\n", exit: 3, status: sandboxd.StatusError}},
	}
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				check(t, mustRun(t, d, tt.code), tt.want)
			})
		}
		t.Run("fake marker with a wrong token, then a loop", func(t *testing.T) {
			d := mustDocker(t, mode, func(c *Config) { c.Timeout = time.Second })
			res := mustRun(t, d, "import sys\nsys.stdout.write('"+fake+"')\nsys.stderr.write('"+fake+"')\nsys.stdout.flush()\nsys.stderr.flush()\nwhile True:\n    pass\n")
			if res.Status != sandboxd.StatusTimeout {
				t.Errorf("status %q after %s, want a timeout: the fake marker was believed", res.Status, res.Duration)
			}
		})
	})
}
