package chain

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/x402/channel"
)

// ChannelState is one channel's state in the escrow.
type ChannelState struct {
	// ID is the channel's id.
	ID common.Hash
	// Balance and TotalClaimed are channels(id): the gross deposits (claims
	// never lower it) and what the receiver claimed in all.
	Balance, TotalClaimed *big.Int
	// WithdrawAmount is pendingWithdrawals(id).amount, 0 when none.
	WithdrawAmount *big.Int
	// WithdrawInitiatedAt is pendingWithdrawals(id).initiatedAt, in Unix
	// seconds, 0 when none.
	WithdrawInitiatedAt uint64
	// RefundNonce is refundNonce(id), the nonce the next refund signature
	// names.
	RefundNonce *big.Int
}

// maxReadBatch is how many channels one eth_call reads (three calls each).
const maxReadBatch = 100

// ReadChannels reads the state of the channels ids, in order: per batch of
// up to 100 ids, one eth_call of Multicall3's tryAggregate(false, ...) of
// channels, pendingWithdrawals and refundNonce. A channel never funded
// reads as zeros. Every failure is a CodeUnavailable *sandboxd.Error: the
// RPC failed, or the answer is not the escrow's (a sub-call failed, or
// Multicall3 or the escrow has no code on this chain).
func (s *Settler) ReadChannels(ctx context.Context, ids []common.Hash) ([]ChannelState, error) {
	out := make([]ChannelState, 0, len(ids))
	for start := 0; start < len(ids); start += maxReadBatch {
		batch, err := s.readBatch(ctx, ids[start:min(start+maxReadBatch, len(ids))])
		if err != nil {
			return nil, s.readFailed("the channels' state", err)
		}
		out = append(out, batch...)
	}
	return out, nil
}

// readBatch is ReadChannels of one batch.
func (s *Settler) readBatch(ctx context.Context, ids []common.Hash) ([]ChannelState, error) {
	calls := make([]mcCall, 0, 3*len(ids))
	for _, id := range ids {
		for _, view := range []string{"channels", "pendingWithdrawals", "refundNonce"} {
			data, err := escrowABI.Pack(view, id)
			if err != nil {
				return nil, err
			}
			calls = append(calls, mcCall{Target: channel.Escrow, CallData: data})
		}
	}
	rets, err := s.tryAggregate(ctx, calls)
	if err != nil {
		return nil, err
	}
	out := make([]ChannelState, len(ids))
	for i, id := range ids {
		ch, err1 := unpackBigs("channels", rets[3*i], 2)
		wd, err2 := unpackBigs("pendingWithdrawals", rets[3*i+1], 2)
		rn, err3 := unpackBigs("refundNonce", rets[3*i+2], 1)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("channel %s: %w", id.Hex(), err)
		}
		out[i] = ChannelState{ID: id, Balance: ch[0], TotalClaimed: ch[1], WithdrawAmount: wd[0],
			WithdrawInitiatedAt: wd[1].Uint64(), RefundNonce: rn[0]}
	}
	return out, nil
}

// unpackBigs unpacks the n integer outputs of the escrow's view method.
func unpackBigs(method string, ret []byte, n int) ([]*big.Int, error) {
	vals, err := escrowABI.Unpack(method, ret)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errGarbled, method, err)
	}
	out := make([]*big.Int, 0, n)
	for _, v := range vals {
		if b, ok := v.(*big.Int); ok {
			out = append(out, b)
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: %s returned %d integers, want %d", errGarbled, method, len(out), n)
	}
	return out, nil
}

// ReceiverTotals reads the escrow's receivers(receiver, token): what was
// claimed for receiver in token in all, and how much of it was swept to it
// (a sweep pays claimed − settled). Errors are CodeUnavailable.
func (s *Settler) ReceiverTotals(ctx context.Context, receiver, token common.Address) (claimed, settled *big.Int, err error) {
	data, err := escrowABI.Pack("receivers", receiver, token)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := s.call(ctx)
	to := channel.Escrow
	out, err := s.backend.CallContract(cctx, ethereum.CallMsg{To: &to, Data: data}, nil)
	cancel()
	if err != nil {
		return nil, nil, s.readFailed("the receiver's totals", rpcError{s.timedOut(err)})
	}
	vals, err := unpackBigs("receivers", out, 2)
	if err != nil {
		return nil, nil, s.readFailed("the receiver's totals", err)
	}
	return vals[0], vals[1], nil
}

// TokenBalance reads the asset's balanceOf(who). Errors are
// CodeUnavailable.
func (s *Settler) TokenBalance(ctx context.Context, who common.Address) (*big.Int, error) {
	bal, err := s.balanceOf(ctx, s.asset, who)
	if err != nil {
		return nil, s.readFailed("the token balance", rpcError{s.timedOut(err)})
	}
	return bal, nil
}

// readFailed is the CodeUnavailable error of a read of what. Its message
// is shown to callers, so it names no URL; the cause has the details.
func (s *Settler) readFailed(what string, err error) error {
	if errors.As(err, new(rpcError)) {
		return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", err,
			"the chain RPC failed to read "+what+" (eth_call)")
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, "payments.chain", err,
		"the chain's answer for "+what+" is not the escrow's: are the escrow and Multicall3 at their canonical addresses on this chain?")
}

// EscrowDeployed reports whether the escrow, its ERC-3009 deposit
// collector and Multicall3 have code on this chain: channels are offered
// only where they do. A failed read is CodeUnavailable.
func (s *Settler) EscrowDeployed(ctx context.Context) (bool, error) {
	for _, addr := range []common.Address{channel.Escrow, channel.Collector, multicall3} {
		cctx, cancel := s.call(ctx)
		code, err := s.backend.CodeAt(cctx, addr, nil)
		cancel()
		if err != nil {
			return false, s.readFailed("the escrow's code", err)
		}
		if len(code) == 0 {
			return false, nil
		}
	}
	return true, nil
}
