package chain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"sandboxd/payments/internal/remote"
)

// send prices, signs and sends one transaction to `to`. The relayer nonce is taken
// and advanced under a lock so concurrent settlements never share one; after
// a failed send it is fetched again from the pending state, and when the
// node's pending nonce falls behind it (the node dropped a transaction it
// had accepted) it is taken from the node again, so one lost transaction
// never stalls every later settlement.
//
// On a failed send it returns the signed transaction too when it may have
// reached the node anyway (the call timed out or the answer was garbled),
// and nil when it cannot have (the node refused it, or the connection was
// refused).
func (s *Settler) send(ctx context.Context, to common.Address, gas uint64, data []byte) (*types.Transaction, error) {
	inner, err := s.fees(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cctx, cancel := s.call(ctx)
	pending, err := s.backend.PendingNonceAt(cctx, s.relayer)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("relayer nonce: %w", err)
	}
	switch {
	case !s.known:
		s.next, s.known = pending, true
	case pending < s.next:
		s.resyncGap(ctx, pending)
	}
	switch tx := inner.(type) {
	case *types.DynamicFeeTx:
		tx.ChainID, tx.Nonce, tx.Gas, tx.To, tx.Data = s.chainID, s.next, gas, &to, data
	case *types.LegacyTx:
		tx.Nonce, tx.Gas, tx.To, tx.Data = s.next, gas, &to, data
	}
	signed, err := types.SignNewTx(s.key, s.signer, inner)
	if err != nil {
		return nil, err
	}
	cctx, cancel = s.call(ctx)
	err = s.backend.SendTransaction(cctx, signed)
	cancel()
	if err != nil {
		s.known = false
		if mayHaveArrived(err) {
			return signed, err
		}
		return nil, err
	}
	s.next++
	return signed, nil
}

// gapConfirm is how long the node's pending nonce must stay behind the
// relayer's before the gap is taken as real: a load-balanced RPC may answer
// from a replica that has not yet seen the last transaction.
const gapConfirm = 2 * time.Second

// resyncGap handles a node whose pending nonce is behind the relayer's next
// one, with s.mu held. If it stays behind for gapConfirm, the node no longer
// has transactions it accepted (dropped from its pool, lost in a restart):
// every later nonce would wait behind the gap forever, so the next nonce is
// taken from the node and the next settlement fills the gap.
func (s *Settler) resyncGap(ctx context.Context, pending uint64) {
	deadline := time.Now().Add(gapConfirm)
	for pending < s.next && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(gapConfirm / 8):
		}
		cctx, cancel := s.call(ctx)
		n, err := s.backend.PendingNonceAt(cctx, s.relayer)
		cancel()
		if err == nil && n > pending {
			pending = n
		}
	}
	if pending >= s.next {
		return
	}
	s.log.Warn("relayer nonce gap: the node lost earlier settlement transactions; resyncing the nonce",
		"relayer_next", s.next, "node_pending", pending, "lost", s.next-pending)
	s.next = pending
}

// sendRetry is send, tried once more with a fresh relayer nonce when the
// node refused the first for its nonce (another sender used the relayer
// account). A retry cannot collect twice: it is never made when the first
// may have arrived (and the token accepts each authorization once anyway).
func (s *Settler) sendRetry(ctx context.Context, log *slog.Logger, to common.Address, gas uint64, data []byte) (*types.Transaction, error) {
	tx, err := s.send(ctx, to, gas, data)
	if err != nil && tx == nil && strings.Contains(strings.ToLower(err.Error()), "nonce") {
		log.Warn("relayer nonce was stale; retrying with the pending nonce", "err", err)
		tx, err = s.send(ctx, to, gas, data)
	}
	return tx, err
}

// fees returns an unsigned transaction body carrying the fee fields: an
// EIP-1559 one (tip plus twice the base fee) where the chain has a base
// fee, else a legacy one.
func (s *Settler) fees(ctx context.Context) (types.TxData, error) {
	cctx, cancel := s.call(ctx)
	head, err := s.backend.HeaderByNumber(cctx, nil)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("latest header: %w", err)
	}
	cctx, cancel = s.call(ctx)
	defer cancel()
	if head.BaseFee == nil {
		price, err := s.backend.SuggestGasPrice(cctx)
		if err != nil {
			return nil, fmt.Errorf("gas price: %w", err)
		}
		return &types.LegacyTx{GasPrice: price}, nil
	}
	tip, err := s.backend.SuggestGasTipCap(cctx)
	if err != nil {
		return nil, fmt.Errorf("gas tip: %w", err)
	}
	feeCap := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2)))
	return &types.DynamicFeeTx{GasTipCap: tip, GasFeeCap: feeCap}, nil
}

// waitReceipt polls for the receipt of st's transaction (any version of
// it) until ctx ends, each poll bounded by the per-call timeout, and
// replaces it when it is stuck (see maybeBump). A failed poll is tried
// again at the next tick: a flaky RPC must not turn a landed settlement
// into a lost answer. When no receipt comes, the error carries the last
// failure.
func (s *Settler) waitReceipt(ctx context.Context, log *slog.Logger, st *sentTx) (*types.Receipt, error) {
	start := time.Now()
	var last error
	tick := time.NewTicker(s.receiptPoll)
	defer tick.Stop()
	for {
		for _, hash := range st.hashes {
			cctx, cancel := s.call(ctx)
			r, err := s.backend.TransactionReceipt(cctx, hash)
			cancel()
			switch {
			case err == nil:
				return r, nil
			case !errors.Is(err, ethereum.NotFound):
				last = s.timedOut(err)
			}
		}
		s.maybeBump(ctx, log, st)
		select {
		case <-ctx.Done():
			waited := time.Since(start).Round(time.Millisecond)
			if last != nil {
				return nil, fmt.Errorf("no receipt after %s; the last call failed: %w", waited, last)
			}
			return nil, fmt.Errorf("not mined after %s: %w", waited, ctx.Err())
		case <-tick.C:
		}
	}
}

// mayHaveArrived reports whether a failed send may still have delivered
// the transaction: true unless the node answered with a refusal of its own
// (other than "already known", which means it has it) or the connection was
// never made.
func mayHaveArrived(err error) bool {
	if isNodeError(err) {
		return strings.Contains(strings.ToLower(err.Error()), "already known")
	}
	return !remote.DialFailed(err)
}

// isNodeError reports whether the node answered with a JSON-RPC error (a
// refusal of its own) rather than not answering usably at all.
func isNodeError(err error) bool {
	var re rpc.Error
	var de rpc.DataError
	return errors.As(err, &re) || errors.As(err, &de)
}
