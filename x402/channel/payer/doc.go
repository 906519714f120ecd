// Package payer pays x402 calls as a payer, through a batch-settlement
// channel when the seller offers one and the policy allows it, else exact
// (package x402). It keeps each channel's running total in a state file
// beside the payer's key, locked for the call and replaced whole, so that
// each voucher signed is the last total plus the price; it deposits when
// the channel's balance does not cover the voucher, within a cap; it
// adopts a seller's correction of the running total only when the seller
// proves it with a voucher this key signed; and it asks for refunds. It
// reads no chain: the seller's reports and the payer's own signatures are
// all it goes by.
package payer
