package sandboxd

import (
	"context"
	"net/http"
)

// PaymentRequest is what the payment gate sees of a request.
type PaymentRequest struct {
	// ResourceURL is the public URL of the call, quoted in the terms.
	ResourceURL string
	// Header holds the request headers (PAYMENT-SIGNATURE, X-PAYMENT).
	Header http.Header
}

// PaymentGate decides whether a request may run.
//
// Begin is called after the request was validated and admitted, before the
// run. It returns a Charge when the request may run. It returns an *Error:
//   - CodePayment with the x402 terms in Header and Body when no payment
//     came, or the payment failed a check (Message names the check);
//   - CodeInvalid when a payment header does not decode;
//   - CodeUnavailable when the ledger, chain or facilitator cannot be reached.
type PaymentGate interface {
	Begin(ctx context.Context, req PaymentRequest) (Charge, error)
}

// Charge is an admitted payment for exactly one run. Exactly one of Settle
// and Release must be called.
//
// Settle is called with a delivered result; it collects the payment and
// returns headers for the answer (PAYMENT-RESPONSE). If collection fails it
// returns an *Error with CodePayment (and a failed settlement header); if the
// service cannot record the settlement it returns CodeUnavailable and
// collects nothing. On any error the answer must be dropped.
//
// Release is called when the service failed to deliver: nothing is charged
// and the same payment may be offered again.
type Charge interface {
	Settle(ctx context.Context, result Result) (http.Header, error)
	Release(ctx context.Context)
}
