package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"sandboxd"
)

// Sessions against the real daemon and image: one container, one
// interpreter, many calls.

// sessionModes are the ways a session gets its container, under each OCI
// runtime: an idle warm one from the pool, or one started for it.
func eachSessionMode(t *testing.T, f func(t *testing.T, mods ...func(*Config))) {
	for _, oci := range ociRuntimes {
		for _, m := range modes {
			t.Run(oci+"/"+m.name, func(t *testing.T) {
				f(t, func(c *Config) { c.OCIRuntime, c.PoolSize = oci, m.pool })
			})
		}
	}
}

// mustSession opens a python session of d, closed when the test ends; with
// a pool, once the pool is full, so the session takes an idle warm
// container.
func mustSession(tb testing.TB, d *Docker) *Session {
	tb.Helper()
	return mustSessionOf(tb, d, sandboxd.LanguagePython)
}

// mustSessionOf is mustSession in lang.
func mustSessionOf(tb testing.TB, d *Docker, lang string) *Session {
	tb.Helper()
	if d.pool != nil {
		d.pool.start()
		settle(tb, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := d.Open(ctx, lang)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// mustCall runs code in the session and fails the test on an error.
func mustCall(tb testing.TB, s *Session, code string, files ...sandboxd.File) sandboxd.SessionResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Run(ctx, sandboxd.Job{ID: jobID(tb), Language: sandboxd.LanguagePython, Code: code, Files: files})
	if err != nil {
		tb.Fatalf("Run(%.40q): %v", code, err)
	}
	return res
}

// TestSessionLanguageNotInImage opens a bash session on the python image:
// the session header carries the language, the loop starts, and each call
// is the program's own error, the session alive; a call naming another
// language than the session's is refused before it reaches the runner.
func TestSessionLanguageNotInImage(t *testing.T) {
	d := mustDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := d.Open(ctx, sandboxd.LanguageBash)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = s.Close(context.Background()) }()
	for range 2 {
		res, err := s.Run(ctx, sandboxd.Job{ID: jobID(t), Code: "echo hi"})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		check(t, res.Result, want{stderr: "sandbox-run: this sandbox runs python only; it cannot run bash\n", exit: 1,
			status: sandboxd.StatusError})
		if res.Ended || res.Value != nil {
			t.Errorf("ended %v value %v; want the session alive, no value", res.Ended, res.Value)
		}
	}
	if _, err := s.Run(ctx, sandboxd.Job{ID: jobID(t), Language: sandboxd.LanguagePython, Code: "1"}); sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
		t.Errorf("a python call in a bash session: %v, want CodeInvalid", err)
	}
	if _, err := d.Open(ctx, "sh"); sandboxd.ErrorCode(err) != sandboxd.CodeInvalid {
		t.Errorf("Open with an alias: %v, want CodeInvalid", err)
	}
}

// valueOf is a result's value as the tests compare it.
func valueOf(r sandboxd.SessionResult) string {
	if r.Value == nil {
		return "<none>"
	}
	return *r.Value
}

// checkCall compares a call's answer with the expected one and fails the
// test at the first difference, since later calls build on it.
func checkCall(tb testing.TB, got sandboxd.SessionResult, w want, value string) {
	tb.Helper()
	check(tb, got.Result, w)
	if valueOf(got) != value {
		tb.Errorf("value = %q, want %q", valueOf(got), value)
	}
	if got.Ended {
		tb.Errorf("the call ended the session: %s", got.EndReason)
	}
	if tb.Failed() {
		tb.FailNow()
	}
}

func TestSessionKeepsState(t *testing.T) {
	eachSessionMode(t, func(t *testing.T, mods ...func(*Config)) {
		d := mustDocker(t, mods...)
		s := mustSession(t, d)
		checkCall(t, mustCall(t, s, "x = 1\nimport json\nopen('/tmp/note', 'w').write('kept')"), want{status: sandboxd.StatusOK}, "4")
		checkCall(t, mustCall(t, s, "x += 1; x"), want{status: sandboxd.StatusOK}, "2")
		checkCall(t, mustCall(t, s, "print(json.dumps({'x': x}), open('note').read())"),
			want{stdout: "{\"x\": 2} kept\n", status: sandboxd.StatusOK}, "<none>")
		// The working directory is /tmp again at each call.
		checkCall(t, mustCall(t, s, "import os\nos.chdir('/')\nos.getcwd()"), want{status: sandboxd.StatusOK}, "'/'")
		checkCall(t, mustCall(t, s, "os.getcwd(), __name__"), want{status: sandboxd.StatusOK}, "('/tmp', '__main__')")
		res := mustCall(t, s, "import time\nsum(range(10**6))")
		if res.Usage == nil || res.Usage.MaxRSSKB <= 0 {
			t.Errorf("usage %+v, want the call's", res.Usage)
		}
		assertLive(t, s)
	})
}

