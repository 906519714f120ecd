package chain

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// TestEscrowDeposit: a deposit the relayer sends lands in the channel and
// its receipt reports it; the simulation names why a deposit would fail
// (authorization used, payer underfunded, expired, badly signed, a config
// the escrow refuses), and a deposit refused so is never sent.
func TestEscrowDeposit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEscrowChain(t)
	payer := c.addr(c.payer)
	c.mint(t, payer, 1_000_000)
	cfg := c.config(c.payer, common.HexToAddress(x402test.PayTo), c.addr(c.relayer))
	id := mustID(t, cfg)
	later := time.Now().Unix() + 3600

	d := c.deposit(t, c.payer, cfg, 100_000, later)
	if err := c.s.SimulateDeposit(ctx, cfg, d); err != nil {
		t.Fatalf("SimulateDeposit of a good deposit: %v", err)
	}
	op := c.mustOp(c.s.Deposit(ctx, cfg, d))
	if op.Amount.Int64() != 100_000 || op.NewBalance.Int64() != 100_000 || op.GasUsed == 0 {
		t.Fatalf("deposit receipt %+v", op)
	}
	wantState(t, c.readChannel(t, id), 100_000, 0, 0)
	if got := c.balance(t, channel.Escrow); got != 100_000 {
		t.Fatalf("escrow holds %d", got)
	}
	if got := c.balance(t, payer); got != 900_000 {
		t.Fatalf("payer holds %d", got)
	}

	// The same authorization again: used, refused before anything is sent.
	wantReject(t, c.s.SimulateDeposit(ctx, cfg, d), channel.ReasonDepositSimulationFailed, "this deposit authorization was already used")
	again, err := c.s.Deposit(ctx, cfg, d)
	wantReject(t, err, channel.ReasonDepositSimulationFailed, "already used")
	if again.Tx != "" {
		t.Fatalf("a refused deposit sent %s", again.Tx)
	}

	poor := x402test.Key(t)
	poorCfg := c.config(poor, cfg.Receiver, cfg.ReceiverAuthorizer)
	wantReject(t, c.s.SimulateDeposit(ctx, poorCfg, c.deposit(t, poor, poorCfg, 100, later)),
		channel.ReasonInsufficientBalance, "below the deposit")
	wantReject(t, c.s.SimulateDeposit(ctx, cfg, c.deposit(t, c.payer, cfg, 100, time.Now().Unix()-60)),
		channel.ReasonValidBefore, "expired")
	short := cfg
	short.WithdrawDelay = 60
	wantReject(t, c.s.SimulateDeposit(ctx, short, c.deposit(t, c.payer, short, 100, later)),
		channel.ReasonDepositSimulationFailed, "WithdrawDelayOutOfRange")
	forged := c.deposit(t, c.payer, cfg, 100, later)
	forged.Amount = big.NewInt(101)
	wantReject(t, c.s.SimulateDeposit(ctx, cfg, forged), channel.ReasonReceiveSignature, "signature")

	// A top-up adds to the balance.
	top := c.mustOp(c.s.Deposit(ctx, cfg, c.deposit(t, c.payer, cfg, 50_000, later)))
	if top.Amount.Int64() != 50_000 || top.NewBalance.Int64() != 150_000 {
		t.Fatalf("top-up receipt %+v", top)
	}
}

// TestDepositReceipt: a deposit a facilitator says it made is accepted
// from its receipt on our chain only when that receipt holds the escrow's
// Deposited event of the channel and amount; a transaction that is not
// on chain, of another contract, or of another amount or channel is
// refused.
func TestDepositReceipt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEscrowChain(t)
	payer := c.addr(c.payer)
	c.mint(t, payer, 1_000_000)
	cfg := c.config(c.payer, common.HexToAddress(x402test.PayTo), c.addr(c.relayer))
	id := mustID(t, cfg)
	op := c.mustOp(c.s.Deposit(ctx, cfg, c.deposit(t, c.payer, cfg, 100_000, time.Now().Unix()+3600)))
	tx := common.HexToHash(op.Tx)

	got, err := c.s.DepositReceipt(ctx, tx, id, big.NewInt(100_000))
	if err != nil || got.Amount.Int64() != 100_000 || got.NewBalance.Int64() != 100_000 || got.Tx != op.Tx || got.GasUsed != op.GasUsed {
		t.Fatalf("DepositReceipt of the deposit = %+v, %v", got, err)
	}
	_, err = c.s.DepositReceipt(ctx, randomHash(), id, big.NewInt(100_000))
	wantReject(t, err, channel.ReasonDepositTransactionFailed, "not on chain")
	mint := c.mint(t, payer, 1)
	_, err = c.s.DepositReceipt(ctx, mint.TxHash, id, big.NewInt(100_000))
	wantReject(t, err, channel.ReasonDepositTransactionFailed, "holds no deposit")
	_, err = c.s.DepositReceipt(ctx, tx, id, big.NewInt(99_999))
	wantReject(t, err, channel.ReasonDepositTransactionFailed, "holds no deposit")
	_, err = c.s.DepositReceipt(ctx, tx, mustID(t, c.config(c.payer, cfg.Receiver, cfg.ReceiverAuthorizer)), big.NewInt(100_000))
	wantReject(t, err, channel.ReasonDepositTransactionFailed, "holds no deposit")
}

