// Package channels is the seller's side of x402 batch-settlement channels
// (docs/design/channels.md): it checks a channel payment (a deposit, a
// voucher, a refund) against the channel's row in the ledger, reserves the
// voucher's increment once a slot is held, and commits it when the answer
// is delivered, so that an increment counts once across every replica.
// Deposits are collected before the run; vouchers never wait on the chain
// or a facilitator. The mirror keeps the rows' copy of the escrow fresh,
// and the claimer (one per fleet) claims what was charged and sweeps it to
// payTo.
//
// The package sees the ledger, the chain and the deposit collector through
// the interfaces in ports.go; package payments wires the real ones.
package channels
