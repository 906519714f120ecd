package interop

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChannelKillBeforeClaim: sandboxd answers calls paid by vouchers and is killed
// (SIGKILL) before it claims them: no claim pass is due (claim_every 10 min, a threshold of
// 1 USDC), and none had run. Each charge was committed to the ledger before its answer left,
// so sandboxd restarted on the same ledger, with a threshold of one call, claims every one of
// them and sweeps them to payTo; the payer's next call, from a client that knows only the
// chain, goes on from the charged total.
func TestChannelKillBeforeClaim(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer)
	env := append(channelEnv(t, c, "onchain", nil), "SANDBOX_PAYMENTS_LEDGER="+filepath.Join(t.TempDir(), "ledger.db"))
	name := instance("channel-kill")
	svc := startService(t, name, true, env...)
	// The claimer's first pass, due at start, claims nothing yet.
	time.Sleep(2 * time.Second)
	key := writeKey(t, "payer.key", payer.key)
	code := codeCall(svc.URL, "print(6*7)")
	id, charged := checkCharged(t, payByChannel(t, c, key, 1, code, code, code, code).Results, 0)
	if err := svc.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-svc.Exited()
	// Containers the killed service was creating appear after it died: the restarted one reaps
	// them only if they are there when it starts.
	last := ""
	waitFor(15*time.Second, func() bool {
		now := strings.Join(containersOf(t, name), ",")
		settled := now == last
		last = now
		time.Sleep(time.Second)
		return settled
	})
	if st := escrowState(t, c, id); st.TotalClaimed.Sign() != 0 {
		t.Fatalf("%s was claimed before the kill: there was nothing left to lose", st.TotalClaimed)
	}

	svc = startService(t, name, true, append(env, "SANDBOX_PAYMENTS_CHANNELS_CLAIM_THRESHOLD=0.005")...)
	waitClaimed(t, c, id, charged)
	waitFor(30*time.Second, func() bool { return c.balance(t, payee.address) == charged })
	if got := c.balance(t, payee.address); got != charged {
		t.Errorf("payTo holds %d, want the %d charged before the kill", got, charged)
	}
	next := payByChannel(t, c, key, 1, codeCall(svc.URL, "print(6*7)"))
	checkCharged(t, next.Results, charged)
}
