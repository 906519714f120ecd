package runtime

import (
	"fmt"
	"strings"
	"testing"

	"sandboxd"
)

// The cap on all a run sends, applied to each call of a session.

// sessionFlood reads the call's token from the runner's frame and writes
// on the stream named, again and again, a forged end marker announcing a
// files section of the longest length a marker may (%[2]d) and that
// section: the first ends the call's part of that stream, so what follows
// is counted by no stream's cap.
const sessionFlood = `import os, sys
prefix = sys._getframe(1).f_locals["call"]["prefix"]
n = %[2]d
blob = memoryview(prefix + b"000 0000000000 0000000000 %%010d 0 0 0000000000 0\n" %% n + b"x" * n)
print("flooding", flush=True)
while True:
    view = blob
    while view:
        view = view[os.write(%[1]d, view):]
`

// TestSessionSentForgedFlood floods forged markers with whole files
// sections from a session's call, on stdout and on stderr, under runc and
// runsc: the call is answered output_limit, truncated, within the
// output-cap kill's promise (twice over: the session's container is
// killed as well), its session ended for passing the cap, having read at
// most the call's sentBound (one byte past it) and the session's ack; its
// container goes. Before the cap counted session calls, both floods ended
// the session as "output between calls", answered "error" (exit 137), not
// truncated.
func TestSessionSentForgedFlood(t *testing.T) {
	for _, oci := range ociRuntimes {
		for _, fd := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/fd%d", oci, fd), func(t *testing.T) {
				d := mustDocker(t, func(c *Config) { c.OCIRuntime = oci })
				s := mustSession(t, d)
				proto := newCallProtocol(d.cfg.MaxFiles, int64(d.cfg.MaxFilesBytes), s.maxOut)
				bound := sentBound(int(d.cfg.MaxOutputBytes), proto)
				s.mu.Lock()
				before := s.read
				s.mu.Unlock()
				res := mustCall(t, s, fmt.Sprintf(sessionFlood, fd, proto.filesBound()))
				s.mu.Lock()
				read := s.read - before
				s.mu.Unlock()
				t.Logf("%s: %d bytes read of a bound of %d, answered after %s, ended %v (%s)",
					res.Status, read, bound, res.Duration, res.Ended, res.EndReason)
				if res.Status != sandboxd.StatusOutputLimit || !res.Truncated || res.TimedOut {
					t.Errorf("status %q, truncated %v, timed out %v; want output_limit, truncated", res.Status, res.Truncated, res.TimedOut)
				}
				if !res.Ended || !strings.Contains(res.EndReason, "output cap") {
					t.Errorf("ended %v (%q); want the session ended for passing the output cap", res.Ended, res.EndReason)
				}
				// The call's ack on stderr, the runner's lines before it.
				if most := bound + 1 + 4096; read > most {
					t.Errorf("%d bytes read, over the call's bound %d (plus one, plus 4 KiB of the runner's lines)", read, bound)
				}
				if most := 2 * floodWithin * slower(oci); res.Duration > most {
					t.Errorf("answered after %s, over %s", res.Duration, most)
				}
				if fd == 1 && !strings.HasPrefix(res.Stdout, "flooding\n") || len(res.Files) != 0 || res.Value != nil {
					t.Errorf("stdout %.40q, %d files, value %v; want the program's line, no files, no value", res.Stdout, len(res.Files), res.Value)
				}
				assertEnded(t, s, "output cap")
				assertSessionGone(t, d, s)
			})
		}
	}
}

// TestSessionSentHonestCallAtTheCaps prints max_output_bytes on each
// stream, leaves max_files files of max_files_bytes in all and a value of
// the most a value may be: the call's bound leaves it whole, and the
// session lives on.
func TestSessionSentHonestCallAtTheCaps(t *testing.T) {
	d := mustDocker(t)
	s := mustSession(t, d)
	max, files := int(d.cfg.MaxOutputBytes), d.cfg.MaxFiles
	each := int(d.cfg.MaxFilesBytes) / files
	res := mustCall(t, s, fmt.Sprintf(`import sys
sys.stdout.write("o" * %d)
sys.stderr.write("e" * %d)
for i in range(%d):
    open("f%%02d.bin" %% i, "wb").write(bytes([i]) * %d)
"v" * %d`, max, max, files, each, max-2))
	if res.Status != sandboxd.StatusOK || res.Truncated || res.FilesTruncated || res.Ended || len(res.Stdout) != max || len(res.Stderr) != max {
		t.Fatalf("status %q, truncated %v, files truncated %v, ended %v (%s), %d and %d bytes out; want ok, whole",
			res.Status, res.Truncated, res.FilesTruncated, res.Ended, res.EndReason, len(res.Stdout), len(res.Stderr))
	}
	if len(res.Files) != files || res.Value == nil || len(*res.Value) != max {
		t.Fatalf("%d files out, value of %d bytes; want %d files and the whole repr", len(res.Files), len(valueOf(res)), files)
	}
	checkCall(t, mustCall(t, s, "1 + 1"), want{status: sandboxd.StatusOK}, "2")
}
