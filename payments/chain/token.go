package chain

import (
	"context"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402"
)

// eip3009ABI is the part of an EIP-3009 token the settler calls.
const eip3009ABI = `[
{"type":"function","name":"transferWithAuthorization","stateMutability":"nonpayable","outputs":[],"inputs":[
 {"name":"from","type":"address"},{"name":"to","type":"address"},{"name":"value","type":"uint256"},
 {"name":"validAfter","type":"uint256"},{"name":"validBefore","type":"uint256"},{"name":"nonce","type":"bytes32"},
 {"name":"v","type":"uint8"},{"name":"r","type":"bytes32"},{"name":"s","type":"bytes32"}]},
{"type":"function","name":"authorizationState","stateMutability":"view","outputs":[{"name":"","type":"bool"}],"inputs":[
 {"name":"authorizer","type":"address"},{"name":"nonce","type":"bytes32"}]},
{"type":"function","name":"balanceOf","stateMutability":"view","outputs":[{"name":"","type":"uint256"}],"inputs":[
 {"name":"account","type":"address"}]}
]`

// tokenABI is eip3009ABI parsed.
var tokenABI = func() abi.ABI {
	a, err := abi.JSON(strings.NewReader(eip3009ABI))
	if err != nil {
		panic(err)
	}
	return a
}()

// packTransfer encodes transferWithAuthorization for t, splitting its
// signature into v, r, s.
func packTransfer(t *x402.Transfer) ([]byte, error) {
	if len(t.Signature) != 65 {
		return nil, x402.ErrSigLength
	}
	var r, sv [32]byte
	copy(r[:], t.Signature[:32])
	copy(sv[:], t.Signature[32:64])
	return tokenABI.Pack("transferWithAuthorization", t.From, t.To, t.Value, t.ValidAfter, t.ValidBefore,
		t.Nonce, t.Signature[64], r, sv)
}

// revertReasons map the revert messages of USDC (FiatToken v2) to x402
// codes, for refusals the state queries do not explain.
var revertReasons = []struct{ text, reason, check string }{
	{"authorization is expired", x402.ReasonValidBefore, "the authorization is expired at the chain's time"},
	{"authorization is not yet valid", x402.ReasonValidAfter, "the authorization is not yet valid at the chain's time"},
	{"invalid signature", x402.ReasonSignature, "the signature is invalid for this token"},
	{"used or canceled", x402.ReasonNonceUsed, "the authorization was used or canceled"},
	{"exceeds balance", x402.ReasonInsufficientFunds, "the payer's balance is too low"},
}

// authorizationState reads token's authorizationState(from, nonce).
func (s *Settler) authorizationState(ctx context.Context, token, from common.Address, nonce [32]byte, pending bool) (bool, error) {
	data, err := tokenABI.Pack("authorizationState", from, nonce)
	if err != nil {
		return false, err
	}
	msg := ethereum.CallMsg{To: &token, Data: data}
	ctx, cancel := s.call(ctx)
	defer cancel()
	var out []byte
	if pc, ok := s.backend.(pendingCaller); ok && pending {
		out, err = pc.PendingCallContract(ctx, msg)
	} else {
		out, err = s.backend.CallContract(ctx, msg, nil)
	}
	if err != nil {
		return false, err
	}
	res, err := tokenABI.Unpack("authorizationState", out)
	if err != nil {
		return false, err
	}
	return res[0].(bool), nil
}

// balanceOf reads token's balanceOf(who).
func (s *Settler) balanceOf(ctx context.Context, token, who common.Address) (*big.Int, error) {
	data, err := tokenABI.Pack("balanceOf", who)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.call(ctx)
	defer cancel()
	out, err := s.backend.CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, nil)
	if err != nil {
		return nil, err
	}
	res, err := tokenABI.Unpack("balanceOf", out)
	if err != nil {
		return nil, err
	}
	return res[0].(*big.Int), nil
}