// assertLive fails the test when the session has ended.
func assertLive(tb testing.TB, s *Session) {
	tb.Helper()
	select {
	case <-s.Ended():
		tb.Fatalf("the session ended: %s", s.EndReason())
	default:
	}
}

// assertEnded fails the test unless the session has ended, within a
// second, for a reason that holds want.
func assertEnded(tb testing.TB, s *Session, want string) {
	tb.Helper()
	select {
	case <-s.Ended():
	case <-time.After(time.Second):
		tb.Fatalf("the session did not end")
	}
	if !strings.Contains(s.EndReason(), want) {
		tb.Errorf("end reason %q, want it to say %q", s.EndReason(), want)
	}
}

func TestSessionResult(t *testing.T) {
	d := mustDocker(t, func(c *Config) { c.PoolSize = 1 })
	s := mustSession(t, d)
	ok := want{status: sandboxd.StatusOK}
	checkCall(t, mustCall(t, s, "x = 41"), ok, "<none>")
	checkCall(t, mustCall(t, s, "x += 1; x"), ok, "42")
	checkCall(t, mustCall(t, s, "None"), ok, "<none>")
	checkCall(t, mustCall(t, s, "print('p')"), want{stdout: "p\n", status: sandboxd.StatusOK}, "<none>")
	checkCall(t, mustCall(t, s, "'é' + \"'\""), ok, `"é'"`)
	checkCall(t, mustCall(t, s, "if x:\n    x"), ok, "<none>")
	// A repr longer than the output cap is cut at it.
	cap := int(d.cfg.MaxOutputBytes)
	res := mustCall(t, s, "'a' * 10**6")
	if v := valueOf(res); len(v) != cap || !strings.HasPrefix(v, "'aaa") || res.Status != sandboxd.StatusOK {
		t.Errorf("huge repr: status %q, value of %d bytes, want %d", res.Status, len(v), cap)
	}
	// An exception in repr is the call's own error; the session lives.
	res = mustCall(t, s, "class R:\n    def __repr__(self):\n        raise ValueError('no repr')\nR()")
	if res.Status != sandboxd.StatusError || res.ExitCode != 1 || !strings.Contains(res.Stderr, "ValueError: no repr") || res.Value != nil {
		t.Errorf("repr raising: status %q exit %d value %v stderr %q", res.Status, res.ExitCode, res.Value, res.Stderr)
	}
	// A syntax error, an exception, SystemExit: the call's answer, not the
	// session's end.
	res = mustCall(t, s, "x +")
	if res.Status != sandboxd.StatusError || !strings.Contains(res.Stderr, "SyntaxError") {
		t.Errorf("syntax error: status %q stderr %q", res.Status, res.Stderr)
	}
	res = mustCall(t, s, "1/0")
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "ZeroDivisionError") || strings.Contains(res.Stderr, "run.py") {
		t.Errorf("exception: exit %d stderr %q (the runner's frames must not show)", res.ExitCode, res.Stderr)
	}
	checkCall(t, mustCall(t, s, "import sys\nprint('bye')\nsys.exit(4)"), want{stdout: "bye\n", exit: 4, status: sandboxd.StatusError}, "<none>")
	checkCall(t, mustCall(t, s, "raise SystemExit('why')"), want{stderr: "why\n", exit: 1, status: sandboxd.StatusError}, "<none>")
	checkCall(t, mustCall(t, s, "x"), ok, "42")
}

