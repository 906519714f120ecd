package interop

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"

	payledger "sandboxd/payments/ledger"
)

// lyingFacilitator serves the facilitator at target, but answers a deposit's /settle itself,
// never forwarding it: success, with a random transaction hash. lies counts those answers.
func lyingFacilitator(lies *atomic.Int32) func(testing.TB, string) string {
	return func(t testing.TB, target string) string {
		honest, err := url.Parse(delayProxy(t, target, 0, func(string, []byte, []byte) bool { return false }))
		if err != nil {
			t.Fatal(err)
		}
		forward := httputil.NewSingleHostReverseProxy(honest)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var req struct {
				PaymentPayload struct {
					Payload struct {
						Type          string `json:"type"`
						ChannelConfig struct {
							Payer string `json:"payer"`
						} `json:"channelConfig"`
					} `json:"payload"`
				} `json:"paymentPayload"`
				PaymentRequirements struct {
					Network string `json:"network"`
				} `json:"paymentRequirements"`
			}
			if r.URL.Path == "/settle" && json.Unmarshal(body, &req) == nil && req.PaymentPayload.Payload.Type == "deposit" {
				lies.Add(1)
				var tx [32]byte
				_, _ = rand.Read(tx[:])
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "transaction": hexutil.Encode(tx[:]),
					"network": req.PaymentRequirements.Network, "payer": req.PaymentPayload.Payload.ChannelConfig.Payer, "amount": "50000"})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			forward.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
}

// TestChannelLyingFacilitator: a facilitator says a deposit settled, naming a transaction
// that is not on chain. sandboxd reads the receipt itself (payments.rpc_url) and does not
// believe it: the official client gets a 402 with a failed PAYMENT-RESPONSE
// (deposit_transaction_failed), nothing runs, nothing moves, and the deposit's ledger row,
// of this channel, is failed with that transaction.
func TestChannelLyingFacilitator(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer)
	var lies atomic.Int32
	ledger := filepath.Join(t.TempDir(), "ledger.db")
	svc := startService(t, instance("channel-lying"), true, append(channelEnv(t, c, "delegated", lyingFacilitator(&lies)),
		// sandboxd waits for the lie's receipt up to the verify timeout.
		"SANDBOX_PAYMENTS_LEDGER="+ledger, "SANDBOX_PAYMENTS_VERIFY_TIMEOUT=3s")...)
	runs := runsOf(t, svc)
	out := payByChannel(t, c, writeKey(t, "payer.key", payer.key), 1, codeCall(svc.URL, "print(6*7)"))
	r := out.Results[0]
	if r.Status != http.StatusPaymentRequired || r.Settlement == nil || r.Settlement.Success ||
		r.Settlement.ErrorReason != codeDepositTransaction || !txHash.MatchString(r.Settlement.Transaction) ||
		strings.Contains(string(r.Body), "stdout") {
		t.Fatalf("a deposit the facilitator lied about: %+v body %s; want a 402 with a failed PAYMENT-RESPONSE %s",
			r, r.Body, codeDepositTransaction)
	}
	if lies.Load() != 1 {
		t.Fatalf("the facilitator lied %d times, want once", lies.Load())
	}
	if runsOf(t, svc) != runs || c.balance(t, payer.address) != 10_000_000 || c.balance(t, escrowAddr) != 0 {
		t.Errorf("a deposit that never happened ran or moved something")
	}
	svc.stop()
	rows, err := openLedger(t, ledger).List(context.Background(), payledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	id := channelIDOf(t, r.Sent)
	if len(rows) != 1 || rows[0].Status != payledger.StatusFailed || rows[0].Reason != codeDepositTransaction ||
		!strings.EqualFold(rows[0].TxHash, r.Settlement.Transaction) || rows[0].ChannelID != id {
		t.Errorf("ledger rows %+v; want the deposit of channel %s failed with %s in %s", rows, id, codeDepositTransaction, r.Settlement.Transaction)
	}
}

// channelIDOf is the channel a payment header pays, lower case.
func channelIDOf(t *testing.T, header string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Payload struct {
			Voucher struct {
				ChannelID string `json:"channelId"`
			} `json:"voucher"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.Payload.Voucher.ChannelID == "" {
		t.Fatalf("no channel in the payment %s", raw)
	}
	return strings.ToLower(p.Payload.Voucher.ChannelID)
}
