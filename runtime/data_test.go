package runtime

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/testenv"
)

// The data image (`images/build.sh IMAGE python/data`), run by the real
// runner under the service's own container spec: read-only root, /tmp the
// only writable place, no network, user 10001.

// dataConfig points a runner at the data image, with the limits of the
// data environment (512 MiB, 10 s).
func dataConfig(c *Config) {
	c.Image = testenv.DataImage()
	c.MemoryBytes = 512 << 20
	c.Timeout = 10 * time.Second
}

// dataChart imports numpy, pandas and matplotlib, draws a chart into
// /tmp/chart.png and prints what the test checks: the backend, the BLAS
// threads after a matrix product, the PNG's signature and size, and every
// file left in the writable places (/tmp, /dev/shm) but the chart, which
// holds anything matplotlib wrote for its config or font cache.
const dataChart = `import os, threading
import numpy as np
import pandas as pd
import matplotlib
import matplotlib.pyplot as plt

a = np.random.default_rng(1).random((300, 300))
(a @ a).sum()
print("backend", matplotlib.get_backend())
print("threads", len(os.listdir("/proc/self/task")), threading.active_count())

df = pd.DataFrame({"month": ["Jan", "Feb", "Mar"], "sales": [120, 95, 180]})
ax = df.plot.bar(x="month", y="sales", title="Sales")
ax.set_ylabel("units")
plt.savefig("/tmp/chart.png")
with open("/tmp/chart.png", "rb") as f:
    png = f.read()
print("png", png[:8] == b"\x89PNG\r\n\x1a\n", len(png))

left = []
for top in ("/tmp", "/dev/shm"):
    for d, dirs, files in os.walk(top):
        left += [os.path.join(d, n) for n in dirs + files]
print("left", sorted(p for p in left if p != "/tmp/chart.png"))
`

// TestDataImageDrawsAChart proves the data image under the runtime's spec:
// numpy, pandas and matplotlib import, a chart is saved to /tmp as a PNG,
// BLAS keeps to one thread, and matplotlib reads its prebuilt font cache
// from the read-only image, so it writes nothing (no config or cache dir in
// /tmp) and warns about nothing (stderr is empty).
func TestDataImageDrawsAChart(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, dataConfig, mode)
		res := mustRun(t, d, dataChart)
		if res.Status != sandboxd.StatusOK || res.Stderr != "" {
			t.Fatalf("status %q exit %d, stderr:\n%s\nstdout:\n%s", res.Status, res.ExitCode, res.Stderr, res.Stdout)
		}
		lines := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("stdout has %d lines, want 4:\n%s", len(lines), res.Stdout)
		}
		wants := []string{"backend agg", "threads 1 1", "png True ", "left []"}
		for i, w := range wants {
			if !strings.HasPrefix(lines[i], w) || (i != 2 && lines[i] != w) {
				t.Errorf("line %d = %q, want %q", i+1, lines[i], w)
			}
		}
		size, err := strconv.Atoi(strings.TrimPrefix(lines[2], "png True "))
		if err != nil || size < 1<<10 {
			t.Errorf("the chart is %q bytes, want a PNG of at least 1 KiB", strings.TrimPrefix(lines[2], "png True "))
		}
		t.Logf("chart.png: %d bytes; the run took %s", size, res.Duration)
		assertGone(t, d, jobID(t))
	})
}
