package interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	payledger "sandboxd/payments/ledger"
)

// TestShutdownFinishesSettlement: SIGTERM arrives while a paid call's
// settlement is in flight (its receipt comes 4 s late) and the shutdown grace is 1 s. The
// service neither closes the ledger and the chain client under the settlement nor the
// payer's connection: the payer gets its answer with a successful PAYMENT-RESPONSE, and
// the ledger row is settled with the transaction.
func TestShutdownFinishesSettlement(t *testing.T) {
	mustInterop(t)
	const late = 4 * time.Second
	c, modeEnv := startMode(t, "onchain", func(t testing.TB, url string) string {
		return delayProxy(t, url, late, func(_ string, req, _ []byte) bool {
			return bytes.Contains(req, []byte("eth_getTransactionReceipt"))
		})
	})
	ledgerPath := filepath.Join(t.TempDir(), "ledger.db")
	env := append(paymentEnv(modeEnv), "SANDBOX_SERVER_SHUTDOWN_TIMEOUT=1s", "SANDBOX_PAYMENTS_LEDGER="+ledgerPath)
	svc := startService(t, instance("shutdown"), true, env...)
	url := svc.URL + "/v1/code"
	before := snapshot(t, c)
	h := signPayments(t, url, "--key-file", writeKey(t, "payer.key", payer.key))[0]
	type answer struct {
		status int
		body   runBody
		header http.Header
	}
	answered := make(chan answer, 1)
	go func() {
		status, body, header := paidPost(t, url, h, "print(6*7)", 60*time.Second)
		answered <- answer{status, body, header}
	}()
	// The transfer is mined (anvil mines at once) while its receipt is held back.
	waitFor(20*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	svc.stop()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer")
	}
	if a.status != http.StatusOK || a.body.Stdout == nil || *a.body.Stdout != "42\n" {
		t.Fatalf("a paid call settling during shutdown: status %d, body %v; want 200 with 42", a.status, a.body)
	}
	if sr := settlementOf(t, a.header); !sr.Success {
		t.Fatalf("PAYMENT-RESPONSE %+v, want success", sr)
	}
	hash := expectMoved(t, c, before, payer.address)
	row := ledgerRow(t, ledgerPath, h)
	if row.Status != payledger.StatusSettled || !strings.EqualFold(row.TxHash, hash) {
		t.Fatalf("ledger row after shutdown %+v, want settled by %s", row, hash)
	}
}

// ledgerRow reads the ledger row of the payment h from the ledger file of a stopped service.
func ledgerRow(t *testing.T, path string, h signed) payledger.Entry {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(h.Value)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Payload struct {
			Authorization struct{ From, Nonce string } `json:"authorization"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	l, err := payledger.OpenFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	row, err := l.Get(context.Background(), p.Payload.Authorization.From, p.Payload.Authorization.Nonce)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// settlementOf decodes the PAYMENT-RESPONSE header of an answer.
func settlementOf(t *testing.T, h http.Header) settleResponse {
	t.Helper()
	var sr settleResponse
	headerJSON(t, h, "PAYMENT-RESPONSE", &sr)
	return sr
}

// headerJSON decodes the x402 header name of an answer (base64 of JSON) into v.
func headerJSON(t *testing.T, h http.Header, name string, v any) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(h.Get(name))
	if err != nil || json.Unmarshal(raw, v) != nil {
		t.Fatalf("%s %q does not decode", name, h.Get(name))
	}
}
