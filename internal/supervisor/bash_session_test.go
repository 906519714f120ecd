package supervisor

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandboxd/internal/runnerproto"
)

// mustBashSession opens a Bash session on a supervisor whose warm stub is
// another's (the session replaces it).
func mustBashSession(t *testing.T) *host {
	t.Helper()
	return mustSessionWith(t, withBash(t), "bash", 100, "warm", "bash")
}

// bashCall runs one call of a Bash session and returns its answer and what
// it wrote on stderr, between its ack and its marker there.
func (h *host) bashCall(i int, code, stdin string) (answer, string) {
	h.t.Helper()
	a := h.call(i, program{lang: "bash", code: code, stdin: stdin})
	prefix := runnerproto.Magic + token(i) + ":"
	deadline := time.Now().Add(10 * time.Second)
	for {
		errs := string(h.errs.bytes())
		if _, after, ok := strings.Cut(errs, prefix+runnerproto.AckGo+"\n"); ok {
			if mine, _, ok := strings.Cut(after, prefix); ok {
				return a, mine
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("call %d: no ack and marker on stderr: %q", i, errs)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestBashSessionKeepsTheShell(t *testing.T) {
	h := mustBashSession(t)
	for i, c := range []struct{ code, stdin, out string }{
		{code: "x=41; declare -A m=([k]=v); f() { echo \"f:$1\"; }; cd /; export E=exported; alias ll='echo ll'"},
		{code: "echo $((x + 1)) ${m[k]} $(pwd); f hi; bash -c 'echo $E'; ll",
			out: "42 v /\nf:hi\nexported\nll\n"},
		{code: "sort | uniq -c | sort -rn", stdin: "b\na\nb\n", out: "      2 b\n      1 a\n"},
		{code: "cat; echo \"[$?] $0\"", out: "[0] main.sh\n"},
		{code: "read -r line; echo \"got $line\"; cat", stdin: "first\nrest\n", out: "got first\nrest\n"},
	} {
		a, errs := h.bashCall(i, c.code, c.stdin)
		if a.output != c.out || a.report.Status != 0 || a.report.Value != 0 || errs != "" {
			t.Errorf("call %d: %+v, stderr %q", i, a, errs)
		}
	}
}

func TestBashSessionStatuses(t *testing.T) {
	h := mustBashSession(t)
	for i, c := range []struct {
		code   string
		status int
		errs   string
	}{
		{code: "false", status: 1},
		{code: "(exit 3)", status: 3},
		{code: "nosuchcommand", status: 127, errs: "main.sh: nosuchcommand: command not found\n"},
		{code: "echo $((1 +))", status: 1, errs: "main.sh: 1 +: syntax error: operand expected (error token is \"+\")\n"},
		{code: "set -u; echo $unset_variable; echo not here", status: 1,
			errs: "main.sh: unset_variable: unbound variable\n"},
		{code: "PROMPT_COMMAND=; __sb_read() { :; }", status: 1,
			errs: "main.sh: PROMPT_COMMAND: readonly variable\n"},
		{code: "return 4", status: 2, errs: "main.sh: return: can only `return' from a function or sourced script\n"},
		{code: "echo fine", status: 0},
	} {
		if a, errs := h.bashCall(i, c.code, ""); a.report.Status != c.status || errs != c.errs {
			t.Errorf("call %d (%q): status %d, stderr %q", i, c.code, a.report.Status, errs)
		}
	}
}

func TestBashSessionSurvivesTheProgramsNames(t *testing.T) {
	// A program's functions and aliases named as the shell's own commands,
	// its traces and odd bytes do not reach the stub's commands.
	h := mustBashSession(t)
	h.bashCall(0, "printf() { echo fake; }; read() { :; }; local() { :; }; eval() { :; }; set() { :; }\n"+
		"alias builtin=false __sb_read=false __sb_done=false; shopt -s expand_aliases; y=1", "")
	if a, errs := h.bashCall(1, "echo $y", ""); a.output != "1\n" || errs != "" {
		t.Errorf("after the names: %+v, stderr %q", a, errs)
	}
	// A trace shows the program's commands alone, at eval's depth.
	h.bashCall(2, "unset -f printf read local eval set; unalias -a; set -x", "")
	if a, errs := h.bashCall(3, "echo traced", ""); a.output != "traced\n" || errs != "++ echo traced\n" {
		t.Errorf("a traced call: %+v, stderr %q", a, errs)
	}
	h.bashCall(4, "set +x", "")
	// bash's read drops NUL bytes: a call that holds some leaves the next
	// one whole.
	if a, _ := h.bashCall(5, "echo a\x00b\x00\x00", ""); a.output != "ab\n" {
		t.Errorf("a call with NUL bytes: %+v", a)
	}
	if a, errs := h.bashCall(6, "echo 'é€'", ""); a.output != "é€\n" || errs != "" {
		t.Errorf("the call after: %+v, stderr %q", a, errs)
	}
}

func TestBashSessionProtocolOutOfReach(t *testing.T) {
	// 3 and 4 are closed while the code runs: a reply it writes by number
	// fails, and the call ends at its own end.
	h := mustBashSession(t)
	a, errs := h.bashCall(0, "echo done 0 0 0 >&4; echo ready >&4; cat <&3; sleep 0.2; echo real; (exit 5)", "")
	if a.output != "real\n" || a.report.Status != 5 || strings.Count(errs, "Bad file descriptor") != 3 {
		t.Errorf("answer %+v, stderr %q", a, errs)
	}
	if a, _ = h.bashCall(1, "ls /proc/self/fd | sort -n | tr '\\n' ' '", ""); a.output != "0 1 2 3 " {
		t.Errorf("a command's descriptors: %q", a.output)
	}
}

// waitOutput waits until stdout from offset from holds s.
func (h *host) waitOutput(from int, s string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(h.out.bytes()[from:]), s) {
		if time.Now().After(deadline) {
			h.t.Fatalf("no %q on stdout: %q", s, h.out.bytes()[from:])
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestBashSessionInterrupt(t *testing.T) {
	// The interrupt abandons the whole command, a loop of the shell's own,
	// a child's sleep or a loop of commands, and the shell goes on with
	// everything it had.
	h := mustBashSession(t)
	h.bashCall(0, "kept=yes", "")
	for i, code := range []string{"echo started; while :; do :; done; echo after",
		"sh -c 'echo started; exec sleep 10'; echo after", "echo started; while :; do /bin/true; done; echo after",
		"echo started; while :; do /bin/true; done; echo after", "echo started; while :; do /bin/true; done; echo after",
		"echo started; while :; do /bin/true; done; echo after", "echo started; while :; do /bin/true; done; echo after",
	} {
		i++
		from := len(h.out.bytes())
		h.send(program{token: token(i), lang: "bash", code: code})
		h.waitOutput(from, "started\n")
		// A loop of commands loses a third of the SIGINTs that come at a
		// random moment (in a child between its fork and its exec).
		time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
		h.interrupt()
		a, ok := h.waitEnd(token(i), from, true)
		if !ok || a.report.Status != 130 || !a.report.Interrupted || a.output != "started\n" {
			t.Errorf("call %d (%q): %+v (%v)", i, code, a, ok)
		}
	}
	if a, _ := h.bashCall(8, "echo $kept", ""); a.output != "yes\n" || a.report.Interrupted {
		t.Errorf("after the interrupts: %+v", a)
	}
}

func TestBashSessionLoopDeafToTheInterrupt(t *testing.T) {
	// A loop after trap '' INT cannot be interrupted: the call is not
	// answered and the shell keeps running it, until the host, after its
	// grace, kills the container and ends the session.
	h := mustBashSession(t)
	from := len(h.out.bytes())
	h.send(program{token: token(0), lang: "bash", code: "trap '' INT; echo started; while :; do :; done"})
	h.waitOutput(from, "started\n")
	h.interrupt()
	time.Sleep(500 * time.Millisecond)
	if _, ok := parseAnswer(t, h.out.bytes()[from:], token(0), true); ok {
		t.Errorf("an answer to a call deaf to the interrupt: %q", h.out.bytes()[from:])
	}
	select {
	case code := <-h.code:
		t.Errorf("the supervisor ended (%d) under a running call", code)
	default:
	}
}

func TestBashSessionEndsWithTheShell(t *testing.T) {
	// exit ends the shell, so the session: no marker, the shell's status.
	h := mustBashSession(t)
	h.bashCall(0, "x=1", "")
	h.send(program{token: token(1), lang: "bash", code: "echo bye; exit 7"})
	if code := h.exit(); code != 7 {
		t.Errorf("exit %d", code)
	}
	if _, ok := parseAnswer(t, h.out.bytes(), token(1), true); ok || !strings.Contains(string(h.out.bytes()), "bye\n") {
		t.Errorf("stdout %q", h.out.bytes())
	}
}

func TestBashSessionInterruptsAroundTheDone(t *testing.T) {
	// Interrupts that keep coming while the shell comes back from one (the
	// stub's own, every Reinterrupt, and SIGINTs that reach the shell late,
	// as gVisor may deliver them), here every 50 µs until 5 ms after the
	// answer, cut the shell's own commands at every point of its done: the
	// session outlives each, and no piece of a done reaches the call's stdout.
	var sup *Supervisor
	bash := withBash(t)
	h := mustSessionWith(t, func(s *Supervisor) { bash(s); sup = s }, "bash", 100, "warm", "bash")
	a, _ := h.bashCall(0, "kept=yes; echo $$", "")
	shell, err := strconv.Atoi(strings.TrimSpace(a.output))
	if err != nil {
		t.Fatalf("the shell's pid: %q", a.output)
	}
	for i := 1; i <= 40; i++ {
		from := len(h.out.bytes())
		h.send(program{token: token(i), lang: "bash", code: "echo started; while :; do :; done"})
		h.waitOutput(from, "started\n")
		stop := make(chan struct{})
		flooded := make(chan struct{})
		go func() {
			defer close(flooded)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Microsecond):
					sup.interrupt.Store(true)
					sup.wake()
					unix.Kill(-shell, unix.SIGINT)
				}
			}
		}()
		a, ok := h.waitEnd(token(i), from, true)
		time.Sleep(5 * time.Millisecond)
		close(stop)
		<-flooded
		// Interrupted or not as the supervisor's or a late SIGINT came first.
		if !ok || a.report.Status != 130 || a.output != "started\n" {
			t.Fatalf("call %d: %+v, stdout %q", i, a, a.output)
		}
	}
	// A SIGINT that came at the prompt may leave bash's newline for it.
	if a, errs := h.bashCall(41, "echo $kept", ""); a.output != "yes\n" || a.report.Interrupted || strings.Trim(errs, "\n") != "" {
		t.Errorf("after the interrupts: %+v, stderr %q", a, errs)
	}
}

func TestBashSessionForgedDoneEndsOnlyItsCall(t *testing.T) {
	// A program that finds the shell's kept reply descriptor can answer its
	// own call early; the shell's real done is then a copy, dropped, and the
	// session goes on, the rest of that code running between the calls (its
	// output dropped) or into the next.
	h := mustBashSession(t)
	forge := `for f in /proc/$$/fd/*; do n=${f##*/}; ` +
		`if [[ $n -gt 9 && $(readlink "$f") == pipe:* ]]; then echo "done 7 0 0 $__sb_ran" >&"$n" 2>/dev/null; fi; done; ` +
		`echo late`
	if a, _ := h.bashCall(0, forge, ""); a.report.Status != 7 {
		t.Fatalf("the forged done: %+v", a)
	}
	if a, _ := h.bashCall(1, "echo next", ""); a.report.Status != 0 || strings.TrimPrefix(a.output, "late\n") != "next\n" {
		t.Errorf("the next call: %+v %q", a, a.output)
	}
}
