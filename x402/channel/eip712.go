package channel

import (
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"sandboxd/x402"
)

// The escrow's EIP-712 domain name and version.
const (
	domainName    = "x402 Batch Settlement"
	domainVersion = "1"
)

// escrowTypeStrings are the EIP-712 types the escrow hashes and verifies,
// in their canonical encodeType form (the x402BatchSettlement contract's
// type hashes are the keccak256 of these).
var escrowTypeStrings = []string{
	"ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)",
	"Voucher(bytes32 channelId,uint128 maxClaimableAmount)",
	"Refund(bytes32 channelId,uint256 nonce,uint128 amount)",
	"ClaimBatch(ClaimEntry[] claims)",
	"ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)",
}

// escrowTypes are escrowTypeStrings as go-ethereum's typed-data types.
var escrowTypes = x402.TypedDataTypes(escrowTypeStrings...)

// escrowHash returns the EIP-712 hash of message as primary under the
// escrow's domain on chainID. It fails only for a message out of its
// types' range (an amount over uint128), which Decode never yields.
func escrowHash(primary string, message apitypes.TypedDataMessage, chainID *big.Int) (common.Hash, error) {
	td := apitypes.TypedData{
		Types:       escrowTypes,
		PrimaryType: primary,
		Domain: apitypes.TypedDataDomain{
			Name:              domainName,
			Version:           domainVersion,
			ChainId:           (*math.HexOrDecimal256)(chainID),
			VerifyingContract: Escrow.Hex(),
		},
		Message: message,
	}
	hash, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return common.Hash{}, fmt.Errorf("channel: hashing %s: %w", primary, err)
	}
	return common.BytesToHash(hash), nil
}

// ID returns the channel id of c on chainID: the EIP-712 hash of the
// ChannelConfig under the escrow's domain (the escrow's getChannelId).
func ID(c Config, chainID *big.Int) (common.Hash, error) {
	return escrowHash("ChannelConfig", apitypes.TypedDataMessage{
		"payer":              c.Payer.Hex(),
		"payerAuthorizer":    c.PayerAuthorizer.Hex(),
		"receiver":           c.Receiver.Hex(),
		"receiverAuthorizer": c.ReceiverAuthorizer.Hex(),
		"token":              c.Token.Hex(),
		"withdrawDelay":      new(big.Int).SetUint64(c.WithdrawDelay),
		"salt":               c.Salt.Hex(),
	}, chainID)
}

// VoucherDigest returns the hash the payer authorizer signs for a voucher
// of maxClaimable on channel id (the escrow's getVoucherDigest).
func VoucherDigest(id common.Hash, maxClaimable, chainID *big.Int) (common.Hash, error) {
	return escrowHash("Voucher", apitypes.TypedDataMessage{
		"channelId": id.Hex(), "maxClaimableAmount": maxClaimable}, chainID)
}

// RefundDigest returns the hash the receiver authorizer signs to refund
// amount from channel id at the escrow's refund nonce (the escrow's
// getRefundDigest).
func RefundDigest(id common.Hash, nonce, amount, chainID *big.Int) (common.Hash, error) {
	return escrowHash("Refund", apitypes.TypedDataMessage{
		"channelId": id.Hex(), "nonce": nonce, "amount": amount}, chainID)
}

// ClaimEntry is one row of a claim batch: the receiver claims up to
// TotalClaimed in all under a voucher of MaxClaimableAmount.
type ClaimEntry struct {
	// ChannelID is the channel claimed from.
	ChannelID common.Hash
	// MaxClaimableAmount is the voucher's running total.
	MaxClaimableAmount *big.Int
	// TotalClaimed is what the receiver will have claimed in all.
	TotalClaimed *big.Int
}

// ClaimBatchDigest returns the hash the receiver authorizer signs for
// claimWithSignature of entries, in order.
func ClaimBatchDigest(entries []ClaimEntry, chainID *big.Int) (common.Hash, error) {
	claims := make([]any, len(entries))
	for i, e := range entries {
		claims[i] = map[string]any{
			"channelId": e.ChannelID.Hex(), "maxClaimableAmount": e.MaxClaimableAmount, "totalClaimed": e.TotalClaimed}
	}
	return escrowHash("ClaimBatch", apitypes.TypedDataMessage{"claims": claims}, chainID)
}

// DepositNonce returns the ERC-3009 nonce of a deposit to channel id:
// keccak256(abi.encode(bytes32 id, uint256 salt)), salt being the
// authorization's own salt, which binds the authorization to the channel.
func DepositNonce(id common.Hash, salt common.Hash) common.Hash {
	return crypto.Keccak256Hash(id[:], salt[:])
}

// collectorArgs is the ABI layout of the collector's data.
var collectorArgs = abi.Arguments{
	{Type: mustType("uint256")}, {Type: mustType("uint256")}, {Type: mustType("uint256")}, {Type: mustType("bytes")},
}

// mustType returns the ABI type named t, one of a fixed few.
func mustType(t string) abi.Type {
	typ, err := abi.NewType(t, "", nil)
	if err != nil {
		panic(err)
	}
	return typ
}

// CollectorData returns the deposit collector's data for d:
// abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes
// signature), what deposit() passes on to the collector.
func CollectorData(d *Deposit) ([]byte, error) {
	return collectorArgs.Pack(d.ValidAfter, d.ValidBefore, new(big.Int).SetBytes(d.Salt[:]), d.Signature)
}

// Authorization returns d as the EIP-3009 ReceiveWithAuthorization it
// carries for channel id: from the payer to Collector, the deposit's
// amount, nonce DepositNonce(id, d.Salt).
func (d *Deposit) Authorization(payer common.Address, id common.Hash) *x402.Transfer {
	return &x402.Transfer{
		From: payer, To: Collector, Value: d.Amount, ValidAfter: d.ValidAfter, ValidBefore: d.ValidBefore,
		Nonce: DepositNonce(id, d.Salt), Signature: d.Signature,
	}
}

// ReceiveDigest returns the hash the payer signs for deposit d to channel
// id, under the asset's EIP-712 domain of req (name, version, chain,
// asset).
func ReceiveDigest(req x402.Requirements, d *Deposit, payer common.Address, id common.Hash) (common.Hash, error) {
	return x402.ReceiveDigest(req, d.Authorization(payer, id))
}
