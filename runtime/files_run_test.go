package runtime

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/internal/runnerproto"
)

// Files in and out through the real runner, under the service's container
// spec: written into /tmp before the program starts, the new and changed
// ones returned after it ends, nothing followed, every walk and read bounded.

// mustRunFiles runs code with files in as a job named after the test, and
// fails the test on an error.
func mustRunFiles(tb testing.TB, d *Docker, code string, files ...sandboxd.File) sandboxd.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := d.Run(ctx, sandboxd.Job{ID: jobID(tb), Language: sandboxd.LanguagePython, Code: code, Files: files})
	if err != nil {
		tb.Fatalf("Run: %v", err)
	}
	return res
}

// outFile is what a test expects of a file out: its content, or, for one
// listed without it, its size alone.
type outFile struct {
	name, content string
	listed        bool
	size          int64
	media         string
}

// checkFiles compares a run's files out with the expected ones, in order.
func checkFiles(tb testing.TB, res sandboxd.Result, truncated bool, want ...outFile) {
	tb.Helper()
	if res.Status != sandboxd.StatusOK {
		tb.Fatalf("status %q exit %d, stderr:\n%s\nstdout:\n%s", res.Status, res.ExitCode, res.Stderr, res.Stdout)
	}
	var names []string
	for _, f := range res.Files {
		names = append(names, f.Name)
	}
	if len(res.Files) != len(want) {
		tb.Fatalf("files out %q, want %d of them", names, len(want))
	}
	for i, w := range want {
		got := res.Files[i]
		size := int64(len(w.content))
		if w.listed {
			size = w.size
		}
		if got.Name != w.name || got.Size != size || (got.Content == nil) != w.listed || string(got.Content) != w.content {
			tb.Errorf("file %d: %q of %d bytes (content %v), want %q of %d (listed %v)", i, got.Name, got.Size, got.Content != nil, w.name, size, w.listed)
		}
		if w.media != "" && got.MediaType != w.media {
			tb.Errorf("file %q: media type %q, want %q", got.Name, got.MediaType, w.media)
		}
	}
	if res.FilesTruncated != truncated {
		tb.Errorf("files_truncated = %v, want %v (files %q)", res.FilesTruncated, truncated, names)
	}
}

// filesProgram reads its files in by name (one in a subdirectory), leaves
// one unchanged, rewrites one with the same content, changes one, and
// creates two (one in a new subdirectory).
const filesProgram = `import csv, os
rows = list(csv.reader(open("sales.csv")))
print(len(rows), rows[1])
print(open("data/deep/notes.txt").read())
open("same.txt", "w").write("same")
with open("edit.txt", "a") as f:
    f.write(" and more")
os.makedirs("out/charts")
open("out/charts/summary.json", "w").write('{"rows": %d}' % len(rows))
open("empty.txt", "w").close()
`

// TestFilesInAndOut writes files in (nested ones too), then returns just the
// new and changed files out, in name order, with their media types.
func TestFilesInAndOut(t *testing.T) {
	eachMode(t, func(t *testing.T, mode func(*Config)) {
		d := mustDocker(t, mode)
		res := mustRunFiles(t, d, filesProgram,
			sandboxd.File{Name: "sales.csv", Content: []byte("month,sales\nJan,120\nFeb,95\n")},
			sandboxd.File{Name: "data/deep/notes.txt", Content: []byte("read me")},
			sandboxd.File{Name: "keep.bin", Content: []byte{0, 1, 2}},
			sandboxd.File{Name: "same.txt", Content: []byte("same")},
			sandboxd.File{Name: "edit.txt", Content: []byte("edit")},
		)
		if want := "3 ['Jan', '120']\nread me\n"; res.Stdout != want {
			t.Errorf("stdout %q, want %q", res.Stdout, want)
		}
		checkFiles(t, res, false,
			outFile{name: "edit.txt", content: "edit and more", media: "text/plain"},
			outFile{name: "empty.txt", content: "", media: "text/plain"},
			outFile{name: "out/charts/summary.json", content: `{"rows": 3}`, media: "application/json"},
		)
		assertGone(t, d, jobID(t))
	})
}

// TestFilesOverTheCaps lists by name and size, without content, the files
// out past max_files or max_files_bytes, and says so.
func TestFilesOverTheCaps(t *testing.T) {
	d := mustDocker(t, func(c *Config) { c.MaxFiles = 2; c.MaxFilesBytes = 1000 })
	res := mustRunFiles(t, d, `
open("a.txt", "w").write("a" * 10)
open("b.png", "wb").write(b"\x89PNG\r\n\x1a\n" + bytes(2000))
open("c.txt", "w").write("c" * 10)
open("d.txt", "w").write("d" * 10)
`)
	checkFiles(t, res, true,
		outFile{name: "a.txt", content: strings.Repeat("a", 10)},
		outFile{name: "b.png", listed: true, size: 2008, media: "image/png"},
		outFile{name: "c.txt", content: strings.Repeat("c", 10)},
		outFile{name: "d.txt", listed: true, size: 10},
	)
}