// TestEscrowClaimSweepRefund: the relayer, the channels' receiver
// authorizer, claims (a repeat is a no-op, a claim the escrow refuses
// names its error), sweeps what was claimed to the receiver (a second
// sweep pays nothing) and refunds the rest after a last claim.
func TestEscrowClaimSweepRefund(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEscrowChain(t)
	payer := c.addr(c.payer)
	c.mint(t, payer, 1_000_000)
	payTo := c.addr(x402test.Key(t))
	cfg := c.config(c.payer, payTo, c.addr(c.relayer))
	id := mustID(t, cfg)
	c.mustOp(c.s.Deposit(ctx, cfg, c.deposit(t, c.payer, cfg, 100_000, time.Now().Unix()+3600)))

	first := row(t, c.payer, cfg, 30_000, 30_000)
	op := c.mustOp(c.s.Claim(ctx, []VoucherClaim{first}))
	if op.Amount.Int64() != 30_000 || len(op.Claimed) != 1 || op.Claimed[id].Int64() != 30_000 {
		t.Fatalf("claim receipt %+v", op)
	}
	wantState(t, c.readChannel(t, id), 100_000, 30_000, 0)
	op = c.mustOp(c.s.Claim(ctx, []VoucherClaim{first}))
	if op.Amount.Sign() != 0 || len(op.Claimed) != 0 {
		t.Fatalf("a repeated claim claimed %+v", op)
	}
	wantState(t, c.readChannel(t, id), 100_000, 30_000, 0)

	_, err := c.s.Claim(ctx, []VoucherClaim{row(t, c.payer, cfg, 200_000, 150_000)})
	wantReject(t, err, channel.ReasonClaimSimulationFailed, "ClaimExceedsBalance")
	_, err = c.s.Claim(ctx, []VoucherClaim{row(t, c.payer, cfg, 40_000, 50_000)})
	wantReject(t, err, channel.ReasonClaimSimulationFailed, "ClaimExceedsCeiling")
	_, err = c.s.Claim(ctx, []VoucherClaim{row(t, x402test.Key(t), cfg, 40_000, 40_000)})
	wantReject(t, err, channel.ReasonClaimSimulationFailed, "InvalidSignature")

	claimed, settled, err := c.s.ReceiverTotals(ctx, payTo, c.token)
	if err != nil || claimed.Int64() != 30_000 || settled.Sign() != 0 {
		t.Fatalf("ReceiverTotals = %v, %v, %v", claimed, settled, err)
	}
	op = c.mustOp(c.s.Sweep(ctx, payTo, c.token))
	if op.Amount.Int64() != 30_000 || c.balance(t, payTo) != 30_000 {
		t.Fatalf("sweep receipt %+v, receiver holds %d", op, c.balance(t, payTo))
	}
	if _, settled, _ = c.s.ReceiverTotals(ctx, payTo, c.token); settled.Int64() != 30_000 {
		t.Fatalf("settled %v after the sweep", settled)
	}
	op = c.mustOp(c.s.Sweep(ctx, payTo, c.token))
	if op.Amount.Sign() != 0 || c.balance(t, payTo) != 30_000 {
		t.Fatalf("second sweep %+v, receiver holds %d", op, c.balance(t, payTo))
	}

	// The refund claims 50 000 in the same transaction and asks for more
	// than is left: the escrow pays what is left.
	op = c.mustOp(c.s.Refund(ctx, cfg, big.NewInt(1_000_000), []VoucherClaim{row(t, c.payer, cfg, 50_000, 50_000)}))
	if op.Amount.Int64() != 50_000 || op.Claimed[id].Int64() != 50_000 {
		t.Fatalf("refund receipt %+v", op)
	}
	wantState(t, c.readChannel(t, id), 50_000, 50_000, 1)
	if got := c.balance(t, payer); got != 950_000 {
		t.Fatalf("payer holds %d after the refund", got)
	}
	op = c.mustOp(c.s.Refund(ctx, cfg, big.NewInt(1), nil))
	if op.Amount.Sign() != 0 || len(op.Claimed) != 0 {
		t.Fatalf("refund of an emptied channel %+v", op)
	}
	wantState(t, c.readChannel(t, id), 50_000, 50_000, 2)
	_, err = c.s.Refund(ctx, cfg, new(big.Int), nil)
	wantReject(t, err, channel.ReasonRefundSimulationFailed, "ZeroRefund")
}

