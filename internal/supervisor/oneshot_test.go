package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/runnerproto"
)

// mustRun runs one program of the fake language on a supervisor of the
// given languages and returns the answer and the supervisor's exit status.
func mustRun(t *testing.T, p program, languages ...string) (*host, answer, int) {
	t.Helper()
	h := mustHost(t, languages...)
	if p.token == "" {
		p.token = token(0)
	}
	if p.lang == "" {
		p.lang = "warm"
	}
	h.send(p)
	code := h.exit()
	a, ok := parseAnswer(t, h.out.bytes(), p.token, false)
	if !ok && code != 137 && code != 2 {
		t.Fatalf("no answer: stdout %q, stderr %q", h.out.bytes(), h.errs.bytes())
	}
	return h, a, code
}

func TestOneShotOutputAndStatus(t *testing.T) {
	h, a, code := mustRun(t, program{code: "out hello\nerr oops\nstatus 3\n"}, "warm")
	if a.ack != runnerproto.AckGo && a.ack != runnerproto.AckLate {
		t.Errorf("ack %q", a.ack)
	}
	if a.output != "hello\n" || a.report.Status != 3 || code != 3 {
		t.Errorf("output %q, status %d, exit %d", a.output, a.report.Status, code)
	}
	errs := string(h.errs.bytes())
	if !strings.HasPrefix(errs, "oops\n"+runnerproto.Magic+token(0)+":003 ") {
		t.Errorf("stderr %q", errs)
	}
	if a.rest != "" {
		t.Errorf("after the section: %q", a.rest)
	}
}

func TestOneShotAckIsLateWhenTheProgramCameFirst(t *testing.T) {
	// A stub started for its program (another language than the warm
	// one) costs the program none of its time: the ack says so.
	_, a, _ := mustRun(t, program{lang: "other", code: "out x\n"}, "warm", "other")
	if a.ack != runnerproto.AckLate || a.output != "x\n" {
		t.Errorf("ack %q, output %q", a.ack, a.output)
	}
}

func TestOneShotExitWithoutDone(t *testing.T) {
	_, a, code := mustRun(t, program{code: "out before\nexit 7\n"}, "warm")
	if a.output != "before\n" || a.report.Status != 7 || code != 7 {
		t.Errorf("output %q, status %d, exit %d", a.output, a.report.Status, code)
	}
}

func TestOneShotKilledBySignal(t *testing.T) {
	_, a, _ := mustRun(t, program{code: "out x\nkill TERM\n"}, "warm")
	if a.report.Status != 128+15 || a.output != "x\n" {
		t.Errorf("status %d, output %q", a.report.Status, a.output)
	}
}

func TestOneShotSIGKILLGetsNoMarker(t *testing.T) {
	h, _, code := mustRun(t, program{code: "out x\nkill KILL\n"}, "warm")
	if code != 137 {
		t.Errorf("exit %d", code)
	}
	if _, ok := parseAnswer(t, h.out.bytes(), token(0), false); ok {
		t.Errorf("a marker after SIGKILL: %q", h.out.bytes())
	}
}

func TestOneShotOutputAfterDoneIsDropped(t *testing.T) {
	h, a, _ := mustRun(t, program{code: "out in\nafter teardown\norphan orphaned\n"}, "warm")
	if a.output != "in\n" || a.rest != "" {
		t.Errorf("output %q, after %q", a.output, a.rest)
	}
	time.Sleep(300 * time.Millisecond) // the orphan's write
	if strings.Contains(string(h.out.bytes()), "teardown") || strings.Contains(string(h.out.bytes()), "orphaned") {
		t.Errorf("stdout %q", h.out.bytes())
	}
}

func TestOneShotStubKilledAfterTheAnswer(t *testing.T) {
	// The answer is out at "done", and the stub is killed then: the
	// supervisor does not wait for a teardown (a minute here).
	start := time.Now()
	_, a, code := mustRun(t, program{code: "out in\nlinger\n"}, "warm")
	if a.output != "in\n" || code != 0 {
		t.Errorf("output %q, exit %d", a.output, code)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the supervisor ended %v after the program, waiting for its stub", d)
	}
}

