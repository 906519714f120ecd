package runtime

import (
	"testing"
	"time"

	"sandboxd"
)

// TestDeadlineLeavesOutThePreload: in a data container started for the run
// (no pool), the runner imports numpy, pandas and matplotlib before it
// reads its program, which takes longer than this test's whole limit; the
// program still gets the whole limit, counted from its start, not from the
// hand-over, and its duration leaves the imports out.
func TestDeadlineLeavesOutThePreload(t *testing.T) {
	d := mustDocker(t, dataConfig, func(c *Config) {
		c.PoolSize, c.PoolMax = 0, 0
		c.Timeout = time.Second
	})
	res := mustRun(t, d, "import time\ntime.sleep(0.4)\nprint('slept')\n")
	if res.Status != sandboxd.StatusOK || res.Stdout != "slept\n" {
		t.Fatalf("status %q exit %d, stdout %q, stderr:\n%s", res.Status, res.ExitCode, res.Stdout, res.Stderr)
	}
	if res.Duration >= time.Second {
		t.Errorf("duration %v counts the preload (want under the 1 s limit)", res.Duration)
	}
	t.Logf("the run took %v from the program's start", res.Duration)
}
