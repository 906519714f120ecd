package chain

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"sandboxd"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// DepositReceipt checks a deposit that someone else (a facilitator) says
// it made: the receipt of tx, read from this settler's own RPC, must exist,
// have succeeded and hold the escrow's Deposited event for channel id and
// exactly amount. It returns the deposit's OpReceipt (Amount, NewBalance
// from the event). A receipt not found yet is asked for again every
// receipt poll until the check timeout, for a node a block behind the
// facilitator's. It returns a *x402.RejectError with
// channel.ReasonDepositTransactionFailed when the chain does not show the
// deposit, and a CodeUnavailable *sandboxd.Error when the RPC failed.
func (s *Settler) DepositReceipt(ctx context.Context, tx common.Hash, id common.Hash, amount *big.Int) (OpReceipt, error) {
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
	defer cancel()
	receipt, err := s.findReceipt(ctx, tx)
	if errors.Is(err, ethereum.NotFound) {
		return OpReceipt{Tx: tx.Hex()}, x402.Reject(channel.ReasonDepositTransactionFailed,
			"the deposit transaction %s is not on chain", tx.Hex())
	}
	if err != nil {
		return OpReceipt{Tx: tx.Hex()}, sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", err,
			fmt.Sprintf("the chain RPC failed to read the receipt of the deposit transaction %s", tx.Hex()))
	}
	r := OpReceipt{Tx: tx.Hex(), GasUsed: receipt.GasUsed}
	if receipt.Status != types.ReceiptStatusSuccessful {
		return r, x402.Reject(channel.ReasonDepositTransactionFailed, "the deposit transaction %s reverted", tx.Hex())
	}
	return depositIn(r, receipt, id, amount)
}

// findReceipt polls for the receipt of tx until it is found or ctx ends.
// It returns ethereum.NotFound when the last answer was that there is
// none, and the last RPC failure otherwise; a call cut short by ctx's end
// is no answer.
func (s *Settler) findReceipt(ctx context.Context, tx common.Hash) (*types.Receipt, error) {
	var last error
	for {
		cctx, cancel := s.call(ctx)
		r, err := s.backend.TransactionReceipt(cctx, tx)
		cancel()
		if err == nil {
			return r, nil
		}
		if last == nil || !over(ctx) {
			last = err
			if !errors.Is(err, ethereum.NotFound) {
				last = s.timedOut(err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, last
		case <-time.After(s.receiptPoll):
		}
	}
}

// over says whether ctx has ended or its deadline has passed: a call's
// transport may see the deadline (an in-process pipe's "i/o timeout")
// before ctx's own timer marks it done, and that failure is ctx's end, not
// the RPC's.
func over(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// depositIn completes r with the Deposited event of channel id for
// amount in receipt, or refuses it when there is none.
func depositIn(r OpReceipt, receipt *types.Receipt, id common.Hash, amount *big.Int) (OpReceipt, error) {
	for _, l := range escrowLogs(receipt, "Deposited") {
		if len(l.Topics) < 2 || l.Topics[1] != id {
			continue
		}
		vals, err := unpackBigs("Deposited", l.Data, 2)
		if err == nil && vals[0].Cmp(amount) == 0 {
			r.Amount, r.NewBalance = vals[0], vals[1]
			return r, nil
		}
	}
	return r, x402.Reject(channel.ReasonDepositTransactionFailed,
		"the transaction %s holds no deposit of %s to channel %s", r.Tx, amount, id.Hex())
}

// claimedIn returns the sum of the Claimed events' claimAmount in receipt
// and each channel's newTotalClaimed.
func claimedIn(receipt *types.Receipt) (*big.Int, map[common.Hash]*big.Int) {
	sum, totals := new(big.Int), map[common.Hash]*big.Int{}
	for _, l := range escrowLogs(receipt, "Claimed") {
		vals, err := unpackBigs("Claimed", l.Data, 2)
		if err != nil || len(l.Topics) < 2 {
			continue
		}
		sum.Add(sum, vals[0])
		totals[l.Topics[1]] = vals[1]
	}
	return sum, totals
}

// settledIn returns what the Settled events of receiver and token in
// receipt paid.
func settledIn(receipt *types.Receipt, receiver, token common.Address) *big.Int {
	sum := new(big.Int)
	for _, l := range escrowLogs(receipt, "Settled") {
		if len(l.Topics) < 3 || l.Topics[1] != common.BytesToHash(receiver[:]) || l.Topics[2] != common.BytesToHash(token[:]) {
			continue
		}
		if vals, err := unpackBigs("Settled", l.Data, 1); err == nil {
			sum.Add(sum, vals[0])
		}
	}
	return sum
}

// refundedIn returns what the Refunded events of channel id in receipt
// paid.
func refundedIn(receipt *types.Receipt, id common.Hash) *big.Int {
	sum := new(big.Int)
	for _, l := range escrowLogs(receipt, "Refunded") {
		if len(l.Topics) < 2 || l.Topics[1] != id {
			continue
		}
		if vals, err := unpackBigs("Refunded", l.Data, 1); err == nil {
			sum.Add(sum, vals[0])
		}
	}
	return sum
}

// escrowLogs returns receipt's logs of the escrow's event: emitted by the
// escrow's address (another contract may emit the same topic) with the
// event's topic.
func escrowLogs(receipt *types.Receipt, event string) []*types.Log {
	topic := escrowABI.Events[event].ID
	var out []*types.Log
	for _, l := range receipt.Logs {
		if l.Address == channel.Escrow && len(l.Topics) > 0 && l.Topics[0] == topic {
			out = append(out, l)
		}
	}
	return out
}