func TestSessionFilesOut(t *testing.T) {
	d := mustDocker(t, func(c *Config) { c.PoolSize = 1 })
	s := mustSession(t, d)
	names := func(r sandboxd.SessionResult) string {
		var n []string
		for _, f := range r.Files {
			n = append(n, f.Name+"="+string(f.Content))
		}
		return strings.Join(n, ",")
	}
	steps := []struct {
		code  string
		files []sandboxd.File
		want  string
	}{
		{"open('a.txt', 'w').write('1')", nil, "a.txt=1"},
		{"open('b.txt', 'w').write('1')", nil, "b.txt=1"},
		// Same size, same inode, at once: the file time tells (the runner waits
		// for the clock to move past the newest before the call).
		{"open('a.txt', 'w').write('2')", nil, "a.txt=2"},
		{"pass", nil, ""},
		{"open('data.csv').read()", []sandboxd.File{{Name: "data.csv", Content: []byte("x,y\n")}}, ""},
		// A file in sent again replaces the one there; changed by the call,
		// it is out.
		{"open('data.csv', 'a').write('1,2\\n')", []sandboxd.File{{Name: "data.csv", Content: []byte("x,z\n")}}, "data.csv=x,z\n1,2\n"},
		{"import os\nos.remove('b.txt')\nos.makedirs('d/e')\nopen('d/e/f', 'w').write('deep')", nil, "d/e/f=deep"},
	}
	for _, st := range steps {
		res := mustCall(t, s, st.code, st.files...)
		if res.Status != sandboxd.StatusOK || names(res) != st.want {
			t.Fatalf("%q: status %q stderr %q files %q, want %q", st.code, res.Status, res.Stderr, names(res), st.want)
		}
	}
	// A file in over a symbolic link the program left replaces the link;
	// nothing outside /tmp is written.
	res := mustCall(t, s, "import os\nos.symlink('/etc/passwd', 'p')")
	if res.Status != sandboxd.StatusOK {
		t.Fatalf("symlink: %q", res.Stderr)
	}
	res = mustCall(t, s, "import os\nos.path.islink('p'), open('p').read()", sandboxd.File{Name: "p", Content: []byte("mine")})
	if valueOf(res) != "(False, 'mine')" {
		t.Errorf("file in over a link: %s %q", valueOf(res), res.Stderr)
	}
}

// TestSessionLeavesFilesUnread: between calls the runner tells the files a
// call changed by their signatures, never by reading them, so a call after
// one that left a large file costs what any call does (reading 16 MiB twice
// took a trivial call most of a second under gVisor, and past its deadline
// on a busy host). A read would move the files' access times, set to 0
// here; one file's mtime is ahead, which the runner took for recent.
func TestSessionLeavesFilesUnread(t *testing.T) {
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			d := mustDocker(t, func(c *Config) { c.OCIRuntime = oci })
			s := mustSession(t, d)
			code := "import os, time\n" +
				"for name, ahead in (('now', 0), ('ahead', 10**10)):\n" +
				"    with open(name, 'wb') as f:\n" +
				"        f.truncate(9 << 20)\n" +
				"    os.utime(name, ns=(0, os.stat(name).st_mtime_ns + ahead))"
			if res := mustCall(t, s, code); res.Status != sandboxd.StatusOK || len(res.Files) != 2 {
				t.Fatalf("making the files: status %q stderr %q files %d", res.Status, res.Stderr, len(res.Files))
			}
			for range 2 {
				checkCall(t, mustCall(t, s, "[os.stat(n).st_atime_ns for n in ('now', 'ahead')]"), want{status: sandboxd.StatusOK}, "[0, 0]")
			}
			res := mustCall(t, s, "open('ahead', 'r+b').write(b'y')")
			if res.Status != sandboxd.StatusOK || len(res.Files) != 1 || res.Files[0].Name != "ahead" {
				t.Errorf("a change to the file ahead: status %q files %+v, want it out", res.Status, res.Files)
			}
		})
	}
}

func TestSessionStdio(t *testing.T) {
	d := mustDocker(t, func(c *Config) { c.PoolSize = 1 })
	s := mustSession(t, d)
	ok := func(out string) want { return want{stdout: out, status: sandboxd.StatusOK} }
	for _, code := range []string{
		"import os\nos.close(1)\nos.close(2)",
		"import sys\nsys.stdout.close()\nsys.stderr.close()",
		"import sys, io\nsys.stdout = io.StringIO()\nsys.stderr = None",
		"import os\nos.dup2(os.open('/dev/null', os.O_WRONLY), 1)",
		"import os\nos.close(0)",
		"import sys\nprint('half', end='')\nsys.stdout = open('/dev/null', 'w')",
	} {
		mustCall(t, s, code)
		res := mustCall(t, s, "import sys\nprint('back')\nprint('err', file=sys.stderr)\nsys.stdin.read()")
		if res.Stdout != "back\n" || res.Stderr != "err\n" || valueOf(res) != "''" {
			t.Fatalf("after %q: stdout %q stderr %q value %s", code, res.Stdout, res.Stderr, valueOf(res))
		}
	}
	res, err := s.Run(context.Background(), sandboxd.Job{ID: jobID(t), Code: "input()", Stdin: "typed\n"})
	if err != nil || valueOf(res) != "'typed'" {
		t.Errorf("stdin: %v %s", err, valueOf(res))
	}
	checkCall(t, mustCall(t, s, "print(1)"), ok("1\n"), "<none>")
}