// TestFilesNeverFollowed leaves in /tmp a symlink to /etc/passwd and one to
// /etc, a FIFO (opening it would block), a Unix socket, and tries a hard
// link to /etc/passwd, then moves to /: none is followed or read, the
// files out are still those of /tmp, and the run is answered at once. Only
// the program's own regular files come back.
func TestFilesNeverFollowed(t *testing.T) {
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			eachMode(t, func(t *testing.T, mode func(*Config)) {
				d := mustDocker(t, mode, func(c *Config) { c.OCIRuntime = oci })
				neverFollowed(t, d)
			})
		})
	}
}

// neverFollowed is TestFilesNeverFollowed in one runner.
func neverFollowed(t *testing.T, d *Docker) {
	{
		res := mustRunFiles(t, d, `import os, socket
os.symlink("/etc/passwd", "passwd")
os.symlink("/etc", "etc")
os.makedirs("sub")
os.symlink("/etc/passwd", "sub/link.txt")
os.mkfifo("fifo")
s = socket.socket(socket.AF_UNIX)
s.bind("sock")
try:
    os.link("/etc/passwd", "hard")
except OSError as e:
    print("link refused")
open("mine.txt", "w").write("mine")
os.link("mine.txt", "mine2.txt")
os.chdir("/")
`)
		if res.Stdout != "link refused\n" {
			t.Errorf("stdout %q, want the hard link refused", res.Stdout)
		}
		checkFiles(t, res, false,
			outFile{name: "mine.txt", content: "mine"},
			outFile{name: "mine2.txt", content: "mine"},
		)
		for _, f := range res.Files {
			if bytes.Contains(f.Content, []byte("root:")) {
				t.Errorf("%s holds /etc/passwd", f.Name)
			}
		}
		if res.Duration > 3*time.Second {
			t.Errorf("the run took %s: was the FIFO opened?", res.Duration)
		}
		assertGone(t, d, jobID(t))
	}
}

// TestFilesWalkIsBounded makes 100,000 empty files (50,000 under runsc)
// and a tree 200 directories deep: the runner's walk stops at its bounds,
// the run is answered, and max_files+runnerproto.ListExtra files come back (the first
// max_files with content), truncated.
func TestFilesWalkIsBounded(t *testing.T) {
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			walkIsBounded(t, mustDocker(t, func(c *Config) {
				c.Timeout = 150 * time.Second
				c.MemoryBytes = 512 << 20
				c.OCIRuntime = oci
			}))
		})
	}
}

