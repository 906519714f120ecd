package payments

import (
	"context"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/payments/chain"
	"sandboxd/payments/channels"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// escrow is what channels need of the chain (*chain.Settler; keyless under
// settlement: facilitator, where only the reads are used).
type escrow interface {
	channels.Reader
	SimulateDeposit(ctx context.Context, cfg channel.Config, d *channel.Deposit) error
	Deposit(ctx context.Context, cfg channel.Config, d *channel.Deposit) (chain.OpReceipt, error)
	DepositReceipt(ctx context.Context, tx, id common.Hash, amount *big.Int) (chain.OpReceipt, error)
}

var _ escrow = (*chain.Settler)(nil)

// chainDepositor collects deposits with the relayer (settlement: onchain):
// an eth_call of the escrow's deposit, then the transaction.
type chainDepositor struct{ e escrow }

// CheckDeposit simulates the deposit.
func (d chainDepositor) CheckDeposit(ctx context.Context, _ *x402.Payment, pl *channel.Payload) error {
	return d.e.SimulateDeposit(ctx, pl.Config, pl.Deposit)
}

// Deposit sends it and waits for its receipt.
func (d chainDepositor) Deposit(ctx context.Context, _ *x402.Payment, pl *channel.Payload) (chain.OpReceipt, error) {
	return d.e.Deposit(ctx, pl.Config, pl.Deposit)
}

// facilitatorDepositor collects deposits through the facilitator's
// /verify and /settle (settlement: facilitator), and believes a settled
// deposit only once its receipt, read from payments.rpc_url, holds the
// escrow's Deposited event for this channel and amount: a facilitator's
// word is not enough.
type facilitatorDepositor struct {
	f *facilitatorSettler
	e escrow
}

// channelPayload is a channel payment as a facilitator gets it: built
// from what this service verified and quoted (the payload re-encoded from
// its parsed values, never the payer's bytes).
type channelPayload struct {
	X402Version int               `json:"x402Version"`
	Resource    *x402.Resource    `json:"resource,omitempty"`
	Accepted    x402.Requirements `json:"accepted"`
	Payload     channel.Payload   `json:"payload"`
	Extensions  map[string]any    `json:"extensions,omitempty"`
}

// payloadOf is p with pl as a facilitator gets it.
func payloadOf(p *x402.Payment, pl *channel.Payload) channelPayload {
	resource := p.Quoted.Resource
	out := channelPayload{X402Version: 2, Resource: &resource, Accepted: p.Requirements, Payload: *pl}
	for name, raw := range p.Quoted.Extensions {
		if out.Extensions == nil {
			out.Extensions = map[string]any{}
		}
		out.Extensions[name] = raw
	}
	return out
}

// CheckDeposit asks /verify.
func (d facilitatorDepositor) CheckDeposit(ctx context.Context, p *x402.Payment, pl *channel.Payload) error {
	return d.f.verify(ctx, payloadOf(p, pl), p.Requirements)
}

// Deposit asks /settle, then checks the transaction it names on chain.
func (d facilitatorDepositor) Deposit(ctx context.Context, p *x402.Payment, pl *channel.Payload) (chain.OpReceipt, error) {
	tx, err := d.f.settle(ctx, payloadOf(p, pl), p.Requirements)
	if err != nil {
		return chain.OpReceipt{Tx: tx}, err
	}
	if !isTxHash(tx) {
		return chain.OpReceipt{Tx: tx}, x402.Reject(channel.ReasonDepositTransactionFailed,
			"the facilitator reported the deposit settled without a transaction hash (%q)", tx)
	}
	rcpt, err := d.e.DepositReceipt(ctx, common.HexToHash(tx), pl.Voucher.ChannelID, pl.Deposit.Amount)
	rcpt.Tx = tx
	return rcpt, err
}

// isTxHash reports whether s is a 0x-prefixed 32-byte hex hash.
func isTxHash(s string) bool {
	b, err := hexutil.Decode(s)
	return err == nil && len(b) == 32
}

// The ledger is each of the channels' ledger seams.
var (
	_ channels.Store   = (*ledger.SQL)(nil)
	_ channels.Books   = (*ledger.SQL)(nil)
	_ channels.Refunds = (*ledger.SQL)(nil)
	_ channels.Claimer = (*chain.Settler)(nil)
)