// TestEscrowByAuthorizerSignature: on a channel whose receiver authorizer
// is an operator's key and not the relayer, the relayer cannot claim by
// itself, but sends the claims and refunds that key signed.
func TestEscrowByAuthorizerSignature(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEscrowChain(t)
	c.mint(t, c.addr(c.payer), 1_000_000)
	authorizer := x402test.Key(t)
	cfg := c.config(c.payer, c.addr(x402test.Key(t)), c.addr(authorizer))
	id := mustID(t, cfg)
	c.mustOp(c.s.Deposit(ctx, cfg, c.deposit(t, c.payer, cfg, 100_000, time.Now().Unix()+3600)))

	rows := []VoucherClaim{row(t, c.payer, cfg, 20_000, 20_000)}
	_, err := c.s.Claim(ctx, rows)
	wantReject(t, err, channel.ReasonClaimSimulationFailed, "NotAuthorizedToClaim")
	forged, err := ClaimSignature(x402test.Key(t), rows, simChainID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.s.ClaimWithSignature(ctx, rows, forged)
	wantReject(t, err, channel.ReasonClaimSimulationFailed, "InvalidSignature")
	sig, err := ClaimSignature(authorizer, rows, simChainID)
	if err != nil {
		t.Fatal(err)
	}
	op := c.mustOp(c.s.ClaimWithSignature(ctx, rows, sig))
	if op.Amount.Int64() != 20_000 || op.Claimed[id].Int64() != 20_000 {
		t.Fatalf("claimWithSignature receipt %+v", op)
	}

	st := c.readChannel(t, id)
	refundSig, err := RefundSignature(authorizer, id, st.RefundNonce, big.NewInt(10_000), simChainID)
	if err != nil {
		t.Fatal(err)
	}
	more := []VoucherClaim{row(t, c.payer, cfg, 30_000, 30_000)}
	claimSig, err := ClaimSignature(authorizer, more, simChainID)
	if err != nil {
		t.Fatal(err)
	}
	op = c.mustOp(c.s.RefundWithSignature(ctx, cfg, big.NewInt(10_000), st.RefundNonce, refundSig, more, claimSig))
	if op.Amount.Int64() != 10_000 || op.Claimed[id].Int64() != 30_000 {
		t.Fatalf("refundWithSignature receipt %+v", op)
	}
	wantState(t, c.readChannel(t, id), 90_000, 30_000, 1)
	// The signature named the old nonce: it cannot refund twice.
	_, err = c.s.RefundWithSignature(ctx, cfg, big.NewInt(10_000), st.RefundNonce, refundSig, nil, nil)
	wantReject(t, err, channel.ReasonRefundSimulationFailed, "InvalidRefundNonce")
}

// TestEscrowClaimBatch: one claim transaction claims from several
// channels; in a later batch a row at its channel's claimed total is a
// no-op and the others still claim.
func TestEscrowClaimBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEscrowChain(t)
	c.mint(t, c.addr(c.payer), 1_000_000)
	payTo := c.addr(x402test.Key(t))
	a, b := c.config(c.payer, payTo, c.addr(c.relayer)), c.config(c.payer, payTo, c.addr(c.relayer))
	for _, cfg := range []channel.Config{a, b} {
		c.mustOp(c.s.Deposit(ctx, cfg, c.deposit(t, c.payer, cfg, 10_000, time.Now().Unix()+3600)))
	}
	op := c.mustOp(c.s.Claim(ctx, []VoucherClaim{row(t, c.payer, a, 1_000, 1_000), row(t, c.payer, b, 2_000, 2_000)}))
	if op.Amount.Int64() != 3_000 || len(op.Claimed) != 2 || op.Claimed[mustID(t, a)].Int64() != 1_000 ||
		op.Claimed[mustID(t, b)].Int64() != 2_000 {
		t.Fatalf("claim of two channels %+v", op)
	}
	op = c.mustOp(c.s.Claim(ctx, []VoucherClaim{row(t, c.payer, a, 1_000, 1_000), row(t, c.payer, b, 5_000, 4_500)}))
	if op.Amount.Int64() != 2_500 || len(op.Claimed) != 1 || op.Claimed[mustID(t, b)].Int64() != 4_500 {
		t.Fatalf("claim with a no-op row %+v", op)
	}
	if claimed, _, err := c.s.ReceiverTotals(ctx, payTo, c.token); err != nil || claimed.Int64() != 5_500 {
		t.Fatalf("receiver's claimed total %v, %v", claimed, err)
	}
}

// lateContext is a context whose deadline has passed while its timer has
// not yet marked it done, as a busy host leaves one for a moment.
type lateContext struct{ context.Context }

func (lateContext) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestOverSeesAPassedDeadline: a receipt call failed by its transport at
// the deadline, before ctx is marked done, is ctx's end and not the RPC's
// failure (DepositReceipt then says "not on chain" from the answers
// before it, not "the chain RPC failed").
func TestOverSeesAPassedDeadline(t *testing.T) {
	if !over(lateContext{context.Background()}) {
		t.Error("a context past its deadline is not over")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if over(ctx) {
		t.Error("a context an hour from its deadline is over")
	}
	cancel()
	if !over(ctx) {
		t.Error("a cancelled context is not over")
	}
}
