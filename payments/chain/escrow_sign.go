package chain

import (
	"crypto/ecdsa"
	"math/big"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// ClaimSignature signs rows, in order, as the EIP-712 ClaimBatch the
// escrow's claimWithSignature checks on chainID (channel.ClaimBatchDigest):
// key is the rows' one receiver authorizer (an operator's authorizer key).
func ClaimSignature(key *ecdsa.PrivateKey, rows []VoucherClaim, chainID *big.Int) ([]byte, error) {
	entries := make([]channel.ClaimEntry, len(rows))
	for i, r := range rows {
		id, err := channel.ID(r.Config, chainID)
		if err != nil {
			return nil, err
		}
		entries[i] = channel.ClaimEntry{ChannelID: id, MaxClaimableAmount: r.MaxClaimable, TotalClaimed: r.TotalClaimed}
	}
	digest, err := channel.ClaimBatchDigest(entries, chainID)
	if err != nil {
		return nil, err
	}
	return x402.SignDigest(key, digest)
}

// RefundSignature signs the EIP-712 Refund of amount from channel id at
// refund nonce nonce, which the escrow's refundWithSignature checks on
// chainID (channel.RefundDigest): key is the channel's receiver
// authorizer.
func RefundSignature(key *ecdsa.PrivateKey, id common.Hash, nonce, amount, chainID *big.Int) ([]byte, error) {
	digest, err := channel.RefundDigest(id, nonce, amount, chainID)
	if err != nil {
		return nil, err
	}
	return x402.SignDigest(key, digest)
}
