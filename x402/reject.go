package x402

import (
	"errors"
	"fmt"
)

// The x402 error codes this package answers with, as used across the x402
// ecosystem in invalidReason and errorReason.
const (
	// reasonInvalidVersion: x402Version is neither 1 nor 2.
	reasonInvalidVersion = "invalid_x402_version"
	// reasonUnsupportedScheme: the scheme is not "exact".
	reasonUnsupportedScheme = "unsupported_scheme"
	// reasonInvalidNetwork: the payment names another network.
	reasonInvalidNetwork = "invalid_network"
	// reasonInvalidPayload: a field of the authorization is malformed.
	reasonInvalidPayload = "invalid_payload"
	// ReasonRequirementsMismatch: the payment's accepted entry is not the
	// one quoted (another asset, payee, amount, domain, timeout).
	ReasonRequirementsMismatch = "invalid_payment_requirements"
	// reasonRecipientMismatch: the authorization pays someone else.
	reasonRecipientMismatch = "invalid_exact_evm_payload_recipient_mismatch"
	// ReasonValueMismatch: the authorized value is not exactly the price.
	ReasonValueMismatch = "invalid_exact_evm_payload_authorization_value"
	// ReasonValidAfter: the authorization is not valid yet.
	ReasonValidAfter = "invalid_exact_evm_payload_authorization_valid_after"
	// ReasonValidBefore: the authorization expired or expires within 6 s.
	ReasonValidBefore = "invalid_exact_evm_payload_authorization_valid_before"
	// reasonMissingDomain: the asset's EIP-712 name or version is unknown.
	reasonMissingDomain = "invalid_exact_evm_missing_eip712_domain"
	// ReasonSignature: the signature is malformed or not from the payer.
	ReasonSignature = "invalid_exact_evm_payload_signature"
	// ReasonNonceUsed: the authorization was already used (ledger or chain).
	ReasonNonceUsed = "invalid_exact_evm_nonce_already_used"
	// ReasonInsufficientFunds: the payer's balance is below the price.
	ReasonInsufficientFunds = "insufficient_funds"
	// ReasonTransactionState: the token refused the transfer for another reason.
	ReasonTransactionState = "invalid_transaction_state"
	// ReasonUnexpectedSettle: settlement failed without a refusal (an outage).
	ReasonUnexpectedSettle = "unexpected_settle_error"
	// reasonUnexpectedVerify: verification failed on the server's side.
	reasonUnexpectedVerify = "unexpected_verify_error"
	// ReasonSettlementReverted: the settlement transaction was mined but reverted.
	ReasonSettlementReverted = "invalid_exact_evm_transaction_failed"
)

// RejectError is a payment refused for a reason the payer can act on: it
// failed a check, or the chain or facilitator refused it. Its Reason is the
// x402 error code; the gate turns it into a CodePayment *sandboxd.Error with
// the terms attached.
type RejectError struct {
	// Reason is the x402 error code, e.g. "invalid_exact_evm_payload_signature".
	Reason string
	// Check says, for a person, which check failed and why.
	Check string
	// Err is an underlying cause, if any.
	Err error
}

// Error implements the error interface.
func (e *RejectError) Error() string {
	msg := fmt.Sprintf("%s (%s)", e.Check, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *RejectError) Unwrap() error { return e.Err }

// Reject returns a *RejectError with a formatted check description.
func Reject(reason, format string, args ...any) *RejectError {
	return &RejectError{Reason: reason, Check: fmt.Sprintf(format, args...)}
}

// RejectReason returns the x402 code of the first *RejectError in err's
// chain, or fallback when there is none.
func RejectReason(err error, fallback string) string {
	var r *RejectError
	if errors.As(err, &r) {
		return r.Reason
	}
	return fallback
}
