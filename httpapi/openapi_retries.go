package httpapi

import "sandboxd/x402"

// The OpenAPI answers of a paid route's retries (replay.go): a retry of a
// request already answered gets the stored answer, marked replayed.

// replayedHeader documents x402.HeaderIdempotentReplayed.
func replayedHeader() map[string]any {
	return map[string]any{"description": "true when the answer is the stored answer of the first request with this " +
		"payment (or payment id) and this request: nothing was charged for the retry.",
		"schema": map[string]any{"type": "string", "enum": []string{"true"}}}
}

// withRetries adds to a paid route's replies those of its retries: the
// replayed header on its success (success, 200 or 201), a pending
// settlement's 202, the 409s of a payment id used for another request and
// of a first request not delivered or still running (conflict409 says the
// route's own 409 first, "" for none), and the 410 of an answer not kept.
func withRetries(replies map[string]any, success, conflict409 string) map[string]any {
	if ok, _ := replies[success].(map[string]any); ok != nil {
		headers, _ := ok["headers"].(map[string]any)
		if headers == nil {
			headers = map[string]any{}
			ok["headers"] = headers
		}
		headers[x402.HeaderIdempotentReplayed] = replayedHeader()
	}
	retryAfter := map[string]any{"description": "Seconds to wait before asking again, when the first request is " +
		"still running or was not delivered.", "schema": map[string]any{"type": "integer"}}
	replies["202"] = reply("Paid, but the settlement's outcome is not known yet: the answer is withheld (a session's "+
		"opening names its session) and the payment must not be sent again; a retry gets this again until the "+
		"settlement lands, then the answer.", object("", map[string]any{
		"status":      typed("string", "settlement_pending"),
		"transaction": typed("string", "The settlement's transaction hash, when one was sent."),
		"error":       typed("string", "What happened and what to do."),
	}, "status", "error"), map[string]any{x402.HeaderPaymentResponse: x402Header("x402 v2 SettleResponse, success false, " +
		"errorReason settlement_pending."), x402.HeaderIdempotentReplayed: replayedHeader()})
	replies["409"] = reply(conflict409+"The payment-identifier id was used by this payer for another request "+
		"(another route or body: use a new id), or the first request with this payment was not delivered or is still "+
		"being answered (Retry-After); nothing was charged.", ref("schemas", "Error"), map[string]any{"Retry-After": retryAfter})
	replies["410"] = reply("The first request with this payment was delivered and paid for, but its answer was not kept "+
		"(too large, or evicted); nothing was charged for this retry.", ref("schemas", "Error"), map[string]any{
		x402.HeaderPaymentResponse: x402Header("The original x402 v2 SettleResponse."), x402.HeaderIdempotentReplayed: replayedHeader()})
	return replies
}
