package x402

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// transferTypes are the EIP-712 types of an EIP-3009 transfer authorization.
var transferTypes = apitypes.Types{
	"EIP712Domain": {
		{Name: "name", Type: "string"},
		{Name: "version", Type: "string"},
		{Name: "chainId", Type: "uint256"},
		{Name: "verifyingContract", Type: "address"},
	},
	"TransferWithAuthorization": {
		{Name: "from", Type: "address"},
		{Name: "to", Type: "address"},
		{Name: "value", Type: "uint256"},
		{Name: "validAfter", Type: "uint256"},
		{Name: "validBefore", Type: "uint256"},
		{Name: "nonce", Type: "bytes32"},
	},
}

// transferDigest returns the EIP-712 hash a payer signs for t: the domain is
// the asset's (name and version from req.Extra, the chain id of req.Network,
// the asset as verifying contract).
func transferDigest(req Requirements, t *Transfer) (common.Hash, error) {
	chainID, err := ChainID(req.Network)
	if err != nil {
		return common.Hash{}, err
	}
	if !common.IsHexAddress(req.Asset) {
		return common.Hash{}, fmt.Errorf("asset %q is not an address", req.Asset)
	}
	td := apitypes.TypedData{
		Types:       transferTypes,
		PrimaryType: "TransferWithAuthorization",
		Domain: apitypes.TypedDataDomain{
			Name:              req.Extra.Name,
			Version:           req.Extra.Version,
			ChainId:           (*math.HexOrDecimal256)(chainID),
			VerifyingContract: common.HexToAddress(req.Asset).Hex(),
		},
		Message: apitypes.TypedDataMessage{
			"from":        t.From.Hex(),
			"to":          t.To.Hex(),
			"value":       t.Value,
			"validAfter":  t.ValidAfter,
			"validBefore": t.ValidBefore,
			"nonce":       hexutil.Encode(t.Nonce[:]),
		},
	}
	hash, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return common.Hash{}, err
	}
	return common.BytesToHash(hash), nil
}

// signTransfer signs t for req with key and returns the 65-byte signature
// r || s || v with v of 27 or 28, the form wallets produce.
func signTransfer(key *ecdsa.PrivateKey, req Requirements, t *Transfer) ([]byte, error) {
	digest, err := transferDigest(req, t)
	if err != nil {
		return nil, err
	}
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		return nil, err
	}
	sig[64] += 27
	return sig, nil
}

// ErrSigLength, errSigV and errHighS say why a signature is malformed.
var (
	ErrSigLength = errors.New("signature is not 65 bytes")
	errSigV      = errors.New("signature's v is not 27, 28, 0 or 1")
	errHighS     = errors.New("signature's s is in the upper half of the curve order (malleable) or r/s is out of range")
)

// recoverSigner checks the form of a 65-byte signature over digest and
// returns the address it recovers to, and the signature with v normalized to
// 27 or 28. It accepts v of 27/28 or 0/1 and rejects high-s signatures.
func recoverSigner(digest common.Hash, sig []byte) (common.Address, []byte, error) {
	if len(sig) != 65 {
		return common.Address{}, nil, ErrSigLength
	}
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return common.Address{}, nil, errSigV
	}
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:64])
	if !crypto.ValidateSignatureValues(v, r, s, true) {
		return common.Address{}, nil, errHighS
	}
	rec := make([]byte, 65)
	copy(rec, sig)
	rec[64] = v
	pub, err := crypto.SigToPub(digest[:], rec)
	if err != nil {
		return common.Address{}, nil, err
	}
	rec[64] = v + 27
	return crypto.PubkeyToAddress(*pub), rec, nil
}
