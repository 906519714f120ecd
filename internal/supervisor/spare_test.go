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

func TestBashOneShotRunsOnTheSpareStartedWithTheContainer(t *testing.T) {
	// Bash's shell is started beside the warm stub: a program that comes
	// 1.2 s later finds a shell as old (bash's SECONDS counts from its
	// start), acked as on time, with its stdin as 0.
	h := mustHostWith(t, withBash(t), "warm", "bash")
	time.Sleep(1200 * time.Millisecond)
	h.send(program{token: token(0), lang: "bash", code: `echo "$SECONDS $0"; cat`, stdin: "in\n"})
	status := h.exit()
	a, ok := parseAnswer(t, h.out.bytes(), token(0), false)
	if !ok || status != 0 {
		t.Fatalf("no answer: exit %d, stdout %q, stderr %q", status, h.out.bytes(), h.errs.bytes())
	}
	if a.ack != runnerproto.AckGo || !strings.HasSuffix(a.output, " main.sh\nin\n") {
		t.Fatalf("ack %q, output %q", a.ack, a.output)
	}
	if s, _, _ := strings.Cut(a.output, " "); s == "0" {
		t.Errorf("the shell started with its program: SECONDS %s", s)
	}
}

func TestSpareKilledForAnotherLanguage(t *testing.T) {
	// A program of the warm stub's language leaves no spare shell behind.
	h := mustHostWith(t, withBash(t), "warm", "bash")
	time.Sleep(200 * time.Millisecond)
	if n := bashChildren(t); n != 1 {
		t.Fatalf("%d spare shells before the program, want 1", n)
	}
	h.send(program{token: token(0), lang: "warm", code: "out hi"})
	h.exit()
	deadline := time.Now().Add(2 * time.Second)
	for bashChildren(t) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the spare shell outlived the program of another language")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bashChildren counts the test's live child processes that run the shell
// (zombies, killed and not yet reaped, do not count).
func bashChildren(t *testing.T) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n, self := 0, strconv.Itoa(os.Getpid())
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == self && f[0] != "Z" && strings.Contains(string(b), "(bash)") {
			n++
		}
	}
	return n
}
