package runtime

import (
	"bytes"
	"image/png"
	"strconv"
	"strings"
	"testing"

	"sandboxd"
)

// The data image's runner: numpy, pandas and matplotlib imported while the
// container is warm, and matplotlib's figures returned as files out.

// TestDataFigures shows one figure with plt.show() and leaves another open
// at the end: they come back as figure-1.png and figure-2.png, real PNGs,
// next to a CSV the program read and a chart it saved itself.
func TestDataFigures(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, dataConfig, mode)
		res := mustRunFiles(t, d, `import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("in/sales.csv")
df.plot.bar(x="month", y="sales")
plt.show()
plt.figure()
plt.plot([1, 2, 3], [3, 1, 2])
print(df["sales"].sum())
`, sandboxd.File{Name: "in/sales.csv", Content: []byte("month,sales\nJan,120\nFeb,95\nMar,180\n")})
		if res.Status != sandboxd.StatusOK || res.Stdout != "395\n" || res.Stderr != "" {
			t.Fatalf("status %q stdout %q stderr:\n%s", res.Status, res.Stdout, res.Stderr)
		}
		if len(res.Files) != 2 || res.FilesTruncated {
			t.Fatalf("%d files out (truncated %v), want figure-1.png and figure-2.png", len(res.Files), res.FilesTruncated)
		}
		for i, f := range res.Files {
			if want := "figure-" + strconv.Itoa(i+1) + ".png"; f.Name != want || f.MediaType != "image/png" {
				t.Errorf("file %d: %q (%s), want %q (image/png)", i, f.Name, f.MediaType, want)
			}
			img, err := png.Decode(bytes.NewReader(f.Content))
			if err != nil {
				t.Errorf("%s does not decode as a PNG: %v", f.Name, err)
				continue
			}
			t.Logf("%s: %d bytes, %v", f.Name, f.Size, img.Bounds().Size())
		}
		assertGone(t, d, jobID(t))
	})
}

// TestDataNoFiguresNoCost runs programs that never draw in the data image:
// no figure file appears, and nothing of the runner's is in the program's
// namespace or environment.
func TestDataNoFiguresNoCost(t *testing.T) {
	d := mustDocker(t, dataConfig, func(c *Config) { c.PoolSize = 1 })
	res := mustRunFiles(t, d, `print(sorted(k for k in globals() if not k.startswith("__")))
import os, sys
print([k for k in os.environ if k.startswith("SANDBOX")])
print(sys.modules["__main__"].__file__, __name__)
`)
	if want := "[]\n[]\nmain.py __main__\n"; res.Status != sandboxd.StatusOK || res.Stdout != want {
		t.Errorf("status %q stdout %q stderr %q; want %q", res.Status, res.Stdout, res.Stderr, want)
	}
	if len(res.Files) != 0 || res.FilesTruncated {
		t.Errorf("files out %+v (truncated %v), want none", res.Files, res.FilesTruncated)
	}
	// A traceback shows the program's frames alone.
	res = mustRunFiles(t, d, "import matplotlib.pyplot as plt\nplt.plot([1])\nplt.show()\n1/0\n")
	if res.Status != sandboxd.StatusError || strings.Contains(res.Stderr, "run.py") || !strings.Contains(res.Stderr, "ZeroDivisionError") {
		t.Errorf("status %q stderr:\n%s\nwant a ZeroDivisionError with no frame of the runner", res.Status, res.Stderr)
	}
	if len(res.Files) != 1 || res.Files[0].Name != "figure-1.png" {
		t.Errorf("files out %+v, want the figure shown before the error", res.Files)
	}
}

// TestDataPreloaded proves that a warm data container has imported pandas
// before its program arrives: pandas is in sys.modules at the program's
// first line, and its import costs the program a small fraction of what
// the same import costs a fresh interpreter in the same container.
func TestDataPreloaded(t *testing.T) {
	d := mustDocker(t, dataConfig, func(c *Config) { c.PoolSize = 1 })
	res := mustRunFiles(t, d, `import subprocess, sys, time
print("pandas" in sys.modules, "matplotlib.pyplot" in sys.modules)
t = time.perf_counter()
import pandas as pd
warm = time.perf_counter() - t
cold = float(subprocess.run([sys.executable, "-I", "-c",
    "import time; t = time.perf_counter(); import pandas; print(time.perf_counter() - t)"],
    capture_output=True, text=True, check=True).stdout)
print(warm, cold)
`)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.Status != sandboxd.StatusOK || len(lines) != 2 || lines[0] != "True True" {
		t.Fatalf("status %q stdout %q stderr:\n%s", res.Status, res.Stdout, res.Stderr)
	}
	f := strings.Fields(lines[1])
	warm, err1 := strconv.ParseFloat(f[0], 64)
	cold, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || warm*50 > cold {
		t.Errorf("import pandas took %ss warm, %ss cold; want warm under 1/50 of cold", f[0], f[1])
	}
	t.Logf("import pandas: %.6fs in the warm container, %.3fs in a fresh interpreter", warm, cold)
}
