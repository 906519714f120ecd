package httpapi

import (
	"net/http"
	"testing"

	"sandboxd"
	"sandboxd/x402"
)

// TestHTTPTermsCarryDiscovery: the 402 of POST /v1/code carries the bazaar
// extension in its PAYMENT-REQUIRED terms (HTTP form: POST, a JSON body),
// and the v1 body and other headers are as the gate made them.
func TestHTTPTermsCarryDiscovery(t *testing.T) {
	terms := map[string]any{"x402Version": 2, "error": "payment required", "accepts": []any{map[string]any{"scheme": "exact"}}}
	payErr := &sandboxd.Error{Code: sandboxd.CodePayment, Message: "payment required",
		Payment: termsDetails(terms, map[string]any{"x402Version": 1, "error": "payment required"})}
	gateTerms := *payErr.Payment.Terms
	rec := do(t, newTestServer(&fakeRunner{}, &fakeGate{checkErr: payErr}).Handler(), "POST", "/v1/code", `{"code":"x"}`)
	if rec.Code != http.StatusPaymentRequired || rec.Body.String() != `{"error":"payment required","x402Version":1}`+"\n" {
		t.Fatalf("status %d, headers %v, body %s", rec.Code, rec.Header(), rec.Body)
	}
	got := headerObject(rec.Header(), x402.HeaderPaymentRequired)
	bazaar := bazaarOf(t, got)
	input, _ := bazaar["info"].(map[string]any)["input"].(map[string]any)
	if input["type"] != "http" || input["method"] != "POST" || input["bodyType"] != "json" || input["body"] == nil {
		t.Errorf("bazaar info input %v", input)
	}
	if got["error"] != "payment required" || got["accepts"] == nil {
		t.Errorf("terms lost their fields: %v", got)
	}
	if string(payErr.Payment.Terms.V2) != string(gateTerms.V2) || payErr.Payment.Terms.V1 == nil {
		t.Error("the gate's error was changed in place")
	}
}
