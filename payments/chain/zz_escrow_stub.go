package chain

// TEMPORARY: the escrow types piece 3 (branch escrow) defines; removed at its merge.

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402/channel"
)

type ChannelState struct {
	ID                    common.Hash
	Balance, TotalClaimed *big.Int
	WithdrawAmount        *big.Int
	WithdrawInitiatedAt   uint64
	RefundNonce           *big.Int
}

type VoucherClaim struct {
	Config       channel.Config
	MaxClaimable *big.Int
	Signature    []byte
	TotalClaimed *big.Int
}

type OpReceipt struct {
	Tx         string
	GasUsed    uint64
	Amount     *big.Int
	NewBalance *big.Int
	Claimed    map[common.Hash]*big.Int
}
