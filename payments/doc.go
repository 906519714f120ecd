// Package payments is the payment gate of the service: it quotes the
// configured terms, checks a payment (verified by package x402, then by the
// settler), reserves it in a ledger before the run, and settles a delivered
// answer through a facilitator or on chain, or releases it. It holds the
// ledger (SQLite or PostgreSQL, shared by replicas), the recovery of the
// payments a crash or an unknown outcome left open, the settlers, and the
// free gate used when payments are off. The x402 wire format itself is in
// package x402.
package payments
