package payments

import (
	"errors"

	"sandboxd/payments/ledger"
	"sandboxd/x402"
)

// RefusalReason is the x402 reason code of a payment the gate refused
// (Begin's error): the failed check's reason, ReasonNonceUsed for a payment
// already in the ledger, or "" when err is no refusal.
func RefusalReason(err error) string {
	if errors.Is(err, ledger.ErrAlreadyUsed) {
		return x402.ReasonNonceUsed
	}
	return x402.RejectReason(err, "")
}
