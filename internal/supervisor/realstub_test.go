package supervisor

import (
	"os/exec"
	"strings"
	"testing"
)

func TestOneShotOfARealShell(t *testing.T) {
	// §4.7's Bash one-shot line, started for its call with the code on 3
	// and the stdin on 0: the supervisor's side of a real interpreter.
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	h := mustHostWith(t, func(s *Supervisor) {
		s.Stubs["bash"] = Stub{Name: "bash", Argv: func(Limits, bool) []string {
			return []string{bash, "--norc", "--noprofile", "-c",
				`IFS= read -r -d "" -u 3 __sb; exec 3<&-; eval "$__sb"`, "main.sh"}
		}}
	}, "warm", "bash")
	code := "echo \"$0 $(cat)\"\necho oops >&2\necho made > out.txt\nexit 3\n"
	h.send(program{token: token(0), lang: "bash", code: code, stdin: "in"})
	if status := h.exit(); status != 3 {
		t.Errorf("exit %d, stderr %q", status, h.errs.bytes())
	}
	a, ok := parseAnswer(t, h.out.bytes(), token(0), false)
	if !ok || a.output != "main.sh in\n" || a.report.Status != 3 || len(a.files) != 1 || a.ack != "gl" {
		t.Errorf("answer %+v (%v)", a, ok)
	}
	if errs := string(h.errs.bytes()); !strings.HasPrefix(errs, "oops\n") {
		t.Errorf("stderr %q", errs)
	}
}
