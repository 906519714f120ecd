package sandboxd

import "context"

// PaymentRequest is what the payment gate sees of a request.
type PaymentRequest struct {
	// ResourceURL is the public URL of the call, quoted in the terms.
	ResourceURL string
	// Signature is the request's PAYMENT-SIGNATURE header (a v2 payment),
	// "" when absent.
	Signature string
	// XPayment is the request's X-PAYMENT header (a v1 payment), "" when
	// absent.
	XPayment string
	// Environment is the environment the request runs in (a validated
	// Job.Environment): the terms quote that environment's price.
	Environment string
	// Price, when set, is the price quoted instead of the environment's
	// (in asset units, "0.01"; validated by the configuration), for a call
	// that is not a run, such as opening a session.
	Price string
	// Extensions are the x402 extensions the service declares for the
	// resource, by name (bazaar discovery). A facilitator is sent these,
	// never the payer's copies.
	Extensions map[string]any
	// Operations is set by a route that answers payment operations (GET
	// /v1/channel): a channel refund then passes Check as a
	// PaymentOperation. Elsewhere a refund is refused.
	Operations bool
	// Request is the identity of the request (lower-case hex SHA-256 of
	// its transport, operation and validated input; see
	// docs/design/retries.md §3): a retry is answered from the stored
	// answer only when it asks the same request. "" when the route keeps
	// no answers.
	Request string
	// Kind is what the request buys, kept with its answer.
	Kind AnswerKind
	// Transport is the protocol the request came over.
	Transport Transport
	// ReplayOnly asks Check only whether a stored answer matches the
	// payment and the request (decode, signature, lookup; never a remote
	// check): it returns a Replay, or (nil, nil) when none is stored. It is
	// for a request that would otherwise be refused before paying (a call
	// to an ended session, an open refused for room).
	ReplayOnly bool
}

// PaymentGate decides whether a request may run, in two phases around the
// sandbox slot (Check before it, Authorization.Reserve once it is held), so
// that checking a payment never holds a sandbox and a request refused for
// capacity is never charged. The whole flow, in order, is described once in
// ARCHITECTURE.md ("One request").
//
// Check is called after the request was validated, before a slot is taken.
// It decodes the payment, verifies it locally, then asks the chain or the
// facilitator whether it would settle, that remote check bounded by its own
// limit on checks at once (never by the sandbox slots). It holds nothing
// when it returns: an Authorization that is dropped costs nobody anything.
// When the request was already answered for the same payment (or a new
// payment of the same payer with the same payment-identifier id) it
// returns a Replay, to be answered before any slot is taken (see Replay).
// It returns an *Error:
//   - CodePayment with the x402 terms in Payment when no payment
//     came, or the payment failed a check (Message names the check);
//   - CodeInvalid when a payment header does not decode, or its
//     payment-identifier extension is malformed;
//   - CodeConflict when the payment's id was used by the same payer for
//     another request;
//   - CodeBusy (RetryAfter set) when too many payments are being checked
//     and none finished within the gate's wait;
//   - CodeUnavailable when the chain or facilitator cannot be reached;
//   - ctx's error when ctx ended first.
type PaymentGate interface {
	Check(ctx context.Context, req PaymentRequest) (Authorization, error)
}

// Authorization is a payment that passed every check, not yet reserved.
//
// Payer is the verified payer (the EIP-3009 from, lower-case hex), "" when
// payments are off.
//
// Reserve is called once a sandbox slot is held, right before the run. It
// records the payment as spent-in-progress and returns its Charge. It
// returns an *Error:
//   - CodePayment (terms attached) when the same payment was already used,
//     by an earlier request or a concurrent one;
//   - CodeConflict with Error.Replay set when a concurrent request with the
//     same payment or id and the same request won the race: the caller
//     answers the Replay (nothing was reserved for this one);
//   - CodeUnavailable when the ledger cannot record it, or the gate is
//     closing: nothing runs and nothing is charged.
type Authorization interface {
	Payer() string
	Reserve(ctx context.Context) (Charge, error)
}

// PaymentOperation is an Authorization that buys no run: a channel's
// refund. The route that asked for operations (PaymentRequest.Operations)
// answers it by Operate, taking no slot and running nothing; it is never
// reserved.
//
// Operate carries the operation out and returns its report (Amount is what
// was refunded, Transaction its transaction, Extra the channel's state). It
// returns an *Error: CodePayment with the terms (and a failed report when
// a transaction failed) when it was refused; CodePending when its outcome
// is unknown; CodeUnavailable when the ledger, chain or facilitator cannot
// be reached.
type PaymentOperation interface {
	Authorization
	Operate(ctx context.Context) (*Settlement, error)
}

// Charge is a reserved payment for exactly one run. Exactly one of Settle
// and Release must be called. From Reserve on, the caller's going away does
// not matter: the run is completed and settled (the payer asked for it).
//
// Settle is called with what was delivered (the result and the answer
// rendered from it, which it keeps for a replay); it collects the payment
// and returns its report, nil when nothing was charged. It returns an *Error:
//   - CodePayment (the terms and a failed settlement in Payment) when the settlement
//     was refused or reverted (nothing collected; the payment is never
//     admitted again), or never left (nothing collected; the message says
//     the same payment may be sent again);
//   - CodePending (202, a settlement in Payment with ErrorReason
//     "settlement_pending" and the transaction hash) when the
//     settlement may have been sent but its outcome is unknown: the payment
//     is spent, the ledger resolves it later from the chain, and the payer
//     must not pay again;
//   - CodeUnavailable when the ledger could not record the settlement
//     before sending it: nothing was sent.
//
// On any error the result is withheld.
//
// Release is called when the service failed to deliver (a 5xx before a
// result): nothing is charged and the same payment may be offered again.
type Charge interface {
	Settle(ctx context.Context, d Delivered) (*Settlement, error)
	Release(ctx context.Context)
}
