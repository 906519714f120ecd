package interop

import (
	"os"
	"strings"
	"testing"
)

// TestChannelCLI: `sandboxd call` against a service offering channels pays through one
// (--scheme auto): the first call deposits 10 prices into the escrow, the second pays by
// voucher with no transaction; a session opened by `sandboxd session open` is paid the same
// way; `sandboxd channel show` lists the channel and `sandboxd channel refund` gets back
// what was not charged. The state file beside the key is mode 600.
func TestChannelCLI(t *testing.T) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000}, "--channels")
	svc := startService(t, instance("channel-cli"), true, paymentEnv(settlementEnv(t, c, "onchain", nil))...)
	key := writeKey(t, "payer.key", payer.key)
	code, out := runSandboxd(t, "call", "--key-file", key, "--url", svc.URL+"/v1/code", "-c", "print(6*7)")
	if code != 0 || !strings.Contains(out, `"stdout": "42\n"`) || !strings.Contains(out, "through channel") {
		t.Fatalf("first call: exit %d\n%s", code, out)
	}
	if got := c.balance(t, escrowAddr); got != 10*price {
		t.Fatalf("the escrow holds %d after the first call, want a deposit of %d", got, 10*price)
	}
	code, out = runSandboxd(t, "call", "--key-file", key, "--url", svc.URL+"/v1/code", "-c", "print(7*6)")
	if code != 0 || !strings.Contains(out, `"stdout": "42\n"`) || !strings.Contains(out, "running total 10000") {
		t.Fatalf("second call: exit %d\n%s", code, out)
	}
	code, out = runSandboxd(t, "session", "open", "--key-file", key, "--url", svc.URL+"/v1/sessions")
	m := sessionIDIn.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "running total 15000") {
		t.Fatalf("session open: exit %d\n%s", code, out)
	}
	code, out = runSandboxd(t, "call", "--key-file", key, "--url", svc.URL+"/v1/code", "--session", m[1], "-c", "6*7")
	if code != 0 || !strings.Contains(out, `"result": "42"`) || !strings.Contains(out, "running total 20000") {
		t.Fatalf("session call: exit %d\n%s", code, out)
	}
	if st, err := os.Stat(key + ".channels"); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", st, err)
	}
	if code, out = runSandboxd(t, "channel", "show", "--key-file", key); code != 0 || !strings.Contains(out, "20000") {
		t.Fatalf("channel show: exit %d\n%s", code, out)
	}
	if code, out = runSandboxd(t, "channel", "refund", "--key-file", key, "--url", svc.URL); code != 0 || !strings.Contains(out, "30000") {
		t.Fatalf("channel refund: exit %d\n%s", code, out)
	}
	if got := c.balance(t, payer.address); got != 10_000_000-4*price {
		t.Fatalf("the payer holds %d after the refund, want %d (4 prices spent)", got, 10_000_000-4*price)
	}
}
