// Package channel is the wire of the x402 "batch-settlement" scheme on EVM
// chains, as the official client (@x402/evm 2.27.0) speaks it: the terms'
// extra and the corrective entry, the channel config and the payloads a
// payer sends (deposit, voucher, refund) with their strict decoding, the
// EIP-712 hashes of the escrow (channel id, voucher, refund, claim batch)
// and of a deposit's ERC-3009 authorization, and the local checks of a
// config against the terms and of a voucher against a channel's state. It
// holds no state and does no I/O: the seller keeps the running totals and
// reads the chain. Refusals are *x402.RejectError with the official codes.
package channel
