package chain

import (
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"

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
