package chain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/core/types"

	"sandboxd"
	"sandboxd/payments/internal/remote"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// ErrNoRelayerKey is the cause of the error of every method that sends a
// transaction, on a settler made without a relayer key.
var ErrNoRelayerKey = errors.New("a relayer key is needed to send transactions")

// escrowOp is one kind of escrow transaction: its name, for logs and
// messages, and the codes of its refusals.
type escrowOp struct {
	name              string
	simulationFailed  string // the escrow refused it before it was sent
	transactionFailed string // it was mined and reverted
}

// The escrow transactions the seller sends.
var (
	opDeposit = escrowOp{"deposit", channel.ReasonDepositSimulationFailed, channel.ReasonDepositTransactionFailed}
	opClaim   = escrowOp{"claim", channel.ReasonClaimSimulationFailed, channel.ReasonClaimTransactionFailed}
	opSweep   = escrowOp{"sweep", channel.ReasonSettleSimulationFailed, channel.ReasonSettleTransactionFailed}
	opRefund  = escrowOp{"refund", channel.ReasonRefundSimulationFailed, channel.ReasonRefundTransactionFailed}
)

// refusal is the default answer to an escrow transaction the node says
// would revert: the op's simulation code, naming the escrow's error.
func (op escrowOp) refusal(_ context.Context, cause error) error {
	return &x402.RejectError{Reason: op.simulationFailed, Check: "the escrow refused the " + op.name + ": " + revertName(cause), Err: cause}
}

// transact sends data to the escrow from the relayer and waits for the
// receipt, with Settle's error contract: a *x402.RejectError when the
// escrow refuses it (refuse says why) or it reverted; CodeUnavailable
// wrapping remote.ErrNotSent when it was never sent; CodeUnavailable
// without it when its outcome is unknown. The OpReceipt carries the
// transaction (and gas used) whenever one was sent; the receipt is
// returned on success only.
func (s *Settler) transact(ctx context.Context, op escrowOp, log *slog.Logger, data []byte,
	refuse func(context.Context, error) error) (OpReceipt, *types.Receipt, error) {
	if s.key == nil {
		return OpReceipt{}, nil, s.noKey("send the " + op.name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.settleTimeout)
	defer cancel()
	to := channel.Escrow
	cctx, ccancel := s.call(ctx)
	gas, err := s.backend.EstimateGas(cctx, ethereum.CallMsg{From: s.relayer, To: &to, Data: data})
	ccancel()
	if err != nil {
		if isRevert(err) {
			err = refuse(ctx, err)
			log.Warn("the escrow refused the transaction", "err", err)
			return OpReceipt{}, nil, err
		}
		return OpReceipt{}, nil, s.opNotSent(op, "estimate its gas (eth_estimateGas)", err)
	}
	gas += gas * gasMarginPercent / 100
	tx, err := s.sendRetry(ctx, log, to, gas, data)
	if tx == nil {
		return OpReceipt{}, nil, s.opNotSent(op, "send it", err)
	}
	log = log.With("tx", tx.Hash().Hex(), "relayer_nonce", tx.Nonce())
	if err != nil {
		log.Warn("sending failed after the transaction may have reached the node; waiting for its receipt", "err", err)
	} else {
		log.Info("escrow transaction sent")
	}
	st := newSentTx(tx)
	receipt, err := s.waitReceipt(ctx, log, st)
	if err != nil {
		hash := st.tx.Hash().Hex()
		log.Warn("escrow transaction outcome unknown", "err", err, "latest_version", hash)
		return OpReceipt{Tx: hash}, nil, sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", err, fmt.Sprintf(
			"the chain RPC failed after the %s transaction %s was sent, so its outcome is unknown; look the transaction up",
			op.name, hash))
	}
	r := OpReceipt{Tx: receipt.TxHash.Hex(), GasUsed: receipt.GasUsed}
	if receipt.Status != types.ReceiptStatusSuccessful {
		log.Warn("escrow transaction reverted", "block", receipt.BlockNumber)
		return r, nil, x402.Reject(op.transactionFailed, "the %s transaction %s reverted", op.name, r.Tx)
	}
	log.Info("escrow transaction mined", "block", receipt.BlockNumber, "gas_used", receipt.GasUsed)
	return r, receipt, nil
}

// opNotSent is the CodeUnavailable error of an escrow transaction that
// failed before it could have reached the node.
func (s *Settler) opNotSent(op escrowOp, what string, err error) error {
	return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", fmt.Errorf("%w: %w", remote.ErrNotSent, s.timedOut(err)),
		fmt.Sprintf("the chain RPC failed to %s for the %s transaction; nothing was sent, so it may be sent again", what, op.name))
}

// unencodable is the error of an escrow transaction whose arguments cannot
// be encoded (a caller's bug: an amount out of range, no rows); nothing
// was sent.
func unencodable(op escrowOp, err error) error {
	return sandboxd.Wrap(sandboxd.CodeInternal, "payments.chain", fmt.Errorf("%w: %w", remote.ErrNotSent, err),
		"cannot encode the "+op.name+" transaction")
}

// noKey is the error of a sending method on a settler without a relayer
// key; nothing was sent.
func (s *Settler) noKey(what string) error {
	return sandboxd.Wrap(sandboxd.CodeInternal, "payments.chain", fmt.Errorf("%w: %w", remote.ErrNotSent, ErrNoRelayerKey),
		"cannot "+what+": a relayer key is needed to send transactions, and this settler has none")
}
