package payments

import (
	"context"
	"net/http"
	"testing"

	"sandboxd"
	"sandboxd/x402"
	"sandboxd/x402/x402test"
)

// TestPaymentAnswersAreNotStored: the 402 terms, a paid answer's
// settlement report and a failed settlement's 402 all carry
// Cache-Control: no-store, for v2 and v1 payers.
func TestPaymentAnswersAreNotStored(t *testing.T) {
	ctx := context.Background()
	wantNoStore := func(t *testing.T, what string, h http.Header) {
		t.Helper()
		if got := h.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store (headers %v)", what, got, h)
		}
	}
	g, _ := newTestGate(t, &fakeSettler{settleTx: "0x77"})
	_, err := begin(g, ctx, paidRequest(http.Header{}))
	wantNoStore(t, "402 terms", wantPaymentError(t, err, "payment required", "0.005").Header)

	for _, v1 := range []bool{false, true} {
		pp := x402test.Payload(t, x402test.Key(t), g.Requirements(), nil)
		h := x402test.Header(t, x402.HeaderPaymentSignature, pp)
		if v1 {
			h = x402test.Header(t, x402.HeaderXPayment, x402test.V1Of(pp))
		}
		c, err := begin(g, ctx, paidRequest(h))
		if err != nil {
			t.Fatal(err)
		}
		settled, err := c.Settle(ctx, sandboxd.Result{Status: sandboxd.StatusOK})
		if err != nil {
			t.Fatal(err)
		}
		wantNoStore(t, "paid answer", settled)

		failing, _ := newTestGate(t, &fakeSettler{settleErr: x402.Reject(x402.ReasonInsufficientFunds, "balance short")})
		c, err = begin(failing, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Settle(ctx, sandboxd.Result{Status: sandboxd.StatusOK})
		wantNoStore(t, "failed settlement", wantPaymentError(t, err, "could not be settled", x402.ReasonInsufficientFunds).Header)
	}
}
