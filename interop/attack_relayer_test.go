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
// (anvil_dropAllTransactions): that payment's outcome is unknown, but the next paid call
// settles, instead of waiting behind the relayer's lost nonce until a restart.
func TestRelayerRecoversFromADroppedSettlement(t *testing.T) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000})
	svc := startService(t, instance("relayer-drop"), true,
		append(paymentEnv(settlementEnv(t, c, "onchain")), "SANDBOX_PAYMENTS_SETTLE_TIMEOUT=8s")...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sandboxd log:\n%s", svc.output())
		}
	})
	url := svc.url + "/v1/code"
	payerKey := writeKey(t, "payer.key", payer.key)

	var first signed
	runClient(t, &first, "sign", url, payerKey)
	if err := c.call(new(any), "evm_setAutomine", false); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		answer <- postQuietly(url, first.Headers["PAYMENT-SIGNATURE"])
	}()
	waitFor(30*time.Second, func() bool { return c.nonce(t, relayer.address, "pending") > c.nonce(t, relayer.address, "latest") })
	if c.nonce(t, relayer.address, "pending") == c.nonce(t, relayer.address, "latest") {
		t.Fatalf("no settlement reached anvil's pool; the call answered %s", <-answer)
	}
	for _, call := range [][]any{{"anvil_dropAllTransactions"}, {"evm_setAutomine", true}} {
		if err := c.call(new(any), call[0].(string), call[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-answer; strings.Contains(got, `"stdout"`) && strings.HasPrefix(got, "200") {
		t.Fatalf("the dropped settlement was answered as paid: %s", got)
	}
	before := snapshot(t, c)
	testPaid(t, c, url, payerKey)
	if d := c.balance(t, payee.address) - before.payee; d != price {
		t.Errorf("payee got %d after the drop, want %d", d, price)
	}
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
