package sandboxd

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Code classifies an error by what the caller can do about it. httpapi maps
// each code to one HTTP status, in one place.
type Code string

// The error codes.
const (
	// CodeInvalid: the request is malformed or names something unsupported (400).
	CodeInvalid Code = "invalid"
	// CodeTooLarge: the body or the code is over its limit (413).
	CodeTooLarge Code = "too_large"
	// CodeNotFound: no such endpoint (404).
	CodeNotFound Code = "not_found"
	// CodeTooSlow: the request's body arrived slower than the service
	// reads bodies, and was cut off (408).
	CodeTooSlow Code = "too_slow"
	// CodeMethod: the endpoint exists but not with this method (405).
	CodeMethod Code = "method"
	// CodeForbidden: the caller may not use what it named, such as another
	// wallet's session (403).
	CodeForbidden Code = "forbidden"
	// CodeConflict: what the request names is busy with another request,
	// such as a session running a call (409).
	CodeConflict Code = "conflict"
	// CodeGone: what the request asks for existed but is not kept any
	// more, such as a paid answer too large to keep for a replay (410).
	CodeGone Code = "gone"
	// CodeMediaType: a browser's request whose body is not declared
	// application/json, the type that makes the browser ask first (415).
	CodeMediaType Code = "media_type"
	// CodePayment: payment is required, or the one offered was refused (402).
	CodePayment Code = "payment"
	// CodePending: the run was paid for, but whether its settlement landed
	// is not known yet; the payment is spent and must not be sent again (202).
	CodePending Code = "pending"
	// CodeBusy: every sandbox is busy; try again after RetryAfter (429).
	CodeBusy Code = "busy"
	// CodeUnavailable: a dependency (Docker, the ledger, the chain) is down (503).
	CodeUnavailable Code = "unavailable"
	// CodeInternal: a bug or an unexpected failure; logged, never detailed (500).
	CodeInternal Code = "internal"
)

// Error is the service's error type. Message is for a person calling the
// API; Err is the cause, for logs only.
type Error struct {
	// Code classifies the error.
	Code Code
	// Op names the operation that failed, e.g. "runtime.create".
	Op string
	// Message says what went wrong and, where possible, what to do. It is
	// shown to callers for every code but CodeInternal.
	Message string
	// Err is the underlying cause.
	Err error
	// RetryAfter, when set, tells the caller when to try again.
	RetryAfter time.Duration
	// Payment, when set, holds the x402 details of a payment error (the
	// quoted terms, a failed or pending settlement); httpapi turns them into
	// headers, bodies and MCP results.
	Payment *PaymentDetails
	// Replay, when set (with CodeConflict), is the answer of a concurrent
	// request with the same payment and request that won the race: the
	// handler answers it (Replay.Answer) instead of the error.
	Replay Replay
}

// PaymentDetails are the x402 parts of a payment answer.
type PaymentDetails struct {
	// Terms are the quoted terms, or nil.
	Terms *PaymentTerms
	// Settlement is the report of a failed or pending settlement, or nil.
	Settlement *Settlement
}

// PaymentTerms are the quoted x402 terms, as payments encoded them: the
// documents are answered as they are, byte for byte.
type PaymentTerms struct {
	// V2 is the x402 v2 PaymentRequired JSON (the PAYMENT-REQUIRED header,
	// the MCP tool error's structuredContent).
	V2 json.RawMessage
	// V1 is the x402 v1 PaymentRequired JSON (the body of an HTTP 402); it
	// carries an "error" field.
	V1 json.RawMessage
}

// Settlement is the report of one settlement (x402's SettleResponse), for a
// payer of x402 Version: version 1 is answered in X-PAYMENT-RESPONSE with v1
// network names, version 2 in PAYMENT-RESPONSE.
type Settlement struct {
	// Version is the x402 version of the payment.
	Version int
	// Success reports that the payment was collected.
	Success bool
	// ErrorReason is the x402 error code when Success is false
	// ("settlement_pending" when the outcome is not known yet).
	ErrorReason string
	// Transaction is the settlement's transaction hash ("" when none).
	Transaction string
	// Network is the network settled on, in x402 v2 naming.
	Network string
	// Payer is the paying address.
	Payer string
	// Amount is what the settlement moved, in atomic units, when the
	// scheme reports it (a channel's deposit); "" otherwise.
	Amount string
	// Extra is the scheme's own report (a channel's chargedAmount and
	// channelState), a JSON object; nil when none.
	Extra json.RawMessage
}

// Error implements the error interface.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = string(e.Code)
	}
	if e.Op != "" {
		msg = e.Op + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the code, operation and a formatted message.
func Errorf(code Code, op, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the code, operation, message and cause.
func Wrap(code Code, op string, err error, message string) *Error {
	return &Error{Code: code, Op: op, Message: message, Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// CodeInternal when there is none.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the person-facing message of err: the Message of the
// first *Error in its chain, or a generic line for internal errors.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != CodeInternal && e.Message != "" {
		return e.Message
	}
	return "internal error; it has been logged"
}