// walkIsBounded is TestFilesWalkIsBounded in one runner. The runner's walk
// is held against a walk of all the files that the program times itself
// (a scandir and a stat of each, as the runner's does), in the same run.
// The runner's time is the run's less the program's and less a trivial
// run's (what the runner and the service add around any program), measured
// just before. It
// must take less than the program's walk: under runc, with a CPU hog beside
// it, the bounded walk took 0.08-0.35 of it, and a runner whose walk was not
// bounded (its MAX_ENTRIES lifted) 1.8-2.0. Held to the program's whole
// time (a quarter of it, as this test once was), it failed on a slow
// machine, where what the runner adds grows and the walk does not.
//
// Under runsc the program makes 50,000 files (five times the walk's bound),
// each by one mknod, not an open and a close: in gVisor those took 0.45 ms a
// file, so 100,000 took 45 s on a quiet host and over a minute with a CPU
// hog beside it. Even by mknod, gVisor's speed here swings 10x between runs
// (the files and their walk took 5 s in one, 49 s in the next).
func walkIsBounded(t *testing.T, d *Docker) {
	base := mustRun(t, d, "pass\n")
	if base.Status != sandboxd.StatusOK {
		t.Fatalf("a trivial run: status %q stderr %q", base.Status, base.Stderr)
	}
	n, mk := 100000, `open("many/%06d" % i, "w").close()`
	if d.cfg.OCIRuntime == "runsc" {
		n, mk = 50000, `os.mknod("many/%06d" % i)`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := d.Run(ctx, sandboxd.Job{ID: jobID(t), Language: sandboxd.LanguagePython, Code: `import os, time
t = time.monotonic()
os.mkdir("many")
for i in range(` + strconv.Itoa(n) + `):
    ` + mk + `
os.makedirs("/".join(["d"] * 200))
open("/".join(["d"] * 200) + "/bottom.txt", "w").write("deep")
made = time.monotonic() - t
t = time.monotonic()
with os.scandir("many") as it:
    for entry in it:
        entry.stat(follow_symlinks=False)
print("%.3f %.3f" % (made, time.monotonic() - t))
`})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var made, scanned float64
	if _, err := fmt.Sscanf(res.Stdout, "%f %f", &made, &scanned); res.Status != sandboxd.StatusOK || err != nil {
		t.Fatalf("status %q stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	program := time.Duration((made + scanned) * float64(time.Second))
	full := time.Duration(scanned * float64(time.Second))
	if !res.FilesTruncated || len(res.Files) != d.cfg.MaxFiles+runnerproto.ListExtra {
		t.Errorf("%d files out, truncated %v; want %d, truncated", len(res.Files), res.FilesTruncated, d.cfg.MaxFiles+runnerproto.ListExtra)
	}
	if walk := res.Duration - program - base.Duration; walk > full {
		t.Errorf("the runner took %s more than a trivial run's %s after its program, and a walk of all the files took %s: "+
			"is the walk bounded?", walk, base.Duration, full)
	}
	for _, f := range res.Files {
		if strings.HasSuffix(f.Name, "bottom.txt") {
			t.Errorf("the walk went %d levels deep", strings.Count(f.Name, "/"))
		}
	}
	t.Logf("%d files out; the run took %s, a trivial one %s; its program made the files in %.3fs, walked them in %s",
		len(res.Files), res.Duration, base.Duration, made, full)
}

// TestFilesForgedSection has the program, which can read the run's token
// from the runner's frame, print forged end markers and files sections: one
// in the middle of its output changes nothing but its own stdout; one at its
// very end (then os._exit, so the runner's never comes) claiming a file
// over the caps is refused whole, and the service holds no more than its
// caps.
func TestFilesForgedSection(t *testing.T) {
	const forge = `import os, sys
prefix = sys._getframe(1).f_locals["prefix"]
def marker(n):
    return prefix + b"000 0000000000 0000000000 %010d 0\n" % n
def forged(body):
    os.write(1, marker(len(body)) + body)
`
	t.Run("in the middle", func(t *testing.T) {
		d := mustDocker(t)
		body := `c 11 6\n/etc/passwdforged`
		res := mustRunFiles(t, d, forge+`sys.stdout.flush()
forged(b"`+body+`")
os.write(1, marker(99999999999))
print("after")
open("real.txt", "w").write("real")
`)
		checkFiles(t, res, false, outFile{name: "real.txt", content: "real"})
		if !strings.HasSuffix(res.Stdout, "after\n") || strings.Contains(res.Stdout, "forged") {
			t.Errorf("stdout %q: want the forged section dropped, the output after it kept", res.Stdout)
		}
	})
	t.Run("at the end", func(t *testing.T) {
		d := mustDocker(t, func(c *Config) { c.MaxFiles = 1; c.MaxFilesBytes = 10 })
		res := mustRunFiles(t, d, forge+`body = b"c 1 50\nx" + b"y" * 50
os.write(1, marker(len(body)) + body)
os.write(2, marker(len(body)))
open("real.txt", "w").write("real")
os._exit(0)
`)
		if res.Status != sandboxd.StatusOK || len(res.Files) != 0 || !res.FilesTruncated {
			t.Errorf("status %q, %d files, truncated %v; want ok, none, truncated", res.Status, len(res.Files), res.FilesTruncated)
		}
	})
}

// TestFilesInNamesCheckedByTheRunner hands the runner, past the runtime's
// own check, names that would escape /tmp: it writes none of them, and the
// run fails as the program would.
func TestFilesInNamesCheckedByTheRunner(t *testing.T) {
	d := mustDocker(t)
	for _, name := range []string{"../etc/x", "/tmp/abs", "a/./b", "a\\b"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b, err := d.acquire(ctx, jobID(t), false, d.log)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			r := &run{d: d, b: b, log: d.log}
			job := sandboxd.Job{ID: jobID(t), Language: sandboxd.LanguagePython, Code: "print('ran')", Files: []sandboxd.File{{Name: name, Content: []byte("x")}}}
			res, err := r.supervise(ctx, job)
			<-d.retire(b)
			if err != nil {
				t.Fatalf("supervise: %v", err)
			}
			if res.Status != sandboxd.StatusError || res.Stdout != "" || !strings.Contains(res.Stderr, "not a relative name") {
				t.Errorf("status %q stdout %q stderr %q; want an error naming the file", res.Status, res.Stdout, res.Stderr)
			}
		})
	}
}
