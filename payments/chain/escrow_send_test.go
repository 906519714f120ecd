package chain

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"sandboxd"
	"sandboxd/payments/internal/remote"
	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// sendBackend replaces the gas estimate and the receipt lookups of a
// backend when its hooks are set.
type sendBackend struct {
	Backend
	estimate func() (uint64, error)
	receipt  func() (*types.Receipt, error)
}

func (b *sendBackend) EstimateGas(ctx context.Context, m ethereum.CallMsg) (uint64, error) {
	if b.estimate != nil {
		return b.estimate()
	}
	return b.Backend.EstimateGas(ctx, m)
}

func (b *sendBackend) TransactionReceipt(ctx context.Context, h common.Hash) (*types.Receipt, error) {
	if b.receipt != nil {
		return b.receipt()
	}
	return b.Backend.TransactionReceipt(ctx, h)
}

// TestEscrowSendOutcomes: an escrow transaction keeps Settle's error
// contract: never sent (the estimate failed) is CodeUnavailable wrapping
// remote.ErrNotSent with no transaction; sent without a receipt is
// CodeUnavailable without it, with the transaction; mined and reverted is
// the op's transaction code, with the transaction.
func TestEscrowSendOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newEscrowChain(t)
	b := &sendBackend{Backend: c.client}
	s, err := New(ctx, b, c.relayer, Config{Asset: c.token, ChainID: simChainID, CheckTimeout: time.Second,
		SettleTimeout: time.Second, RPCTimeout: time.Second, ReceiptPoll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	receiver := c.addr(x402test.Key(t))

	b.estimate = func() (uint64, error) { return 0, errors.New("connection reset") }
	op, err := s.Sweep(ctx, receiver, c.token)
	if se := new(sandboxd.Error); !errors.As(err, &se) || se.Code != sandboxd.CodeUnavailable ||
		!errors.Is(err, remote.ErrNotSent) || op.Tx != "" {
		t.Fatalf("sweep whose estimate failed = %+v, %v", op, err)
	}

	b.estimate = nil
	b.receipt = func() (*types.Receipt, error) { return nil, errors.New("connection reset") }
	op, err = s.Sweep(ctx, receiver, c.token)
	if se := new(sandboxd.Error); !errors.As(err, &se) || se.Code != sandboxd.CodeUnavailable ||
		errors.Is(err, remote.ErrNotSent) || op.Tx == "" || !strings.Contains(se.Message, op.Tx) {
		t.Fatalf("sweep without a receipt = %+v, %v", op, err)
	}
	c.synced(t, common.HexToHash(op.Tx))

	// An estimate that hides the revert: the claim is mined and reverts.
	b.receipt = nil
	b.estimate = func() (uint64, error) { return 200_000, nil }
	cfg := c.config(c.payer, receiver, c.addr(c.relayer))
	op, err = s.Claim(ctx, []VoucherClaim{row(t, c.payer, cfg, 1, 1)})
	if x402.RejectReason(err, "") != channel.ReasonClaimTransactionFailed || op.Tx == "" || op.GasUsed == 0 {
		t.Fatalf("reverted claim = %+v, %v", op, err)
	}
	if r := c.synced(t, common.HexToHash(op.Tx)); r.Status != types.ReceiptStatusFailed {
		t.Fatalf("claim %s has status %d", op.Tx, r.Status)
	}
}
