package sandboxd

import (
	"errors"
	"fmt"
	"net/http"
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
	// CodeMethod: the endpoint exists but not with this method (405).
	CodeMethod Code = "method"
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
	// Header holds response headers the error carries (x402 terms, a failed
	// settlement response).
	Header http.Header
	// Body, when non-nil, is the JSON object answered instead of the default
	// {"error": Message}; it must itself carry an "error" field.
	Body any
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
