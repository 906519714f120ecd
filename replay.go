package sandboxd

import (
	"context"
	"time"
)

// AnswerKind names what a paid answer was for: the operation part of a
// request's identity, and the kind of a stored answer.
type AnswerKind string

// The kinds of paid answers.
const (
	// AnswerRun is a one-shot run (POST /v1/code, the MCP tool without a
	// session).
	AnswerRun AnswerKind = "run"
	// AnswerSessionOpen is a session's opening (its 201 SessionResponse).
	AnswerSessionOpen AnswerKind = "session_open"
	// AnswerSessionCall is a call in a session.
	AnswerSessionCall AnswerKind = "session_call"
)

// Transport names the protocol a paid request came over. The same payment
// id sent over two transports names two requests.
type Transport string

// The transports of paid requests.
const (
	// TransportHTTP is the HTTP API.
	TransportHTTP Transport = "http"
	// TransportMCP is the MCP endpoint's tools.
	TransportMCP Transport = "mcp"
)

// How a Replay was recognised (Replay.By).
const (
	// ReplayByPayment is the same signed payment sent again with the same
	// request.
	ReplayByPayment = "payment"
	// ReplayByID is a new payment of the same payer, valid now and never
	// used, carrying the payment-identifier id of an answered request
	// with the same request.
	ReplayByID = "id"
)

// Replay is an Authorization whose request was already paid for and
// answered, or is being answered: the retry of a dropped answer. The flow
// answers it at once, before any slot, room or turn, and never reserves it
// (Reserve returns CodeInternal); its own payment is neither reserved nor
// settled.
//
// By says how it was recognised: ReplayByPayment or ReplayByID.
//
// Answer waits, bounded by the keeper's wait, while the first request is
// still running, then returns the stored answer. It returns an *Error:
//   - CodeGone (410) when the answer was delivered and paid for but its
//     bytes were not kept (too large, or evicted); Payment.Settlement is
//     the original report;
//   - CodePending (202) when the first settlement's outcome is not known
//     yet; Payment.Settlement is the stored pending report;
//   - CodeConflict (409, RetryAfter set) when the first request was not
//     delivered (nothing was charged for it: the request may be sent
//     again), or is still being answered when the wait ran out;
//   - CodeBusy (429, RetryAfter set) when too many retries wait at once;
//   - CodeUnavailable when the ledger cannot be read;
//   - ctx's error when ctx ended first.
type Replay interface {
	Authorization
	By() string
	Answer(ctx context.Context) (*StoredAnswer, error)
}

// StoredAnswer is a paid answer as it was delivered, read back for a
// replay: written again byte for byte, with its original settlement report.
type StoredAnswer struct {
	// Kind is what the answer was for.
	Kind AnswerKind
	// Status is the answer's HTTP status (200, 201).
	Status int
	// Body is the answer's JSON as it was written (for MCP, the tool
	// result's structuredContent).
	Body []byte
	// Settlement is the report the answer was sent with.
	Settlement *Settlement
	// Created is when the first request's answer was kept.
	Created time.Time
}

// Delivered is what a paid request delivered, handed to Charge.Settle: the
// program's result and the answer rendered from it, the very bytes the
// caller is then sent, so that they can be kept for a replay. Status 0 and
// a nil Body mean the answer was not rendered before the settlement: there
// is nothing to keep.
type Delivered struct {
	// Result is the run's result.
	Result Result
	// Status is the answer's HTTP status (200, 201); 0 when not rendered.
	Status int
	// Body is the answer's JSON; nil when not rendered.
	Body []byte
}
