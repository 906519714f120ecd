// Package x402 is the x402 wire protocol as this service speaks it: the
// terms (PaymentRequired and its v1 form), the payment (PaymentPayload, an
// EIP-3009 transferWithAuthorization signed under EIP-712) and the
// settlement response; the header codec with its strict decoder; networks,
// prices in atomic units, and the reasons a payment is rejected; local
// verification of a payment against the terms; and the paying client that
// `sandboxd call` uses. It knows nothing of ledgers or settlement.
package x402