func TestOneShotStdin(t *testing.T) {
	for _, lang := range []string{"warm", "direct"} {
		t.Run(lang, func(t *testing.T) {
			h, a, _ := mustRun(t, program{lang: lang, code: "cat\n", stdin: "line 1\nline 2\n"}, "warm", "direct")
			if a.output != "line 1\nline 2\n" {
				t.Errorf("output %q", a.output)
			}
			if left, _ := os.ReadDir(h.shm); len(left) != 0 {
				t.Errorf("stdin files left: %v", left)
			}
		})
	}
}

func TestOneShotDirectStub(t *testing.T) {
	_, a, code := mustRun(t, program{lang: "direct", code: "out d\nstatus 4\n"}, "warm", "direct")
	if a.ack != runnerproto.AckLate || a.output != "d\n" || a.report.Status != 4 || code != 4 {
		t.Errorf("ack %q, output %q, status %d, exit %d", a.ack, a.output, a.report.Status, code)
	}
}

func TestOneShotUsageIsMeasured(t *testing.T) {
	_, a, _ := mustRun(t, program{code: "burn 150\n"}, "warm")
	if a.report.CPUMS < 100 || a.report.CPUMS > 5000 || a.report.MaxRSSKB <= 0 {
		t.Errorf("cpu %d ms, peak %d KiB", a.report.CPUMS, a.report.MaxRSSKB)
	}
}

