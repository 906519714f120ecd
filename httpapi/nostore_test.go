package httpapi

import (
	"encoding/base64"
	"testing"

	"sandboxd"
)

// TestPaymentRequiredIsNotStored: every 402 (terms before the run, a failed
// settlement after it) carries Cache-Control: no-store, even when the gate
// set no such header.
func TestPaymentRequiredIsNotStored(t *testing.T) {
	refusal := sandboxd.Errorf(sandboxd.CodePayment, "test", "payment required")
	for name, gate := range map[string]*fakeGate{
		"terms":             {checkErr: refusal},
		"failed settlement": {settleErr: refusal},
	} {
		runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
		rec := do(t, newTestServer(runner, gate).Handler(), "POST", "/v1/code", `{"language":"python","code":"print(1)"}`)
		if rec.Code != 402 || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: status %d, Cache-Control %q; want 402 with no-store", name, rec.Code, rec.Header().Get("Cache-Control"))
		}
	}
}

// TestSettlementReportsAreNotStored: a paid answer (200) and a pending
// settlement (202) carry the settlement report in the header of the payer's
// version (v1: X-PAYMENT-RESPONSE with the v1 network name), encoded as
// x402 encodes it, with Cache-Control: no-store.
func TestSettlementReportsAreNotStored(t *testing.T) {
	const payer = "0x00000000000000000000000000000000000000aa"
	for _, tc := range []struct {
		name      string
		gate      *fakeGate
		status    int
		header    string
		wantValue string
	}{
		{"v2 paid", &fakeGate{settlement: &sandboxd.Settlement{Version: 2, Success: true, Transaction: "0x01",
			Network: "eip155:84532", Payer: payer}}, 200, "PAYMENT-RESPONSE",
			`{"success":true,"transaction":"0x01","network":"eip155:84532","payer":"` + payer + `"}`},
		{"v1 paid", &fakeGate{settlement: &sandboxd.Settlement{Version: 1, Success: true, Transaction: "0x01",
			Network: "eip155:84532", Payer: payer}}, 200, "X-PAYMENT-RESPONSE",
			`{"success":true,"transaction":"0x01","network":"base-sepolia","payer":"` + payer + `"}`},
		{"v1 pending", &fakeGate{settleErr: &sandboxd.Error{Code: sandboxd.CodePending, Message: "pending",
			Payment: &sandboxd.PaymentDetails{Settlement: &sandboxd.Settlement{Version: 1, ErrorReason: "settlement_pending",
				Transaction: "0x02", Network: "eip155:84532", Payer: payer}}}}, 202, "X-PAYMENT-RESPONSE",
			`{"success":false,"errorReason":"settlement_pending","transaction":"0x02","network":"base-sepolia","payer":"` + payer + `"}`},
	} {
		runner := &fakeRunner{result: sandboxd.Result{Status: sandboxd.StatusOK}}
		rec := do(t, newTestServer(runner, tc.gate).Handler(), "POST", "/v1/code", `{"code":"print(1)"}`)
		want := base64.StdEncoding.EncodeToString([]byte(tc.wantValue))
		if rec.Code != tc.status || rec.Header().Get(tc.header) != want || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: status %d, %s %q, Cache-Control %q; want %d, %s, no-store", tc.name, rec.Code, tc.header,
				rec.Header().Get(tc.header), rec.Header().Get("Cache-Control"), tc.status, tc.wantValue)
		}
	}
}
