package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/runnerproto"
)

// mustSession opens a session of lang on a supervisor of the fake stubs.
func mustSession(t *testing.T, lang string, maxValue int64, languages ...string) *host {
	t.Helper()
	return mustSessionWith(t, nil, lang, maxValue, languages...)
}

// mustSessionWith is mustSession with a change to the supervisor before it
// runs (mustHostWith's).
func mustSessionWith(t *testing.T, change func(*Supervisor), lang string, maxValue int64,
	languages ...string) *host {
	t.Helper()
	h := mustHostWith(t, change, languages...)
	hd := runnerproto.SessionHeader{Token: token(25), MaxValue: maxValue, Language: lang}
	if _, err := h.in.Write(hd.Append(nil)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	want := runnerproto.Magic + token(25) + ":go\n"
	for !strings.HasPrefix(string(h.out.bytes()), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no loop ack: %q, stderr %q", h.out.bytes(), h.errs.bytes())
		}
		time.Sleep(2 * time.Millisecond)
	}
	return h
}

// call sends a call and waits for its answer.
func (h *host) call(i int, p program) answer {
	h.t.Helper()
	p.token = token(i)
	if p.lang == "" {
		p.lang = "warm"
	}
	from := len(h.out.bytes())
	h.send(p)
	a, ok := h.waitEnd(p.token, from, true)
	if !ok {
		h.t.Fatalf("call %d: no answer: %q, stderr %q", i, h.out.bytes()[from:], h.errs.bytes())
	}
	return a
}

func TestSessionCallsWithValues(t *testing.T) {
	h := mustSession(t, "warm", 5, "warm")
	a := h.call(0, program{code: "out one\nvalue 1\n"})
	if a.ack != runnerproto.AckGo || a.output != "one\n" || a.value != "1" || a.report.Value != 1 {
		t.Errorf("call 0: %+v", a)
	}
	a = h.call(1, program{code: "status 3\nvalue long value\n"})
	if a.report.Status != 3 || a.value != "long " || a.report.Value != 2 || a.report.ValueLen != 5 {
		t.Errorf("call 1 (cut value): %+v", a)
	}
	a = h.call(2, program{code: "out no value\n"})
	if a.report.Value != 0 || a.value != "" || a.output != "no value\n" {
		t.Errorf("call 2: %+v", a)
	}
	// Both streams carry each call's ack and marker.
	errs := string(h.errs.bytes())
	for i := range 3 {
		if n := strings.Count(errs, runnerproto.Magic+token(i)+":"); n != 2 {
			t.Errorf("stderr has %d acks and markers of call %d: %q", n, i, errs)
		}
	}
	h.in.Close()
	if code := h.exit(); code != 0 {
		t.Errorf("exit %d after the host ended the session", code)
	}
}

func TestSessionInterrupt(t *testing.T) {
	h := mustSession(t, "warm", 100, "warm")
	from := len(h.out.bytes())
	h.send(program{token: token(0), lang: "warm", code: "waitint\nout after\n"})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(h.out.bytes()[from:]), "waiting\n") && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	h.interrupt()
	a, ok := h.waitEnd(token(0), from, true)
	if !ok || a.report.Status != 130 || !a.report.Interrupted || a.output != "waiting\nafter\n" {
		t.Fatalf("interrupted call: %+v (%v)", a, ok)
	}
	// The session goes on, and a call no interrupt reached says so.
	a = h.call(1, program{code: "value ok\n"})
	if a.report.Interrupted || a.value != "ok" {
		t.Errorf("next call: %+v", a)
	}
}

func TestSessionDropsOutputBetweenCalls(t *testing.T) {
	h := mustSession(t, "warm", 100, "warm")
	a := h.call(0, program{code: "out mine\norphan leftover\n"})
	if a.output != "mine\n" {
		t.Errorf("call 0 output %q", a.output)
	}
	time.Sleep(400 * time.Millisecond) // the orphan writes between calls
	a = h.call(1, program{code: "out second\n"})
	if a.output != "second\n" || strings.Contains(string(h.out.bytes()), "leftover") {
		t.Errorf("call 1 output %q, stdout %q", a.output, h.out.bytes())
	}
}

