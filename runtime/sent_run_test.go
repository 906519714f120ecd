package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// One cap on all a run sends, through the real runner and dockerd (issue
// 24, point 4).

// forgedFlood reads the run's token from the runner's frame and writes,
// again and again, a forged end marker followed by a files section of the
// longest length a marker may announce (%d): bytes no stream's cap counts.
const forgedFlood = `import os, sys
prefix = sys._getframe(1).f_locals["prefix"]
n = %d
blob = memoryview(prefix + b"000 0000000000 0000000000 %%010d 0\n" %% n + b"x" * n)
print("flooding", flush=True)
while True:
    view = blob
    while view:
        view = view[os.write(1, view):]
`

// TestSentForgedFlood floods forged markers with whole files sections of
// the most a marker may announce, under runc and runsc: the run is killed
// as output_limit, truncated, within the output-cap kill's promise, having
// sent at most sentBound (one byte past it read), and its container goes.
// Before the cap on all a run sends, the same run moved hundreds of
// megabytes and ended at the deadline, "ok" and not truncated.
func TestSentForgedFlood(t *testing.T) {
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			d := mustDocker(t, func(c *Config) { c.OCIRuntime = oci })
			fb := newProtocol(d.cfg.MaxFiles, int64(d.cfg.MaxFilesBytes)).filesBound()
			res, sent, bound := runCounted(t, d, fmt.Sprintf(forgedFlood, fb))
			t.Logf("%s: %d bytes sent of a bound of %d, answered after %s", res.Status, sent, bound, res.Duration)
			if res.Status != sandboxd.StatusOutputLimit || !res.Truncated || res.TimedOut {
				t.Errorf("status %q, truncated %v, timed out %v; want output_limit, truncated", res.Status, res.Truncated, res.TimedOut)
			}
			if sent > bound+1 {
				t.Errorf("%d bytes sent were read, over the bound %d plus one", sent, bound)
			}
			if most := floodWithin * slower(oci); res.Duration > most {
				t.Errorf("answered after %s, over the output-cap promise %s", res.Duration, most)
			}
			if !strings.HasPrefix(res.Stdout, "flooding\n") || len(res.Files) != 0 {
				t.Errorf("stdout %.40q, %d files; want the program's line and no files", res.Stdout, len(res.Files))
			}
			assertGone(t, d, jobID(t))
		})
	}
}

// TestSentHonestRunAtTheCaps prints max_output_bytes on each stream and
// leaves max_files files of max_files_bytes in all: the cap on all a run
// sends leaves such a run whole, ok, every file with its content.
func TestSentHonestRunAtTheCaps(t *testing.T) {
	d := mustDocker(t)
	max, files := int(d.cfg.MaxOutputBytes), d.cfg.MaxFiles
	each := int(d.cfg.MaxFilesBytes) / files
	res, sent, bound := runCounted(t, d, fmt.Sprintf(`import sys
sys.stdout.write("o" * %d)
sys.stderr.write("e" * %d)
for i in range(%d):
    open("f%%02d.bin" %% i, "wb").write(bytes([i]) * %d)
`, max, max, files, each))
	t.Logf("%s: %d bytes sent of a bound of %d, answered after %s", res.Status, sent, bound, res.Duration)
	if res.Status != sandboxd.StatusOK || res.Truncated || res.FilesTruncated || len(res.Stdout) != max || len(res.Stderr) != max {
		t.Fatalf("status %q, truncated %v, files truncated %v, %d and %d bytes out; want ok, whole", res.Status, res.Truncated, res.FilesTruncated, len(res.Stdout), len(res.Stderr))
	}
	if len(res.Files) != files {
		t.Fatalf("%d files out, want %d", len(res.Files), files)
	}
	for i, f := range res.Files {
		if len(f.Content) != each || f.Content[0] != byte(i) || f.Content[each-1] != byte(i) {
			t.Errorf("file %s: %d bytes, want %d of %d", f.Name, len(f.Content), each, i)
		}
	}
}

// runCounted runs code in a fresh container, as Run does, and returns the
// result with the bytes the demultiplexer read of both streams and its
// bound; the container is removed before it returns.
func runCounted(tb testing.TB, d *Docker, code string) (sandboxd.Result, int64, int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := d.acquire(ctx, jobID(tb), false, d.log)
	if err != nil {
		tb.Fatalf("acquire: %v", err)
	}
	r := &run{d: d, b: b, log: d.log}
	res, err := r.supervise(ctx, sandboxd.Job{ID: jobID(tb), Language: sandboxd.LanguagePython, Code: code})
	select {
	case <-d.retire(b):
	case <-ctx.Done():
		tb.Fatal("the container was not removed: is its attach connection still open?")
	}
	if err != nil {
		tb.Fatalf("supervise: %v", err)
	}
	return res, b.s.out.sent, b.s.out.sentMax
}
