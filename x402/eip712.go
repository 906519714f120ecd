package x402

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// domainType is the EIP-712 domain type of the tokens and of the
// batch-settlement escrow: name, version, chain id, verifying contract.
var domainType = []apitypes.Type{
	{Name: "name", Type: "string"},
	{Name: "version", Type: "string"},
	{Name: "chainId", Type: "uint256"},
	{Name: "verifyingContract", Type: "address"},
}

// TypedDataTypes reads EIP-712 type strings in their canonical encodeType
// form, "Name(type field,...)", into go-ethereum's typed-data types, with
// the domain type (name, version, chainId, verifyingContract) added: the
// type hashes then are the keccak256 of the strings as written, which a
// reader can compare with a contract's. defs are the caller's own
// constants.
func TypedDataTypes(defs ...string) apitypes.Types {
	types := apitypes.Types{"EIP712Domain": domainType}
	for _, def := range defs {
		name, fields, _ := strings.Cut(strings.TrimSuffix(def, ")"), "(")
		for _, f := range strings.Split(fields, ",") {
			typ, field, _ := strings.Cut(f, " ")
			types[name] = append(types[name], apitypes.Type{Name: field, Type: typ})
		}
	}
	return types
}

// authorizationFields are the fields of both EIP-3009 authorizations, the
// transfer ("exact") and the receive (a channel's deposit, which only the
// payee may submit).
const authorizationFields = "(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"

// The EIP-3009 primary types.
const (
	transferPrimary = "TransferWithAuthorization"
	receivePrimary  = "ReceiveWithAuthorization"
)

// authorizationTypes are the typed-data types of each EIP-3009 primary type.
var authorizationTypes = map[string]apitypes.Types{
	transferPrimary: TypedDataTypes(transferPrimary + authorizationFields),
	receivePrimary:  TypedDataTypes(receivePrimary + authorizationFields),
}

// transferDigest returns the EIP-712 hash a payer signs for t: the domain is
// the asset's (name and version from req.Extra, the chain id of req.Network,
// the asset as verifying contract).
func transferDigest(req Requirements, t *Transfer) (common.Hash, error) {
	return authorizationDigest(transferPrimary, req, t)
}

// ReceiveDigest returns the EIP-712 hash of t as an EIP-3009
// ReceiveWithAuthorization under the asset's domain of req, the
// authorization of a batch-settlement deposit (t.To is the deposit
// collector, which alone may submit it).
func ReceiveDigest(req Requirements, t *Transfer) (common.Hash, error) {
	return authorizationDigest(receivePrimary, req, t)
}

// authorizationDigest returns the EIP-712 hash of t as the EIP-3009
// authorization primary under the asset's domain of req.
func authorizationDigest(primary string, req Requirements, t *Transfer) (common.Hash, error) {
	chainID, err := ChainID(req.Network)
	if err != nil {
		return common.Hash{}, err
	}
	if !common.IsHexAddress(req.Asset) {
		return common.Hash{}, fmt.Errorf("asset %q is not an address", req.Asset)
	}
	td := apitypes.TypedData{
		Types:       authorizationTypes[primary],
		PrimaryType: primary,
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
	return SignDigest(key, digest)
}

// SignDigest signs an EIP-712 digest with key and returns the 65-byte
// signature r || s || v with v of 27 or 28, the form wallets produce and
// the escrow and tokens verify.
func SignDigest(key *ecdsa.PrivateKey, digest common.Hash) ([]byte, error) {
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

// RecoverSigner checks the form of a 65-byte signature over digest and
// returns the address it recovers to, and the signature with v normalized to
// 27 or 28. It accepts v of 27/28 or 0/1 and rejects high-s signatures.
func RecoverSigner(digest common.Hash, sig []byte) (common.Address, []byte, error) {
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
