package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sandboxd"
)

// Every kill classified right under load: the kernel's OOM kills, the
// deadline's and the output cap's, mixed with plain programs at the
// concurrency of the service's default max_concurrency.

// killConcurrency is how many runs are in flight at once.
const killConcurrency = 8

// mixedCase is one kind of program in a mixed batch, and the judge of its
// answer: nil when right, else what is wrong.
type mixedCase struct {
	kind  string
	code  string
	judge func(sandboxd.Result) error
}

// helloCase is a plain program that must answer ok.
var helloCase = mixedCase{"hello", "print('hello, world')\n", func(r sandboxd.Result) error {
	if r.Status != sandboxd.StatusOK || r.Stdout != "hello, world\n" || r.OOMKilled || r.TimedOut || r.Truncated {
		return fmt.Errorf("want ok and hello, world")
	}
	return nil
}}

// oomOrMemoryError accepts the kernel's OOM kill, or Python's own
// MemoryError when an allocation is refused before the kernel kills.
func oomOrMemoryError(r sandboxd.Result) error {
	switch {
	case r.Status == sandboxd.StatusOOM && r.OOMKilled && r.ExitCode == exitKilled && !r.TimedOut && !r.Truncated:
		return nil
	case r.Status == sandboxd.StatusError && !r.OOMKilled && strings.Contains(r.Stderr, "MemoryError"):
		return nil
	}
	return fmt.Errorf("want oom (or a MemoryError)")
}

// runMixed runs every case n times, interleaved, killConcurrency at once,
// and fails the test for each answer its case's judge refuses, or any
// error.
func runMixed(t *testing.T, d *Docker, n int, cases ...mixedCase) {
	t.Helper()
	var jobs []mixedCase
	for range n {
		jobs = append(jobs, cases...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sem := make(chan struct{}, killConcurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for i, c := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := d.Run(ctx, sandboxd.Job{ID: fmt.Sprintf("%s-%d", jobID(t), i), Code: c.code})
			if err == nil {
				err = c.judge(res)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("run %d (%s): %v; got status %q exit %d oom %v timed_out %v truncated %v stdout %.80q stderr %.200q",
					i, c.kind, err, res.Status, res.ExitCode, res.OOMKilled, res.TimedOut, res.Truncated, res.Stdout, res.Stderr)
				return
			}
			counts[c.kind+" "+string(res.Status)]++
		})
	}
	wg.Wait()
	t.Logf("answers: %v", counts)
	assertGone(t, d, jobID(t))
}

func TestKillsOOMUnderLoad(t *testing.T) {
	bombs := []mixedCase{
		{"bomb-at-once", "print('allocating', flush=True)\nb = b'x' * (1 << 30)\nprint('survived')\n", oomOrMemoryError},
		{"bomb-growing", "chunks = []\nwhile True:\n    chunks.append(bytearray(1 << 20))\n", oomOrMemoryError},
	}
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			eachMode(t, func(t *testing.T, mode func(*Config)) {
				d := mustDocker(t, mode, func(c *Config) { c.OCIRuntime = oci })
				// 60 bombs, 60 hello worlds.
				runMixed(t, d, 30, bombs[0], helloCase, bombs[1], helloCase)
			})
		})
	}
}

func TestKillsTimeoutVersusOutputLimitUnderLoad(t *testing.T) {
	flood := mixedCase{"flood", "while True:\n    print('x' * 99)\n", func(r sandboxd.Result) error {
		if r.Status != sandboxd.StatusOutputLimit || !r.Truncated || r.TimedOut || r.OOMKilled {
			return fmt.Errorf("want output_limit")
		}
		return nil
	}}
	sleeper := mixedCase{"sleeper", "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n", func(r sandboxd.Result) error {
		if r.Status != sandboxd.StatusTimeout || !r.TimedOut || r.Truncated || r.OOMKilled || r.Stdout != "sleeping\n" {
			return fmt.Errorf("want timeout")
		}
		return nil
	}}
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			eachMode(t, func(t *testing.T, mode func(*Config)) {
				d := mustDocker(t, mode, func(c *Config) { c.OCIRuntime = oci; c.Timeout = 2 * time.Second })
				runMixed(t, d, 16, flood, sleeper, helloCase)
			})
		})
	}
}
