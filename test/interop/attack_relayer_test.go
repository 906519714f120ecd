package interop

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRelayerRecoversFromADroppedSettlement runs the service settling on chain against
// anvil, which stops mining while a settlement waits in its pool and then drops it
// (anvil_dropAllTransactions). The service sends that settlement again when it stays
// unmined at the head of the relayer's queue (or, had its payer given up, resyncs the
// relayer's nonce): the dropped call is paid exactly when it is answered 200, and the
// next paid call settles instead of waiting behind a lost nonce until a restart.
func TestRelayerRecoversFromADroppedSettlement(t *testing.T) {
	c, url, payerKey, answer := settlementInPool(t, "relayer-drop")
	for _, call := range [][]any{{"anvil_dropAllTransactions"}, {"evm_setAutomine", true}} {
		if err := c.call(new(any), call[0].(string), call[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	got := <-answer
	paid := int64(0)
	if strings.HasPrefix(got, "200") {
		paid = price
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) == paid })
	if b := c.balance(t, payee.address); b != paid {
		t.Fatalf("the dropped settlement's call answered %s, and the payee holds %d; want %d", got, b, paid)
	}
	before := snapshot(t, c)
	testPaid(t, c, url, payerKey)
	if d := c.balance(t, payee.address) - before.payee; d != price {
		t.Errorf("payee got %d after the drop, want %d", d, price)
	}
}

// TestRelayerReplacesAStuckSettlement: the base fee jumps far above what a waiting
// settlement offers, so anvil keeps it in its pool unmined; the service replaces it (same
// nonce, higher fees), and the payer gets the paid answer.
func TestRelayerReplacesAStuckSettlement(t *testing.T) {
	c, url, payerKey, answer := settlementInPool(t, "relayer-stuck")
	for _, call := range [][]any{
		{"anvil_setNextBlockBaseFeePerGas", "0xe8d4a51000"}, // 1000 gwei
		{"evm_mine"},
		{"evm_setAutomine", true},
	} {
		if err := c.call(new(any), call[0].(string), call[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-answer; !strings.HasPrefix(got, "200") || !strings.Contains(got, `"stdout":"42\n"`) {
		t.Fatalf("the stuck settlement's call: %s; want 200 with the run once it was replaced", got)
	}
	if got := c.balance(t, payee.address); got != price {
		t.Errorf("payee holds %d, want %d", got, price)
	}
	testPaid(t, c, url, payerKey)
}

// settlementInPool starts the service settling on chain (settle_timeout 20 s, so a stuck
// transaction is replaced after 5 s) against anvil with mining off, and sends one paid
// call whose settlement then waits in anvil's pool. It returns the chain, the call URL,
// the payer's key file and where the call's "STATUS BODY" will come.
func settlementInPool(t *testing.T, name string) (*chain, string, string, chan string) {
	t.Helper()
	mustInterop(t)
	c, env := startMode(t, "onchain", nil)
	svc := startService(t, instance(name), true, append(paymentEnv(env), "SANDBOX_PAYMENTS_SETTLE_TIMEOUT=20s")...)
	url := svc.URL + "/v1/code"
	payerKey := writeKey(t, "payer.key", payer.key)
	var first clientSigned
	runClient(t, &first, "sign", url, payerKey)
	if err := c.call(new(any), "evm_setAutomine", false); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() { answer <- postQuietly(url, first.Headers["PAYMENT-SIGNATURE"]) }()
	queued := func() bool { return c.nonce(t, relayer.address, "pending") > c.nonce(t, relayer.address, "latest") }
	waitFor(30*time.Second, queued)
	if !queued() {
		t.Fatalf("no settlement reached anvil's pool; the call answered %s", <-answer)
	}
	return c, url, payerKey, answer
}

// nonce is addr's transaction count at block tag ("latest" or "pending").
func (c *chain) nonce(t testing.TB, addr, tag string) int64 {
	t.Helper()
	var hex string
	if err := c.call(&hex, "eth_getTransactionCount", addr, tag); err != nil {
		t.Fatal(err)
	}
	return hexInt(t, hex).Int64()
}

// postQuietly posts print(6*7) with a v2 payment header and returns "STATUS BODY", or the
// error; it never fails the test (it runs outside the test's goroutine).
func postQuietly(url, payment string) string {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"language":"python","code":"print(6*7)"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("PAYMENT-SIGNATURE", payment)
	res, err := httpClient.Do(req)
	if err != nil {
		return "error " + err.Error()
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.Status[:3] + " " + string(body)
}
