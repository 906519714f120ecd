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
// settlement report and a failed settlement's 402 all carry their payment
// details, for v2 and v1 payers: httpapi answers every one of them with
// Cache-Control: no-store (httpapi's TestPaymentRequiredIsNotStored).
func TestPaymentAnswersAreNotStored(t *testing.T) {
	ctx := context.Background()
	wantNoStore := func(t *testing.T, what string, p *sandboxd.PaymentDetails) {
		t.Helper()
		if p == nil || (p.Terms == nil && p.Settlement == nil) {
			t.Errorf("%s: payment details %+v, want terms or a settlement report", what, p)
		}
	}
	g, _ := newTestGate(t, &fakeSettler{settleTx: "0x77"})
	_, err := begin(g, ctx, paidRequest(http.Header{}))
	wantNoStore(t, "402 terms", wantPaymentError(t, err, "payment required", "0.005").Payment)

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
		settled, err := c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
		if err != nil {
			t.Fatal(err)
		}
		wantNoStore(t, "paid answer", &sandboxd.PaymentDetails{Settlement: settled})

		failing, _ := newTestGate(t, &fakeSettler{settleErr: x402.Reject(x402.ReasonInsufficientFunds, "balance short")})
		c, err = begin(failing, ctx, paidRequest(x402test.Header(t, x402.HeaderPaymentSignature, x402test.Payload(t, x402test.Key(t), g.Requirements(), nil))))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Settle(ctx, sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
		wantNoStore(t, "failed settlement", wantPaymentError(t, err, "could not be settled", x402.ReasonInsufficientFunds).Payment)
	}
}
