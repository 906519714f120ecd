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
		Header: http.Header{"Payment-Required": {encodeTerms(terms)}, "X-Other": {"kept"}},
		Body:   map[string]any{"x402Version": 1, "error": "payment required"}}
	rec := do(t, newTestServer(&fakeRunner{}, &fakeGate{checkErr: payErr}).Handler(), "POST", "/v1/code", `{"code":"x"}`)
	if rec.Code != http.StatusPaymentRequired || rec.Header().Get("X-Other") != "kept" {
		t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
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
	if payErr.Header.Get("Payment-Required") != encodeTerms(terms) {
		t.Error("the gate's error was changed in place")
	}
}