func TestSessionFiles(t *testing.T) {
	h := mustSession(t, "warm", 100, "warm")
	a := h.call(0, program{code: "write made.txt 1\n",
		files: []runnerproto.Record{{Name: "in.txt", Content: []byte("in")}}})
	if len(a.files) != 1 || a.files[0].Name != "made.txt" {
		t.Errorf("call 0 files %+v", a.files)
	}
	// A file left by the last call and not changed is not sent again; a
	// file in replaces a link of its name, never following it.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(h.root, "in.txt"))
	if err := os.Symlink(target, filepath.Join(h.root, "in.txt")); err != nil {
		t.Fatal(err)
	}
	a = h.call(1, program{code: "write other.txt 2\n",
		files: []runnerproto.Record{{Name: "in.txt", Content: []byte("again")}}})
	if len(a.files) != 1 || a.files[0].Name != "other.txt" {
		t.Errorf("call 1 files %+v", a.files)
	}
	if b, _ := os.ReadFile(target); string(b) != "outside" {
		t.Errorf("the link was followed: %q", b)
	}
}

func TestSessionStubDies(t *testing.T) {
	h := mustSession(t, "warm", 100, "warm")
	h.call(0, program{code: "value 1\n"})
	h.send(program{token: token(1), lang: "warm", code: "out last\nexit 5\n"})
	if code := h.exit(); code != 5 {
		t.Errorf("exit %d", code)
	}
	if _, ok := parseAnswer(t, h.out.bytes(), token(1), true); ok {
		t.Errorf("a marker for a call whose stub died: %q", h.out.bytes())
	}
}

func TestSessionForgedReplyEndsIt(t *testing.T) {
	// A program that writes on the stub's 4 breaks only its own session.
	h := mustSession(t, "warm", 100, "warm")
	h.send(program{token: token(0), lang: "warm", code: "replies hello\nwaitint\n"})
	if code := h.exit(); code != 128+9 {
		t.Errorf("exit %d", code)
	}
}

func TestSessionOfAnotherLanguage(t *testing.T) {
	// The warm stub serves a session of a language that shares it; a call
	// of another language ends the session.
	h := mustSession(t, "alias", 100, "warm", "alias")
	from := len(h.out.bytes())
	h.send(program{token: token(0), lang: "warm", code: "value 1\n"})
	if code := h.exit(); code != 2 {
		t.Errorf("exit %d, stdout %q", code, h.out.bytes()[from:])
	}
	if !strings.Contains(string(h.errs.bytes()), "a warm call in a alias session") {
		t.Errorf("stderr %q", h.errs.bytes())
	}
}

func TestSessionOfAShell(t *testing.T) {
	// A stub that takes its requests on 0 in its own syntax (Bash's
	// session shell), started for the session though another is warm.
	h := mustSession(t, "shell", 100, "warm", "shell")
	for i := range 2 {
		a := h.call(i, program{lang: "shell", code: "cat\nvalue v\n", stdin: fmt.Sprint("in ", i)})
		if a.output != fmt.Sprint("in ", i) || a.value != "v" {
			t.Errorf("call %d: %+v", i, a)
		}
	}
}

func TestSessionUsageCountsOrphans(t *testing.T) {
	h := mustSession(t, "warm", 100, "warm")
	a := h.call(0, program{code: "orphanburn 60\nsleep 1500\n"})
	if a.report.CPUMS < 40 {
		t.Errorf("cpu %d ms: the orphan's was not counted", a.report.CPUMS)
	}
	// The next call is not billed for it.
	if a = h.call(1, program{code: "out x\n"}); a.report.CPUMS > 50 {
		t.Errorf("next call's cpu %d ms", a.report.CPUMS)
	}
}
