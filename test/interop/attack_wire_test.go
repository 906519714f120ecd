package interop

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWireAttacks sends hostile forms of real payments (made by the official client) to
// the real service, in both settlement modes, on anvil: every one is refused before
// anything is reserved or settled, and the honest payer can still pay afterwards.
func TestWireAttacks(t *testing.T) {
	mustInterop(t)
	for _, mode := range []string{"onchain", "facilitator"} {
		t.Run(mode, func(t *testing.T) {
			c, env := startMode(t, mode, nil)
			svc := startService(t, instance("wire-"+mode), true, paymentEnv(env)...)
			url := svc.URL + "/v1/code"
			payerKey := writeKey(t, "payer.key", payer.key)
			decoyKey := writeKey(t, "decoy.key", unfunded.key)
			t.Run("decoy-payload", func(t *testing.T) { testDecoyPayload(t, c, url, payerKey, decoyKey) })
		})
	}
}

// clientSigned is what client.mjs prints for the sign scenario.
type clientSigned struct {
	Payment map[string]json.RawMessage `json:"payment"`
	Headers map[string]string          `json:"headers"`
}

// testDecoyPayload is the decoy attack: the payer's real payment B with a second
// "payload" key (a decoy A signed by a throwaway key) that Go's decoder would read in
// place of B while a JavaScript facilitator reads B. Each variant must be a 400 that
// settles nothing; B's owner then pays with B.
func testDecoyPayload(t *testing.T, c *chain, url, payerKey, decoyKey string) {
	var b, a clientSigned
	runClient(t, &b, "sign", url, payerKey)
	runClient(t, &a, "sign", url, decoyKey)
	real, err := json.Marshal(b.Payment)
	if err != nil || b.Headers["PAYMENT-SIGNATURE"] == "" {
		t.Fatalf("the official client made no payment: %v %+v", err, b)
	}
	if status, body := postPayment(t, url, "", ""); status != http.StatusPaymentRequired {
		t.Fatalf("unpaid call: status %d (%s), want 402", status, body)
	}
	before := snapshot(t, c)
	for name, key := range map[string]string{"case variant": "Payload", "exact duplicate": "payload"} {
		attack := strings.TrimSuffix(string(real), "}") + `,"` + key + `":` + string(a.Payment["payload"]) + "}"
		status, body := postPayment(t, url, "PAYMENT-SIGNATURE", base64.StdEncoding.EncodeToString([]byte(attack)))
		if status != http.StatusBadRequest || !strings.Contains(body, `\"`+key+`\"`) && !strings.Contains(body, `"`+key+`"`) {
			t.Errorf("%s: status %d, body %s; want 400 naming the key %q", name, status, body, key)
		}
		if strings.Contains(body, `"stdout"`) {
			t.Errorf("%s: the attack got a run: %s", name, body)
		}
	}
	time.Sleep(500 * time.Millisecond)
	expectUnmoved(t, c, before)

	status, body := postPayment(t, url, "PAYMENT-SIGNATURE", b.Headers["PAYMENT-SIGNATURE"])
	if status != http.StatusOK || !strings.Contains(body, `"stdout":"42\n"`) {
		t.Fatalf("the payer's own payment after the attack: status %d, body %s; want 200 with the run", status, body)
	}
	waitFor(5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	expectMoved(t, c, before, payer.address)
}

// postPayment posts print(6*7) with one payment header (none when header is "") and
// returns the status and body; an answer to a payment, and every 402, must carry
// Cache-Control: no-store.
func postPayment(t *testing.T, url, header, value string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"language":"python","code":"print(6*7)"}`))
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set(header, value)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	paid := res.StatusCode == http.StatusOK && header != ""
	if (paid || res.StatusCode == http.StatusPaymentRequired) && res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("answer %d to a payment call: Cache-Control %q, want no-store", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	return res.StatusCode, string(body)
}

// TestCallRefusesHostileServer runs the real `sandboxd call` against a server quoting a
// thousand times the price on another network with a window of years: it exits 1,
// says why, and never sends a payment.
func TestCallRefusesHostileServer(t *testing.T) {
	mustInterop(t)
	var paid atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("PAYMENT-SIGNATURE") != "" || r.Header.Get("X-PAYMENT") != "" {
			paid.Add(1)
			return
		}
		terms, _ := json.Marshal(map[string]any{"x402Version": 2, "resource": map[string]string{"url": "http://x/v1/code"},
			"accepts": []map[string]any{{"scheme": "exact", "network": "eip155:8453", "amount": "5000000",
				"asset": usdc, "payTo": payee.address, "maxTimeoutSeconds": 1 << 30,
				"extra": map[string]string{"name": "USDC", "version": "2"}}}})
		w.Header().Set("PAYMENT-REQUIRED", base64.StdEncoding.EncodeToString(terms))
		w.WriteHeader(http.StatusPaymentRequired)
	}))
	defer srv.Close()
	cmd := exec.Command(binary, "call", "--key-file", writeKey(t, "payer.key", payer.key), "--url", srv.URL+"/v1/code", "-c", "print(1)")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "refusing to pay, nothing was signed") {
		t.Errorf("sandboxd call: %v\n%s\nwant exit 1 and the reason", err, out)
	}
	if n := paid.Load(); n != 0 {
		t.Fatalf("sandboxd call sent %d payments to the hostile server", n)
	}
}
