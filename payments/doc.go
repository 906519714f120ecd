// Package payments is the payment gate of the service: it quotes the
// configured terms, checks a payment (verified by package x402, then by the
// settler), reserves it in a ledger before the run, and settles a delivered
// answer through a facilitator or on chain, or releases it. It holds the
// gate and the charge lifecycle, the Ledger and Settler interfaces it
// consumes, the facilitator settler, the recovery of the payments a crash
// or an unknown outcome left open, and the free gate used when payments are
// off. The ledger (SQLite or PostgreSQL, shared by replicas) is package
// payments/ledger, the on-chain settler package payments/chain, and the x402
// wire format package x402.
package payments
