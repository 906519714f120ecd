package httpapi

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/internal/slots"
	"sandboxd/payments"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// slowRefuser is a facilitator whose /verify refuses every payer but the
// funded one, slowly, as a facilitator under load would; its /settle
// collects.
func slowRefuser(t *testing.T, funded common.Address, delay time.Duration) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			PaymentPayload struct {
				Payload struct {
					Authorization struct {
						From string `json:"from"`
					} `json:"authorization"`
				} `json:"payload"`
			} `json:"paymentPayload"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		paid := common.HexToAddress(req.PaymentPayload.Payload.Authorization.From) == funded
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/settle":
			fmt.Fprintf(w, `{"success":true,"transaction":"0x%s"}`, strings.Repeat("ab", 32))
		case paid:
			fmt.Fprint(w, `{"isValid":true}`)
		default:
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, `{"isValid":false,"invalidReason":%q}`, x402.ReasonInsufficientFunds)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestUnfundedPayersCannotTakeTheSandboxes: 24 requests
// signed by fresh unfunded keys (valid signatures, free to make), which a
// facilitator refuses after 2 s each, are sent at once against a service
// with two sandboxes; a paying caller sent among them still gets its answer
// (200) in normal time, never a 429. Before the fix each of them held a
// sandbox slot during its check, and the paying caller got 429.
func TestUnfundedPayersCannotTakeTheSandboxes(t *testing.T) {
	const slow = 2 * time.Second
	payer := x402test.Key(t)
	facilitator := slowRefuser(t, crypto.PubkeyToAddress(payer.PublicKey), slow)
	cfg := payments.Config{Network: "eip155:84532", Asset: x402test.Asset,
		AssetName: "USDC", AssetVersion: "2", Price: "0.005", PayTo: x402test.PayTo,
		MaxTimeoutSeconds: 120, Settlement: payments.SettleFacilitator, FacilitatorURL: facilitator.URL,
		Ledger: filepath.Join(t.TempDir(), "ledger.db")}
	run := payments.RunBounds{QueueWait: 500 * time.Millisecond, Limit: time.Second}
	gate, err := payments.NewGate(context.Background(), cfg, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gate.Close() })
	runner := &fakeRunner{result: sandboxd.Result{Stdout: "42\n", Status: sandboxd.StatusOK}}
	srv := newTestServer(runner, nil)
	srv.Gate = gate
	srv.Admitter = slots.New(2, run.QueueWait)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	var wg sync.WaitGroup
	statuses := make(chan int, 24)
	for i := 0; i < 24; i++ {
		h := signedHeader(t, x402test.Key(t), gate.Requirements())
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- post(t, ts.URL, h)
		}()
	}
	time.Sleep(200 * time.Millisecond) // the unfunded payers are all in their checks
	start := time.Now()
	status := post(t, ts.URL, signedHeader(t, payer, gate.Requirements()))
	took := time.Since(start)
	wg.Wait()
	close(statuses)
	if status != http.StatusOK {
		t.Fatalf("the paying caller got %d among 24 unfunded payers, want 200", status)
	}
	// Its own check is fast and the check slots (64) are not full: it
	// waits for none of the refusals.
	if took > slow {
		t.Fatalf("the paying caller waited %s", took)
	}
	for s := range statuses {
		if s != http.StatusPaymentRequired && s != http.StatusTooManyRequests {
			t.Errorf("an unfunded payer got %d, want 402 (or 429 from the check queue)", s)
		}
	}
	if n := runner.ran(); n != 1 {
		t.Fatalf("%d runs, want only the paying caller's", n)
	}
}

// signedHeader returns the PAYMENT-SIGNATURE header of a fresh payment by key.
func signedHeader(t *testing.T, key *ecdsa.PrivateKey, req x402.Requirements) http.Header {
	t.Helper()
	a, err := x402.NewAuthorization(key, req, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	exact, err := x402.SignAuthorization(key, req, a)
	if err != nil {
		t.Fatal(err)
	}
	pp := x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: exact}
	v, err := x402.EncodeHeader(pp)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{x402.HeaderPaymentSignature: {v}}
}

// post sends one call with header h and returns its status.
func post(t *testing.T, url string, h http.Header) int {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/code", strings.NewReader(`{"code":"print(42)"}`))
	if err != nil {
		t.Error(err)
		return 0
	}
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}