func TestOneShotFilesInAndOut(t *testing.T) {
	in := []runnerproto.Record{
		{Name: "kept.txt", Content: []byte("same")},
		{Name: "dir/changed.txt", Content: []byte("before")},
		{Name: "é t'\"$(x)`.txt", Content: []byte("hostile but valid")},
	}
	code := "write dir/changed.txt after\nwrite new.txt fresh\nsymlink /etc/passwd link\n" +
		"symlink dir linkdir\n"
	h, a, _ := mustRun(t, program{code: code, files: in}, "warm")
	got := map[string]string{}
	for _, f := range a.files {
		got[f.Name] = string(f.Content)
	}
	want := map[string]string{"dir/changed.txt": "after", "new.txt": "fresh"}
	if len(got) != len(want) || got["dir/changed.txt"] != "after" || got["new.txt"] != "fresh" {
		t.Errorf("files out %v, want %v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(h.root, "é t'\"$(x)`.txt")); err != nil || string(b) != "hostile but valid" {
		t.Errorf("file in: %q, %v", b, err)
	}
}

func TestOneShotFilesInRefused(t *testing.T) {
	// A name that passes the host but meets a link in /tmp: no link is
	// followed, the program does not run, and the answer says why.
	outside := t.TempDir()
	h := mustHost(t, "warm")
	if err := os.Symlink(outside, filepath.Join(h.root, "dir")); err != nil {
		t.Fatal(err)
	}
	h.send(program{token: token(0), lang: "warm", code: "out ran\n",
		files: []runnerproto.Record{{Name: "dir/x", Content: []byte("x")}}})
	code := h.exit()
	a, ok := parseAnswer(t, h.out.bytes(), token(0), false)
	if !ok || a.report.Status != 1 || a.output != "" || code != 1 {
		t.Errorf("answer %+v (%v), exit %d", a, ok, code)
	}
	if !strings.Contains(string(h.errs.bytes()), "cannot write the files in") {
		t.Errorf("stderr %q", h.errs.bytes())
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Errorf("written through the link: %v", left)
	}
}

func TestOneShotFilesOutCaps(t *testing.T) {
	code := "write a 1234\nwrite b 12\nwrite c 1\n"
	_, a, _ := mustRun(t, program{code: code, maxFiles: 2, maxBytes: 3}, "warm")
	kinds := ""
	for _, f := range a.files {
		kinds += f.Name + string(f.Kind)
	}
	// a is over the bytes: listed; b and c fit.
	if kinds != "albccc" || !a.report.FilesCut {
		t.Errorf("records %q, cut %v", kinds, a.report.FilesCut)
	}
}

func TestStubNeverReady(t *testing.T) {
	h := mustHost(t, "noready")
	h.send(program{token: token(0), lang: "noready", code: "out x\n"})
	time.Sleep(300 * time.Millisecond)
	if len(h.out.bytes()) != 0 {
		t.Errorf("acked a stub that is not ready: %q", h.out.bytes())
	}
	h.cancel()
	if code := h.exit(); code != 2 {
		t.Errorf("exit %d", code)
	}
}

func TestStubDiesBeforeReady(t *testing.T) {
	h := mustHost(t, "dies")
	if code := h.exit(); code != 2 {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(string(h.errs.bytes()), "ended before it was ready (exit status 3)") {
		t.Errorf("stderr %q", h.errs.bytes())
	}
}

func TestOneShotLanguageNotRun(t *testing.T) {
	_, _, code := mustRun(t, program{lang: "other", code: "out x\n"}, "warm")
	if code != 2 {
		t.Errorf("exit %d", code)
	}
}

func TestStubLimits(t *testing.T) {
	const data = 1 << 30 // the fake stub is Go, whose heap reserves much
	for _, lang := range []string{"warm", "direct"} {
		t.Run(lang, func(t *testing.T) {
			got := stubLimits(t, lang, data)
			limit, err := strconv.ParseInt(got["data"], 10, 64)
			// A warm stub's own reservations are not the program's: its
			// limit is the data limit plus what it reserved and did not
			// touch. A stub started for its one-shot gets the data limit.
			if err != nil || limit < data || limit > data+(4<<30) || (lang == "direct" && limit != data) {
				t.Errorf("data limit %q", got["data"])
			}
			if got["adj"] != "1000" || got["leader"] != "true" || got["fds"] != "01234" {
				t.Errorf("limits %v", got)
			}
			if lang == "warm" && got["stack"] != strconv.Itoa(2<<20) {
				t.Errorf("stack %q", got["stack"])
			}
		})
	}
}

// stubLimits runs the fake's "limits" in a stub of lang, and returns what
// it wrote.
func stubLimits(t *testing.T, lang string, data int64) map[string]string {
	t.Helper()
	h := mustHostWith(t, func(s *Supervisor) { s.Limits.Data = data }, "warm", "direct")
	h.send(program{token: token(0), lang: lang, code: "limits\n"})
	h.exit()
	a, ok := parseAnswer(t, h.out.bytes(), token(0), false)
	if !ok {
		t.Fatalf("no answer: %q", h.errs.bytes())
	}
	got := map[string]string{}
	for line := range strings.Lines(a.output) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		got[k] = v
	}
	if lang == "warm" && got["env"] != "HOME=/tmp,LANG=C.UTF-8,PATH=/usr/bin:/bin,STUB=1" {
		t.Errorf("environment %q", got["env"])
	}
	return got
}

func TestOneShotLargeProgramAndOutput(t *testing.T) {
	// Both beyond a pipe's buffer: the program is handed over while the
	// output is pumped.
	code := strings.Repeat("# a comment line of the program\n", 8000) + "big 1000000\nerr e\n"
	_, a, _ := mustRun(t, program{code: code}, "warm")
	if len(a.output) != 1000000 || a.report.Status != 0 {
		t.Errorf("output %d bytes, status %d", len(a.output), a.report.Status)
	}
}

func TestLinkThatDoesNotSpeakTheProtocol(t *testing.T) {
	for name, in := range map[string]string{
		"malformed header": "hello\n",
		"a line too long":  strings.Repeat("x", 2*maxLine),
		"cut short":        token(0) + " 100 0 0 0 1 1 warm\nout x\n",
		"bad records":      token(0) + " 0 0 1 5 1 1 warm\nnope\n",
	} {
		t.Run(name, func(t *testing.T) {
			h := mustHost(t, "warm")
			h.in.Write([]byte(in))
			h.in.Close()
			if code := h.exit(); code != 2 {
				t.Errorf("exit %d", code)
			}
			if strings.Contains(string(h.out.bytes()), runnerproto.Magic) {
				t.Errorf("acked: %q", h.out.bytes())
			}
		})
	}
}

func TestLinkEndsBeforeAnyProgram(t *testing.T) {
	h := mustHost(t, "warm")
	h.in.Close()
	if code := h.exit(); code != 0 {
		t.Errorf("exit %d", code)
	}
}
