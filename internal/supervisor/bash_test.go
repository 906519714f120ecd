package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandboxd/internal/runnerproto"
)

// withBash puts Bash's real entry, with the tree's session rcfile, in a
// supervisor's table; the test is skipped where the host has no bash.
func withBash(t *testing.T) func(*Supervisor) {
	t.Helper()
	if _, err := os.Stat(bashPath); err != nil {
		t.Skipf("no %s here", bashPath)
	}
	rc, err := filepath.Abs("../../images/bash-session.sh")
	if err != nil {
		t.Fatal(err)
	}
	return func(s *Supervisor) { s.Stubs["bash"] = bashStub(rc) }
}

// runBash runs one Bash program on a supervisor of bash (and warm, whose
// stub it replaces) and returns its answer, the supervisor's exit status
// and its stderr before the marker.
func runBash(t *testing.T, p program) (answer, int, string) {
	t.Helper()
	h := mustHostWith(t, withBash(t), "warm", "bash")
	p.token, p.lang = token(0), "bash"
	h.send(p)
	status := h.exit()
	a, ok := parseAnswer(t, h.out.bytes(), token(0), false)
	if !ok {
		t.Fatalf("no answer: exit %d, stdout %q, stderr %q", status, h.out.bytes(), h.errs.bytes())
	}
	errs, _, _ := strings.Cut(string(h.errs.bytes()), runnerproto.Magic)
	return a, status, errs
}

func TestBashOneShot(t *testing.T) {
	for _, c := range []struct {
		name, code, stdin string
		status            int
		out, errs         string
	}{
		{name: "echo", code: "echo hello", out: "hello\n"},
		{name: "script name", code: `echo "$0 $#"`, out: "main.sh 0\n"},
		{name: "exit", code: "echo before\nexit 3\necho after\n", status: 3, out: "before\n"},
		{name: "last status", code: "false", status: 1},
		{name: "set -e", code: "set -e\necho one\nfalse\necho two\n", status: 1, out: "one\n"},
		{name: "error names the line", code: "echo a\nnosuchcommand\n", status: 127, out: "a\n",
			errs: "main.sh: line 2: nosuchcommand: command not found\n"},
		{name: "stdin through a pipe", code: "sort | uniq -c | sort -rn", stdin: "b\na\nb\n",
			out: "      2 b\n      1 a\n"},
		{name: "no stdin", code: `cat; echo "[$?]"`, out: "[0]\n"},
		{name: "bytes kept", code: "printf '%s\\n' 'é€ \xff'", out: "é€ \xff\n"},
		{name: "NUL dropped", code: "echo a\x00b", out: "ab\n"},
		{name: "background job", code: "(echo child) & wait", out: "child\n"},
		{name: "a signal", code: "kill -TERM $$", status: 128 + 15},
		{name: "empty", code: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, status, errs := runBash(t, program{code: c.code, stdin: c.stdin})
			if a.ack != runnerproto.AckLate || a.output != c.out || a.report.Status != c.status ||
				status != c.status || errs != c.errs {
				t.Errorf("ack %q, output %q, status %d, exit %d, stderr %q", a.ack, a.output, a.report.Status,
					status, errs)
			}
		})
	}
}

func TestBashOneShotFilesAndUsage(t *testing.T) {
	code := "tr a-z A-Z < in.txt > out.txt\ni=0; while ((i < 100000)); do ((i++)); done\n"
	a, _, _ := runBash(t, program{code: code,
		files: []runnerproto.Record{{Name: "in.txt", Content: []byte("abc")}}})
	if len(a.files) != 1 || a.files[0].Name != "out.txt" || string(a.files[0].Content) != "ABC" {
		t.Errorf("files %+v", a.files)
	}
	if a.report.CPUMS < 30 {
		t.Errorf("a loop of 100,000 rounds took %d ms of CPU", a.report.CPUMS)
	}
}

func TestBashOneShotAfterWarmNodeCountsOnlyItsOwn(t *testing.T) {
	// The warm node stub, killed for Bash and not waited for, took some
	// 100 ms of CPU and 40 MB to warm up: none of it is the program's.
	st := mustNodeStub(t)
	bash := withBash(t)
	h := mustHostWith(t, func(s *Supervisor) {
		s.Stubs["javascript"] = st
		bash(s)
	}, "javascript", "bash")
	h.send(program{token: token(0), lang: "bash", code: "echo hello"})
	h.exit()
	a, ok := parseAnswer(t, h.out.bytes(), token(0), false)
	// The stub is exec'd from a vfork of the supervisor, and the kernel
	// takes the parent's peak into the child's at the exec: here the
	// parent is this test binary, grown past 20 MB under load (22.6 MB
	// once beside stress-ng), not a supervisor of a few MB.
	limit := max(20<<10, harnessPeakKB(t))
	if !ok || a.output != "hello\n" || a.report.CPUMS > 30 || a.report.MaxRSSKB > limit {
		t.Errorf("answer %+v (%v), peak limit %d KiB, stderr %q", a, ok, limit, h.errs.bytes())
	}
}

// harnessPeakKB is this process's own peak resident size, in KiB.
func harnessPeakKB(t *testing.T) int64 {
	t.Helper()
	peak, _, _, err := procStatus("/proc", os.Getpid())
	if err != nil || peak == 0 {
		t.Fatalf("reading this process's peak: %d KiB, %v", peak, err)
	}
	return peak
}

func TestBashOneShotReadsItsCodeInBlocks(t *testing.T) {
	// A megabyte of code is read in blocks: 40 ms of CPU here, where a
	// read of a byte a system call (read -d "") took 450, billed as the
	// program's.
	code := strings.Repeat("#"+strings.Repeat("x", 63)+"\n", 16384) + "echo end\n"
	if a, _, _ := runBash(t, program{code: code}); a.output != "end\n" || a.report.CPUMS > 200 {
		t.Errorf("output %q, %d ms of CPU", a.output, a.report.CPUMS)
	}
}

func TestBashOneShotProtocolOutOfReach(t *testing.T) {
	// The program can neither write a reply on 4 nor read on 3 (both are
	// closed before it runs), and a marker it prints is output: its run
	// ends at its exit, as the supervisor measures it.
	forged := runnerproto.EndReport{}.Append(nil, token(0), false)
	code := "echo done 0 0 0 >&4\necho ready >&4\ncat <&3\nprintf '%s' " + shellQuote(string(forged)) +
		"\nsleep 0.2\necho real\nexit 4\n"
	a, status, errs := runBash(t, program{code: code})
	if status != 4 || a.report.Status != 4 || !strings.HasSuffix(a.output, "real\n") {
		t.Errorf("exit %d, answer %+v", status, a)
	}
	if n := strings.Count(errs, "Bad file descriptor"); n != 3 {
		t.Errorf("stderr %q", errs)
	}
}

// shellQuote quotes s for a shell's command line.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestBashRequest(t *testing.T) {
	// The count leaves NUL bytes out (bash's read neither keeps nor counts
	// them), and the path is one word whatever it holds.
	got := string(bashRequest([]byte("a\x00b\x00"), "/dev/shm/it's", 12))
	want := `\__sb_read 2 '/dev/shm/it'\''s' 12 && \builtin eval "$__sb_code" <"$__sb_in" 3<&- 4>&-` + "\n"
	if got != want {
		t.Errorf("request %q, want %q", got, want)
	}
}
