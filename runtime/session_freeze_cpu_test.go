package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"sandboxd"
)

// spinners starts a thread that counts as fast as it can and a child
// process that spins, both left running after the call; its value is the
// count at the call's end.
const spinners = "import threading, subprocess, time\n" +
	"count = [0]\n" +
	"def spin():\n    while True:\n        count[0] += 1\n" +
	"threading.Thread(target=spin, daemon=True).start()\n" +
	"child = subprocess.Popen(['sh', '-c', 'while :; do :; done'])\n" +
	"time.sleep(0.2)\n" +
	"count[0]"

// betweenCPU is the most CPU a frozen session's container may use while
// no call runs; a thread and a child that spin would take two cores'
// worth of the wait.
const betweenCPU = 50 * time.Millisecond

func TestSessionFrozenBetweenCalls(t *testing.T) {
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			d := mustDocker(t, func(c *Config) { c.OCIRuntime = oci })
			s := mustSession(t, d)
			res := mustCall(t, s, spinners)
			if res.Status != sandboxd.StatusOK || res.Ended {
				t.Fatalf("starting the spinners: status %q ended %v stderr %q", res.Status, res.Ended, res.Stderr)
			}
			// The meter sees the spinners' CPU and freezes the container.
			if !waitPaused(t, d, s.b.id, true) {
				t.Errorf("the container was not paused within 20 s of the call's answer")
			}
			before := cpuUsage(t, d, s.b.id)
			time.Sleep(2 * time.Second)
			if used := cpuUsage(t, d, s.b.id) - before; used > betweenCPU {
				t.Errorf("the container used %s of CPU in 2 s between calls, want at most %s", used, betweenCPU)
			}
			// The thread resumes in the next call; from then on the session
			// is frozen at once after each call, so it counts less between
			// this call and the next (the freeze's and the thaw's latency,
			// and the runner's steps, slow under runsc while the thread
			// holds the GIL) than in this call's 2 s.
			res = mustCall(t, s, "import time\nc0 = count[0]\ntime.sleep(2)\nc0, count[0], child.poll()")
			var c0, c1 int64
			var poll string
			if _, err := fmt.Sscanf(valueOf(res), "(%d, %d, %s", &c0, &c1, &poll); err != nil || res.Ended {
				t.Fatalf("the next call: value %s stderr %q ended %v", valueOf(res), res.Stderr, res.Ended)
			}
			if !waitPaused(t, d, s.b.id, true) {
				t.Errorf("the container was not paused again after the second call")
			}
			time.Sleep(time.Second)
			res = mustCall(t, s, "count[0]")
			var c2 int64
			fmt.Sscan(valueOf(res), &c2)
			between, during := c2-c1, c1-c0
			t.Logf("the thread counted %d in a call's 2 s, %d between that call and the next", during, between)
			if during <= 0 || between >= during || poll != "None)" {
				t.Errorf("counted %d in 2 s of a call and %d between calls (child %s): want it resumed, and less between",
					during, between, poll)
			}
			// Closing a frozen session: under runsc Docker cannot kill a
			// paused container (its kill gives up after 10 s).
			if !waitPaused(t, d, s.b.id, true) {
				t.Errorf("the container was not paused after the third call")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			began := time.Now()
			if err := s.Close(ctx); err != nil {
				t.Fatalf("Close of a frozen session: %v", err)
			}
			if took := time.Since(began); took > 8*time.Second {
				t.Errorf("Close of a frozen session took %s", took)
			}
			assertSessionGone(t, d, s)
		})
	}
}

// TestQuietSessionIsNeverFrozen: a session whose calls leave nothing
// running is metered, never frozen, so its calls never wait for a thaw.
func TestQuietSessionIsNeverFrozen(t *testing.T) {
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			d := mustDocker(t, func(c *Config) { c.OCIRuntime = oci })
			s := mustSession(t, d)
			for i := range 3 {
				mustCall(t, s, "import time\nx = sum(range(100000))")
				time.Sleep(3 * idleSampleFirst)
				info, err := d.cli.ContainerInspect(t.Context(), s.b.id)
				if err != nil {
					t.Fatal(err)
				}
				if info.State.Paused || s.restless.Load() {
					t.Fatalf("a quiet session's container was frozen after call %d", i+1)
				}
			}
		})
	}
}

func TestSessionFrozenReaped(t *testing.T) {
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			d := mustDocker(t, func(c *Config) { c.OCIRuntime = oci })
			s := mustSession(t, d)
			mustCall(t, s, spinners)
			if !waitPaused(t, d, s.b.id, true) {
				t.Fatalf("the session's container was not paused")
			}
			again := mustDocker(t, func(c *Config) { c.OCIRuntime = oci })
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			began := time.Now()
			if n, err := again.Reap(ctx); err != nil || n < 1 {
				t.Fatalf("Reap of a paused leftover: %d, %v", n, err)
			}
			// Under runsc Docker's kill of a paused container gives up
			// after 10 s: Reap thaws it first.
			if took := time.Since(began); took > 8*time.Second {
				t.Errorf("Reap of a paused leftover took %s", took)
			}
			if _, err := d.cli.ContainerInspect(ctx, s.b.id); err == nil {
				t.Errorf("the paused container is still there after Reap")
			}
			select {
			case <-s.Ended():
			case <-time.After(10 * time.Second):
				t.Fatal("the reaped session did not end")
			}
		})
	}
}

// waitPaused waits up to 20 s for the container's paused state to be want,
// and reports whether it was.
func waitPaused(tb testing.TB, d *Docker, id string, want bool) bool {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		info, err := d.cli.ContainerInspect(ctx, id)
		cancel()
		if err != nil {
			tb.Fatalf("ContainerInspect: %v", err)
		}
		if info.State.Paused == want {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cpuUsage is the container's CPU time so far, as the Engine API's
// one-shot stats report it (the cgroup's cpuacct).
func cpuUsage(tb testing.TB, d *Docker, id string) time.Duration {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := d.cli.ContainerStatsOneShot(ctx, id)
	if err != nil {
		tb.Fatalf("ContainerStatsOneShot: %v", err)
	}
	defer resp.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		tb.Fatalf("the stats: %v", err)
	}
	if st.CPUStats.CPUUsage.TotalUsage == 0 && !strings.Contains(d.cfg.OCIRuntime, "runsc") {
		tb.Logf("the stats report no CPU time: %+v", st.CPUStats)
	}
	return time.Duration(st.CPUStats.CPUUsage.TotalUsage)
}
