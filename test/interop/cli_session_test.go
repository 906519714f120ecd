package interop

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sessionIDIn finds the session id in what `sandboxd session open` printed.
var sessionIDIn = regexp.MustCompile(`"session_id": "(ses_[0-9a-f]{32})"`)

// runSandboxd runs the binary with args and returns its exit code and output.
func runSandboxd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	if err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode(), string(out)
		}
		t.Fatalf("sandboxd %v: %v", args, err)
	}
	return 0, string(out)
}

// TestCLISessionPaid: `sandboxd session open`, two `sandboxd call --session`
// calls that build on each other, `session show` and `session close`, against the real
// service settling on anvil: the opening and each call are paid once (one transfer each,
// from the payer), show and close pay nothing, and the closed session is refused.
func TestCLISessionPaid(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance("cli-session"), true, paymentEnv(env)...)
	key := writeKey(t, "payer.key", payer.key)
	before := snapshot(t, c)

	code, out := runSandboxd(t, "session", "open", "--key-file", key, "--url", svc.URL+"/v1/sessions")
	m := sessionIDIn.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "HTTP 201") || !strings.Contains(out, "paid: payer") {
		t.Fatalf("session open: exit %d\n%s", code, out)
	}
	id := m[1]
	for _, call := range []struct{ code, want string }{{"x = 41", `"result": null`}, {"x += 1\nx", `"result": "42"`}} {
		code, out := runSandboxd(t, "call", "--key-file", key, "--url", svc.URL+"/v1/code", "--session", id, "-c", call.code)
		if code != 0 || !strings.Contains(out, call.want) || !strings.Contains(out, "paid: payer") {
			t.Fatalf("call --session %q: exit %d\n%s", call.code, code, out)
		}
	}
	if code, out := runSandboxd(t, "session", "show", "--url", svc.URL+"/v1/sessions", id); code != 0 || !strings.Contains(out, `"calls": 2`) {
		t.Fatalf("session show: exit %d\n%s", code, out)
	}
	if code, out := runSandboxd(t, "session", "close", "--url", svc.URL+"/v1/sessions", id); code != 0 || out != "HTTP 204\n" {
		t.Fatalf("session close: exit %d\n%q", code, out)
	}
	if code, out := runSandboxd(t, "call", "--key-file", key, "--url", svc.URL+"/v1/code", "--session", id, "-c", "x"); code != 1 ||
		!strings.Contains(out, "HTTP 404") {
		t.Fatalf("call in the closed session: exit %d\n%s", code, out)
	}

	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address)-before.payee == 3*price })
	transfers := c.transfersTo(t, payee.address, before.block)
	if len(transfers) != 3 || c.balance(t, payee.address)-before.payee != 3*price {
		t.Fatalf("%d transfers, %d moved; want 3 of the price: the opening and two calls", len(transfers), c.balance(t, payee.address)-before.payee)
	}
	for _, tr := range transfers {
		if !strings.EqualFold(tr.From, payer.address) {
			t.Errorf("transfer %+v is not the payer's", tr)
		}
	}
}
