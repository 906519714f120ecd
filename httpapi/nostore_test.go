package httpapi

import (
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
